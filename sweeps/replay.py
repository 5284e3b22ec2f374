"""Reading stored scenarios back through agentcore: replaying a timeline, checking a stored durable
state, every scenario of a sweep as agentcore records. Writes nothing (services/timelines.py stores a
replayed timeline).

Sweeps are deterministic: a scenario replayed with its plan and the answers given is the scenario
that was stored. A replay for a request knows its cost first and stays within its bound
(sweeps.cost: WITNESS_STEPS, TIMELINE_STEPS); past it, TooCostly.

A stored value read back here (a sweep's job and configurations, a scenario's points, a durable
state) that agentcore no longer takes raises UnusableState naming its row (sweeps.errors.reading):
the page shows it. A witness asked for that agentcore cannot play is a BadRequest.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import agentcore as agentsweep
import agentcore as audit
from agentcore import Durable, Job, ScenarioRecord
from sweeps import cost
from sweeps.configs import Conditions, agent_config, design
from sweeps.errors import BadRequest, UnusableState, reading
from sweeps.limits import TIMELINE_STEPS, WITNESS_STEPS
from sweeps.models import Question, Scenario, Sweep
from sweeps.schema import SCENARIO_ORDER, instance_values, row_record


def check_durable(durable: Any, name: str) -> dict[str, Any]:
    """A stored durable state, checked by agentcore's own Durable (every key's type, the tracker's
    records, every checkpoint file parsed): a corrupt one raises UnusableDurable (a CheckpointError
    too) with agentcore's message naming `name`."""
    with reading(name):
        Durable.from_dict(durable, name)
    return durable


def check_pending_durables(sc: Scenario) -> None:
    """A waiting scenario's stored durable states, checked (UnusableDurable for a corrupt one)."""
    if sc.status == Scenario.Status.WAITING:
        for q in sc.questions.exclude(status=Question.Status.RESUMED):
            check_durable(q.durable, f"question {q.pk} (scenario {sc.pk})")


def scenario_replay(
    sc: Scenario, bound: int | None = TIMELINE_STEPS
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Play a stored scenario again with agentcore (its plan and any answers given): the
    timeline and the tracker's effects. Within `bound` steps (None: a command's, any number), or
    TooCostly before it starts (or where the estimate was wrong, when it reaches the bound);
    UnusableState for a stored sweep or scenario agentcore no longer plays (stored_config)."""

    def answers(**scenario: Any) -> dict[str, bool]:
        return {
            qid: bool(a)
            for qid, a in Question.objects.filter(answer__isnull=False, **scenario).values_list("qid", "answer")
        }

    cfg = stored_config(sc)
    what = f"scenario {sc.pk}"
    once: dict[str, bool] = {}
    if sc.second_point and sc.sweep.person == Sweep.Person.QUEUE:  # its restart went on with these
        once = answers(
            scenario__sweep_id=sc.sweep_id,
            scenario__config=sc.config,
            scenario__first_point=sc.first_point,
            scenario__second_point=0,
        )
    if bound is None:
        with reading(what):
            played = agentsweep.replay(
                cfg, sc.first_point, sc.second_point or None, answers(scenario=sc), once, sc.third_point or None
            )
        return played.timeline or [], played.effects or []
    # A play of the run for the truth its effects are checked against, and the replay's: the once
    # scenario, then from the states noted in its restarts. A queue person's run is costed to its
    # end, as a truthful person's (a question pauses it sooner).
    plays = 2 + bool(sc.second_point) + bool(sc.third_point)
    replaying = f"replaying {what}"
    with reading(what):
        cost.estimate(replaying, [(replace(cfg, person="scripted"), plays)], bound)
        with cost.bounded(replaying, bound) as budget:
            played = agentsweep.replay(
                cfg,
                sc.first_point,
                sc.second_point or None,
                answers(scenario=sc),
                once,
                sc.third_point or None,
                budget=budget,
            )
    return played.timeline or [], played.effects or []


CONFIG_KEYS = ("name", "design", "tracker")


def _stored_config(c: Any) -> bool:
    return isinstance(c, dict) and all(isinstance(c.get(k), str) for k in CONFIG_KEYS)


def stored_config(sc: Scenario) -> agentsweep.Config:
    """The configuration a stored scenario was played with. UnusableState naming the scenario when
    its sweep's stored configurations are not the list of names, designs and tracker modes stored,
    its index is not in that list, or agentcore no longer takes the stored job, design, tracker mode
    or conditions."""
    what, stored = f"scenario {sc.pk}", sc.sweep.configs
    if not (isinstance(stored, list) and all(_stored_config(c) for c in stored)):
        raise UnusableState(
            f"{what}: the stored state cannot be used (the sweep's configurations are not a list "
            "of names, designs and tracker modes)"
        )
    if not 0 <= sc.config < len(stored):
        raise UnusableState(
            f"{what}: the stored state cannot be used (configuration {sc.config} of a sweep of {len(stored)})"
        )
    with reading(what):
        return agent_config(sc.sweep, sc.config)


def scenario_records(sweep_id: int) -> Iterator[ScenarioRecord]:
    """Every scenario of the sweep as an agentcore record, in the CLI's order, with its timeline and
    effects (stored, or replayed as the CLI's are, with no bound: a command's). A stored sweep or
    scenario agentcore no longer plays raises UnusableState."""
    for sc in Scenario.objects.filter(sweep_id=sweep_id).select_related("sweep").order_by(*SCENARIO_ORDER):
        timeline, effects = (sc.timeline, sc.effects) if sc.timeline is not None else scenario_replay(sc, None)
        yield row_record(instance_values(sc), timeline, effects)


WITNESS = "this witness"


def witness_cost(cfg: agentsweep.Config, second: int | None) -> int:
    """The steps of the witness of `cfg` crashed once or (with `second`) twice; TooCostly past
    WITNESS_STEPS."""
    # A play of the run for its points, one for the truth its effects are checked against, and the
    # replay's: the once scenario, and a twice scenario's play from the state its restart noted.
    return cost.estimate(WITNESS, [(cfg, 3 if second is None else 4)], WITNESS_STEPS)


def witness_replay(
    job: Job,
    variant: str,
    design_name: str,
    tracker: str,
    runs: int,
    first: int,
    second: int | None,
    conditions: Conditions,
) -> tuple[agentsweep.Config, agentsweep.Played]:
    """One scenario of the audit (agentcore.harness.audit), played again with its timeline: the job or its
    variant, crashed at `first` and, in a twice scenario, at `second` of the restart. Raises
    BadRequest for a variant the job cannot have or a crash point the scenario never reaches, and
    TooCostly for one over WITNESS_STEPS (before it starts, or where the estimate was wrong when
    the plays reach it)."""
    made, skipped = audit.variants(job)
    by_name = {v.name: v.job for v in made}
    if variant not in by_name:
        raise BadRequest(f"job {job.name} has no variant {variant!r}: {dict(skipped).get(variant, 'unknown')}")
    cfg = agentsweep.Config(by_name[variant], design(design_name), tracker, runs, "scripted", **conditions._asdict())
    witness_cost(cfg, second)
    with cost.bounded(WITNESS, WITNESS_STEPS) as budget:
        reached = len(agentsweep.points(cfg, budget=budget))
        if first > reached:
            raise BadRequest(f"{cfg.label}: the uninterrupted run has {reached} crash points, not {first}")
        return cfg, agentsweep.replay(cfg, first, second, budget=budget)
