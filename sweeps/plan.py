"""The planned size of a sweep, before anything is stored or enqueued. Reads and writes nothing in
the database: agentcore plays the crash points it needs (see sweeps.limits.PLAN_BUDGET)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from agentcore import sweep as agentsweep
from sweeps.configs import Conditions, chunk_plan, clean_configs, clean_settings, conditions_from
from sweeps.limits import PLAN_BUDGET, PLAN_MIN_SAMPLES
from sweeps.models import Sweep


@dataclass(frozen=True, slots=True)
class Plan:
    """A sweep's planned size. `scenarios` is exact when `exact`, else an estimate."""

    chunks: int
    scenarios: int
    exact: bool
    configs: tuple[tuple[str, int, int], ...]  # (name, chunks, scenarios) per configuration


def _restart_points(cfg: agentsweep.Config, first: int) -> int:
    """How many points the restart reaches after a crash at `first`: the chunk's twice scenarios."""
    played = agentsweep.play(cfg, (first,), agentsweep.Options(points=True))
    restart = played.processes[1].points if len(played.processes) > 1 else None
    return len(restart or ())


def _twice_count(cfg: agentsweep.Config, n: int, samples: int) -> int:
    """The twice scenarios of a configuration of n first points, from `samples` of them played
    (every one when samples >= n) and straight lines between them."""
    if samples >= n:
        return sum(_restart_points(cfg, f) for f in range(1, n + 1))
    at = sorted({round(1 + i * (n - 1) / (samples - 1)) for i in range(samples)})
    got = {f: _restart_points(cfg, f) for f in at}
    total = 0
    for a, b in itertools.pairwise(at):
        for f in range(a, b):
            total += got[a] + (got[b] - got[a]) * (f - a) / (b - a)
    return round(total + got[at[-1]])


@lru_cache(maxsize=32)
def _plan(job_source: str, configs: tuple[tuple[str, str, str], ...], depth: int, runs: int, person: str,
          budget: int, source_name: str, conditions: Conditions) -> Plan:
    planned = chunk_plan(job_source, [{"name": n, "design": d, "tracker": t} for n, d, t in configs], depth, runs,
                         person, source_name, conditions)
    npoints = planned.points
    sampled = depth == 2 and sum(n * n for n in npoints) > budget
    rows = []
    for c, cfg, n in zip(planned.configs, planned.agent_configs, npoints, strict=True):
        twice = 0
        if depth == 2:
            samples = max(PLAN_MIN_SAMPLES, budget // (len(planned.agent_configs) * n)) if sampled else n
            twice = _twice_count(cfg, n, samples)
        rows.append((c["name"], n, n + twice))
    # A queue person's scenarios stop at open questions and go on after answers: an estimate.
    return Plan(sum(npoints), sum(r[2] for r in rows), not sampled and person == Sweep.Person.SCRIPTED,
                tuple(rows))


def sweep_plan(*, job_source: str, configs: list[dict[str, str]], depth: int = 2, runs: int = 1,
               person: str = "scripted", source_name: str = "uploaded job", budget: int = PLAN_BUDGET,
               **conditions: Any) -> Plan:
    """The sweep's size as sweep_create would plan it: chunks (exact) and scenarios (exact or about,
    see PLAN_BUDGET), computed with agentcore under the sweep's conditions (they decide which crash
    points there are); nothing is stored or enqueued. Bad input raises ValidationError as
    sweep_create does. Cached per process (the launch form asks on every change)."""
    given = conditions_from(conditions)
    clean_settings(job_source, depth, runs, person, source_name, given)
    key = tuple((c["name"], c["design"], c["tracker"]) for c in clean_configs(configs))
    return _plan(job_source, key, depth, runs, person, budget, source_name, given)
