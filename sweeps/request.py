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

from dataclasses import dataclass
from typing import Any

import agentcore as agentsweep
from agentcore import Job
from sweeps import cost
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
    configs: list[dict[str, str]],
    depth: int = 2,
    runs: int = 1,
    person: str = "scripted",
    source_name: str = "uploaded job",
    name: str = "",
    notes: str = "",
    job: Job | None = None,
    **conditions: Any,
) -> LaunchRequest:
    """The launch of these settings, checked and planned (see the rules); `job`: the job already
    parsed from `job_source` (the form's), not parsed again. `conditions`: Conditions' fields, the
    missing ones at agentcore's defaults. Bad settings and a sweep too big raise ValidationError
    (sweeps.plan.checked_plan; a launch's planning over LAUNCH_STEPS: cost.TooCostly)."""
    name, notes = clean_name_notes(name, notes)
    given = conditions_from(conditions)
    job = clean_settings(job_source, depth, runs, person, source_name, given, job)
    clean = clean_configs(configs)
    planned, chunks, run_steps = checked_plan(job, job_source, clean, depth, runs, person, given, PLAN_BUDGET)
    # A launch's planning plays each configuration's run for its points and for its truth.
    if 2 * run_steps > LAUNCH_STEPS:
        raise cost.refusal("planning this sweep's chunks", 2 * run_steps, LAUNCH_STEPS)
    return LaunchRequest(
        job,
        job_source,
        source_name,
        tuple(chunks.configs),
        depth,
        runs,
        person,
        given,
        name,
        notes,
        planned,
        tuple(chunks.chunks),
    )


def preset_configs(data: dict[str, Any]) -> list[dict[str, str]]:
    """The configurations a launch form's preset names (or its designs and tracker modes)."""
    if data["preset"] == "table":
        return table_configs_for()
    if data["preset"] == "audit":
        return audit_configs_for()
    return configs_for(data["designs"], data["trackers"])
