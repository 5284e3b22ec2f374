"""The planned size of a sweep, before anything is stored or enqueued. Reads and writes nothing in
the database: agentcore plays the crash points it needs (see sweeps.limits.PLAN_BUDGET): at depth 2
each first point's restart, at depth 3 each second point's restart as well. Refused here, before
launching: a depth-3 sweep too big to store (sweeps.limits.MAX_DEPTH3_SCENARIOS), and a sweep whose
states would carry too many bytes of its job (its scenarios times agentcore.jobs.carried_bytes:
sweeps.limits.MAX_SWEEP_JOB_BYTES), at any depth.

Rules:
- The planned size and a launch's planning know their work before they play (sweeps.cost): each
  configuration's run counted once, times the plays they will make of it. Past PLAN_STEPS (a
  launch: LAUNCH_STEPS) they are refused with the figure and the bound, and their plays stop there
  if the count was wrong."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import agentcore as agentsweep
from agentcore import Job, carried_bytes
from sweeps import cost
from sweeps.configs import (
    ChunkPlan,
    Conditions,
    clean_configs,
    clean_settings,
    conditions_from,
    plan_chunks,
    truthful_configs,
)
from sweeps.errors import PlanTooBig
from sweeps.limits import (
    MAX_DEPTH3_SCENARIOS,
    MAX_SWEEP_JOB_BYTES,
    PLAN_BUDGET,
    PLAN_MIN_SAMPLES,
    PLAN_STEP_BYTES,
    PLAN_STEPS,
)
from sweeps.models import Sweep


@dataclass(frozen=True, slots=True)
class Plan:
    """A sweep's planned size. `scenarios` is exact when `exact`, else an estimate."""

    chunks: int
    scenarios: int
    exact: bool
    configs: tuple[tuple[str, int, int], ...]  # (name, chunks, scenarios) per configuration
    job_bytes: int = 0  # what each scenario's states carry of the job (agentcore.jobs.carried_bytes)

    @property
    def job_total(self) -> int:
        """The bytes of job the sweep's states carry in all: scenarios x job_bytes."""
        return self.scenarios * self.job_bytes

    @property
    def shown(self) -> int:
        """The scenarios as a page says them: an estimate to 3 significant figures (more would claim
        a precision it has not)."""
        return self.scenarios if self.exact else int(float(f"{self.scenarios:.3g}"))


def _restart_points(cfg: agentsweep.Config, first: int, work: agentsweep.WorkBudget) -> int:
    """How many points the restart reaches after a crash at `first`: the chunk's twice scenarios."""
    played = agentsweep.play(cfg, (first,), agentsweep.Options(points=True, budget=work))
    restart = played.processes[1].points if len(played.processes) > 1 else None
    return len(restart or ())


EVERY = 2**31  # samples: every point


def _spread(n: int, samples: int) -> list[int]:
    """`samples` evenly spaced numbers of 1..n (every one when samples >= n)."""
    if samples >= n:
        return list(range(1, n + 1))
    return sorted({round(1 + i * (n - 1) / (samples - 1)) for i in range(samples)})


def _total(n: int, samples: int, count: Callable[[int], tuple[int, ...]]) -> tuple[int, ...]:
    """count(1) + ... + count(n), each a tuple of counts, from `samples` of them played (every one
    when samples >= n) and straight lines between them."""
    at = _spread(n, samples)
    if not at:
        return ()
    got = {f: count(f) for f in at}
    totals = [0.0] * len(got[at[0]])
    for a, b in itertools.pairwise(at):
        for f in range(a, b):
            for i, (ya, yb) in enumerate(zip(got[a], got[b], strict=True)):
                totals[i] += ya + (yb - ya) * (f - a) / (b - a)
    return tuple(round(t + last) for t, last in zip(totals, got[at[-1]], strict=True))


def _thrice_points(cfg: agentsweep.Config, first: int, samples: int, work: agentsweep.WorkBudget) -> tuple[int, int]:
    """After a crash at `first`: the restart's points (the chunk's twice scenarios) and the points
    the restart after a second crash reaches, summed over them (its thrice scenarios), from
    `samples` of the second points, as agentcore.harness.chunks.run_chunk plays them (from the state noted
    at the second point, or in full where the tracker crashes there)."""
    once = agentsweep.play(cfg, (first,), agentsweep.Options(points=True, notes=True, budget=work))
    if once.restarts is None:
        return 0, 0
    restart = once.processes[1].points or []
    deeper = agentsweep.Options(points=True, notes=True, budget=work)

    def third(q: int) -> tuple[int]:
        twice = agentsweep.play_from_note(cfg, (first, q), restart[q - 1][0], once.restarts[q - 1], deeper, None)
        return (len(twice.processes[-1].points or ()) if twice.restarts is not None else 0,)

    thrice = _total(len(restart), samples, third)
    return len(restart), thrice[0] if thrice else 0


def _samples(depth: int, budget: int, configs: int, n: int) -> int:
    """Points of each level to play per configuration of n points when counting every one is over
    the budget: at depth 2 each first point costs about n steps, at depth 3 each (first, second) pair."""
    share = budget // (configs * max(n, 1))
    return max(PLAN_MIN_SAMPLES, share if depth == 2 else math.isqrt(share))


def _sampled(depth: int, budget: int, npoints: list[int]) -> tuple[bool, list[int]]:
    """Whether the count samples, and the points of each level it plays per configuration."""
    # Counting exactly plays about n^depth steps for a configuration of n points (n^2: each first
    # point's restart; n^3: each second point's restart too).
    sampled = depth > 1 and sum(n**depth for n in npoints) > budget
    return sampled, [_samples(depth, budget, len(npoints), n) if sampled else EVERY for n in npoints]


def _plays(depth: int, budget: int, npoints: list[int]) -> list[int]:
    """The plays of each configuration's run the count makes beyond its points and its truth: a
    restart per first point counted, and at depth 3 one per second point counted of each (a
    restart has about as many points as the run)."""
    _, samples = _sampled(depth, budget, npoints)
    levels = [len(_spread(n, k)) for n, k in zip(npoints, samples, strict=True)]
    if depth == 2:
        return levels
    if depth == 3:
        return [k * (1 + k) for k in levels]
    return [0 for _ in npoints]


def _cost(what: str, cfgs: list[agentsweep.Config], depth: int, budget: int, bound: int) -> tuple[int, int]:
    """The steps of planning `cfgs` at `depth` (sweeps.cost), refused past `bound`: each run played
    for its points and for its truth, and as many times again as the count plays its restarts. The
    points are the count's (sweeps.cost: a power cut without fsync offers more). With them, the steps
    of one play of each run (what a launch's planning of its chunks costs is twice that)."""
    costs = cost.play_costs(what, [(cfg, 2) for cfg in cfgs], bound)
    plays = _plays(depth, budget, [n for _, n in costs])
    total = sum(steps * (2 + extra) for (steps, _), extra in zip(costs, plays, strict=True))
    if total > bound:
        raise cost.refusal(what, total, bound)
    return total, sum(steps for steps, _ in costs)


@dataclass(frozen=True, slots=True)
class _Asked:
    """What a planned size is cached by: the settings as checked. The job parsed from them rides along
    (it is the job_source's: comparing the text says as much; the name it was parsed under only
    changes its messages, and it parsed)."""

    job_source: str
    configs: tuple[tuple[str, str, str], ...]
    depth: int
    runs: int
    person: str
    budget: int
    conditions: Conditions
    job: Job = field(compare=False)


@lru_cache(maxsize=32)
def _plan(asked: _Asked) -> tuple[Plan, ChunkPlan, int]:
    """The planned size, the chunks a launch stores and the steps of one play of each run."""
    depth, budget, conditions = asked.depth, asked.budget, asked.conditions
    named = [{"name": n, "design": d, "tracker": t} for n, d, t in asked.configs]
    cfgs = truthful_configs(asked.job, named, asked.runs, conditions)
    what = "counting this sweep's planned size"
    _, run_steps = _cost(what, cfgs, depth, budget, PLAN_STEPS)
    with cost.bounded(what, PLAN_STEPS) as work:
        planned = plan_chunks(asked.job, conditions, named, cfgs, work)
        npoints = planned.points
        sampled, samples_of = _sampled(depth, budget, npoints)
        rows = []
        for c, cfg, n, samples in zip(planned.configs, planned.agent_configs, npoints, samples_of, strict=True):
            deeper: tuple[int, ...] = ()
            if depth == 2:
                deeper = _total(n, samples, lambda f, cfg=cfg: (_restart_points(cfg, f, work),))
            elif depth == 3:
                deeper = _total(n, samples, lambda f, cfg=cfg, k=samples: _thrice_points(cfg, f, k, work))
            rows.append((c["name"], n, n + sum(deeper)))
    # A queue person's scenarios stop at open questions and go on after answers: an estimate.
    size = Plan(
        sum(npoints),
        sum(r[2] for r in rows),
        not sampled and asked.person == Sweep.Person.SCRIPTED,
        tuple(rows),
        carried_bytes(planned.job),
    )
    return size, planned, run_steps


def sweep_plan(
    *,
    job_source: str,
    configs: list[dict[str, str]],
    depth: int = 2,
    runs: int = 1,
    person: str = "scripted",
    source_name: str = "uploaded job",
    budget: int = PLAN_BUDGET,
    **conditions: Any,
) -> Plan:
    """The sweep's size as sweep_create would plan it: chunks (exact) and scenarios (exact or about,
    see PLAN_BUDGET), computed with agentcore under the sweep's conditions (they decide which crash
    points there are); nothing is stored or enqueued. Bad input raises ValidationError as
    sweep_create does, and so does a sweep too big (checked_plan). Cached per process (the launch
    form asks on every change)."""
    given = conditions_from(conditions)
    job = clean_settings(job_source, depth, runs, person, source_name, given)
    clean = clean_configs(configs)
    return checked_plan(job, job_source, clean, depth, runs, person, given, budget)[0]


def checked_plan(
    job: Job,
    job_source: str,
    clean: list[dict[str, str]],
    depth: int,
    runs: int,
    person: str,
    conditions: Conditions,
    budget: int = PLAN_BUDGET,
) -> tuple[Plan, ChunkPlan, int]:
    """Checked settings' planned size, chunks and steps of one play of each run (see _plan), or a
    refusal (PlanTooBig, a ValidationError too): a depth-3 sweep of more than MAX_DEPTH3_SCENARIOS
    scenarios, one whose states would carry more than MAX_SWEEP_JOB_BYTES of its job, at any depth,
    and a count over PLAN_STEPS (cost.TooCostly). A job carrying more than PLAN_STEP_BYTES is planned within a
    budget shrunk in proportion (its steps are that much slower)."""
    carried = carried_bytes(job)
    if carried > PLAN_STEP_BYTES:
        budget = max(1, budget * PLAN_STEP_BYTES // carried)
    key = tuple((c["name"], c["design"], c["tracker"]) for c in clean)
    planned, chunks, run_steps = _plan(_Asked(job_source, key, depth, runs, person, budget, conditions, job))
    about = "" if planned.exact else "about "
    if depth == 3 and planned.scenarios > MAX_DEPTH3_SCENARIOS:
        raise PlanTooBig(
            f"this sweep has {about}{planned.shown:,} scenarios at depth 3, more than the {MAX_DEPTH3_SCENARIOS:,} "
            "a depth-3 sweep may have; sweep fewer configurations, fewer job runs or a smaller job, or depth 2"
        )
    if planned.job_total > MAX_SWEEP_JOB_BYTES:
        raise PlanTooBig(
            f"this sweep's states would carry {about}{_size(planned.job_total)} of its job ({about}{planned.shown:,} "
            f"scenarios, each carrying the job's {planned.job_bytes:,} bytes of calls and final text), more than "
            f"the {_size(MAX_SWEEP_JOB_BYTES)} a sweep may carry; make the job's arguments shorter, or sweep "
            "fewer configurations or fewer job runs"
        )
    return planned, chunks, run_steps


def _size(n: int) -> str:
    """Bytes as a page says them, to 3 significant figures: 9.44 GB, 1 GB, 329 MB."""
    for unit, size in (("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n} bytes"
