"""A launch, asked for and checked once: the parsed job, its configurations, depth, runs, person,
conditions, name and notes, and its plan (the chunks a launch stores, the planned size). Pure: reads
and writes nothing in the database.

Rules:
- `launch_request` is the one place a launch's settings are checked and its job parsed and planned:
  the launch form (its clean) and `manage.py sweep` build it, services.launch.sweep_create stores it.
  Nothing after it parses the job or plans the chunks again.
- The checks run in one order, so the same settings give the same first error wherever they come
  from: the name and notes, the settings and the job (sweeps.configs), the configurations, the
  planned size and its bounds (sweeps.plan), the launch's own bound of work (LAUNCH_STEPS).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import agentcore as agentsweep
from agentcore import Job
from sweeps import cost
from sweeps import targets as sweep_targets
from sweeps.configs import (
    Conditions,
    audit_configs_for,
    clean_configs,
    clean_name_notes,
    clean_settings,
    conditions_from,
    configs_for,
    table_configs_for,
)
from sweeps.limits import LAUNCH_STEPS, PLAN_BUDGET
from sweeps.plan import Plan, checked_plan


@dataclass(frozen=True, slots=True)
class LaunchRequest:
    """A checked launch (build it with launch_request). `configs` are the checked configuration
    dicts, in the order the stored chunks' `config` index them."""

    job: Job
    job_source: str
    source_name: str
    configs: tuple[dict[str, str], ...]
    depth: int
    runs: int
    person: str
    conditions: Conditions
    name: str
    notes: str
    plan: Plan
    chunks: tuple[agentsweep.Chunk, ...]


def launch_request(
    *,
    job_source: str,
    configs: Sequence[dict[str, str]] = (),
    depth: int = 2,
    runs: int = 1,
    person: str = "scripted",
    source_name: str = "uploaded job",
    name: str = "",
    notes: str = "",
    job: Job | None = None,
    targets: Sequence[str] = (),
    **conditions: Any,
) -> LaunchRequest:
    """The launch of these settings, checked and planned (see the rules); `job`: the job already
    parsed from `job_source` (the form's), not parsed again. `conditions`: Conditions' fields, the
    missing ones at agentcore's defaults. Bad settings and a sweep too big raise ValidationError
    (sweeps.plan.checked_plan; a launch's planning over LAUNCH_STEPS: cost.TooCostly).

    `targets`: registered targets' names (sweeps.targets) instead of `configs`: their fork servers
    plan the sweep; the model is fresh-ids unless `conditions` name it."""
    name, notes = clean_name_notes(name, notes)
    if targets:
        conditions.setdefault("model", sweep_targets.DEFAULT_MODEL)
    given = conditions_from(conditions)
    job = clean_settings(job_source, depth, runs, person, source_name, given, job)
    if targets:
        stored, chunk_list, planned = _target_plan(job, job_source, list(targets), depth, runs, person, given)
    else:
        clean = clean_configs(list(configs))
        planned, chunks, run_steps = checked_plan(job, job_source, clean, depth, runs, person, given, PLAN_BUDGET)
        # A launch's planning plays each configuration's run for its points and for its truth.
        if 2 * run_steps > LAUNCH_STEPS:
            raise cost.refusal("planning this sweep's chunks", 2 * run_steps, LAUNCH_STEPS)
        stored, chunk_list = list(chunks.configs), list(chunks.chunks)
    return LaunchRequest(
        job,
        job_source,
        source_name,
        tuple(stored),
        depth,
        runs,
        person,
        given,
        name,
        notes,
        planned,
        tuple(chunk_list),
    )


def _target_plan(
    job: Job, job_source: str, names: list[str], depth: int, runs: int, person: str, given: Conditions
) -> tuple[list[dict[str, Any]], list[Any], Plan]:
    """A launch of registered targets (sweeps.targets): its configurations, chunks and planned size.
    Their planning runs are the target's own, so a depth-2 or 3 size is an estimate (each restart
    meets at most the points of a whole run)."""
    sweep_targets.check_settings(depth, runs, person, given._asdict())
    configs, chunks, planned = sweep_targets.plan_targets(names, job, job_source, given.model, given.seed)
    rows = []
    for p in planned:
        n = len(p.labels)
        deeper = n * (n + 1) // 2 if depth >= 2 else 0  # a restart after point i meets about n - i + 1
        deepest = deeper * (n + 1) // 3 if depth == 3 else 0
        rows += [(sweep_targets.row_name(p), n, n + deeper + deepest)] * p.samples
    return list(configs), list(chunks), Plan(len(chunks), sum(r[2] for r in rows), depth == 1, tuple(rows))


def preset_configs(data: dict[str, Any]) -> list[dict[str, str]]:
    """The configurations a launch form's preset names (or its designs and tracker modes)."""
    if data["preset"] == "table":
        return table_configs_for()
    if data["preset"] == "audit":
        return audit_configs_for()
    return configs_for(data["designs"], data["trackers"])
