"""What a sweep is made of, checked: the job, its configurations, depth, runs, person and conditions
(crash model, fsync, and the world's faults: tracker fault, tool faults, person faults, model, seed).
Pure: reads and writes nothing in the database.

Rules:
- Every check raises a BadRequest (sweeps.errors: a django ValidationError too) with a message fit
  for a form or a command line, a sweep too big to launch a PlanTooBig; the bounds are
  sweeps.limits'. A fault is checked by agentcore.standins.faults' parser (its message lists the spellings;
  it raises agentcore's ConfigError) and stored as written: plain ASCII, at most CONDITION_CHARS
  characters.
- `chunk_plan` is the one planning of a sweep's chunks (agentcore plays each configuration's
  uninterrupted run): launching stores it, the planned size counts it (both within a bound of
  work: sweeps.plan).
- `agent_configs` turns a stored sweep into agentcore configurations (cached per process); every
  one of them carries the sweep's conditions.
"""

from __future__ import annotations

import itertools
from collections import namedtuple
from functools import lru_cache
from importlib import resources
from typing import Any, NamedTuple

import agentcore as agentsweep
from agentcore import BUILTIN, CONDITIONS, MODES, BadInput, Condition, ConfigError, Job, JobError, designs, parse_job
from agentcore import CONDITIONS_BY_NAME as NAMED
from sweeps.errors import BadRequest, PlanTooBig
from sweeps.limits import CONDITION_CHARS, DEPTHS, MAX_CHUNKS, MAX_CONFIGS, MAX_NAME, MAX_NOTES, MAX_RUNS, MAX_SEED
from sweeps.models import Sweep

# The launch form says it as the service does.
DEPTH_3_PERSON = "depth 3 needs the scripted person: a question queue pauses scenarios at depth 2 at most"


def builtin_job_source(name: str = "triage") -> str:
    """The JSON text of a built-in job (what a sweep of "the triage job" stores)."""
    if name not in BUILTIN:
        raise BadRequest(f"unknown built-in job {name!r} (choose from {', '.join(BUILTIN)})")
    return resources.files("agentcore").joinpath("jobfiles", BUILTIN[name]).read_text(encoding="utf-8")


def table_configs_for() -> list[dict[str, str]]:
    """The chapter's table as config dicts: its 11 rows (the preset of the launch form; the rows do
    not depend on the job)."""
    return [{"name": name, "design": d, "tracker": t} for name, d, t in agentsweep.TABLE]


def audit_configs_for() -> list[dict[str, str]]:
    """What `python -m agentcore audit` sweeps under each world model: every design with every tracker
    mode (the launch form's audit preset; the job variants are the command line's)."""
    return configs_for(list(designs.DESIGNS), list(MODES))


def configs_for(design_names: list[str], trackers: list[str]) -> list[dict[str, str]]:
    """Every design with every tracker mode, named as the chapter's table names the pair ("real loop,
    keyless tracker"), or like "loop, lookup tracker" for a pair the table has not."""
    return [
        {"name": agentsweep.config_name(d, t), "design": d, "tracker": t}
        for d, t in itertools.product(design_names, trackers)
    ]


def design(name: str) -> designs.Design:
    """A design by name; "loop+reuse_run_id" is a design with planted bugs, named as agentcore names it."""
    base, *bugs = name.split("+")
    return designs.get(base, tuple(bugs))


# What a crash does to the world a sweep runs in, and how that world misbehaves: a value per
# agentcore.conditions declaration (agentcore.config.Config's fields of those names, in their order).
Conditions = namedtuple("Conditions", [c.name for c in CONDITIONS], defaults=[c.default for c in CONDITIONS])
# The conditions agentcore.standins.faults spells: their words (in messages), parsers and spellings.
SPELLED = {c.name: (c.title, c.parse, c.spellings) for c in CONDITIONS if c.spellings}


def conditions_of(sweep: Sweep) -> Conditions:
    return Conditions(*(getattr(sweep, name) for name in Conditions._fields))


@lru_cache(maxsize=64)
def _configs(
    job_source: str, configs: tuple[tuple[str, str, str], ...], runs: int, person: str, conditions: Conditions
) -> tuple[agentsweep.Config, ...]:
    job = parse_job(job_source, "stored job")
    return tuple(
        agentsweep.Config(job, design(d), t, runs, person, name, **conditions._asdict()) for name, d, t in configs
    )


def agent_configs(sweep: Sweep) -> tuple[agentsweep.Config, ...]:
    """The sweep's agentcore configurations, in the order its `config` columns index (cached)."""
    key = tuple((c["name"], c["design"], c["tracker"]) for c in sweep.configs)
    return _configs(sweep.job_source, key, sweep.runs, sweep.person, conditions_of(sweep))


def agent_config(sweep: Sweep, index: int) -> agentsweep.Config:
    return agent_configs(sweep)[index]


def check(ok: bool, message: str, code: str = "invalid") -> None:
    if not ok:
        raise BadRequest(message, code=code)


def clean_configs(configs: Any) -> list[dict[str, str]]:
    check(isinstance(configs, list) and len(configs) > 0, "choose at least one configuration")
    check(len(configs) <= MAX_CONFIGS, f"at most {MAX_CONFIGS} configurations")
    out: list[dict[str, str]] = []
    for i, c in enumerate(configs, 1):
        check(
            isinstance(c, dict) and set(c) == {"name", "design", "tracker"},
            f"configuration {i}: needs exactly name, design and tracker",
        )
        name, design_name, tracker = c["name"], c["design"], c["tracker"]
        check(
            isinstance(name, str) and 0 < len(name.strip()) <= MAX_NAME,
            f"configuration {i}: name must be 1 to {MAX_NAME} characters",
        )
        check(isinstance(design_name, str), f"configuration {i}: design must be a name")
        try:
            design(design_name)
        except ConfigError as e:
            raise BadRequest(f"configuration {i}: {e}", code="invalid") from None
        check(tracker in MODES, f"configuration {i}: unknown tracker mode {tracker!r} (choose from {', '.join(MODES)})")
        out.append({"name": name.strip(), "design": design_name, "tracker": tracker})
    names = [c["name"] for c in out]
    check(len(set(names)) == len(names), "configuration names must differ")
    return out


def clean_spelled(name: str, value: Any) -> str:
    """One of SPELLED's conditions as written, in plain ASCII and at most CONDITION_CHARS characters,
    once agentcore.standins.faults' parser takes it (its message when it does not: "unknown tool faults 'x'
    (choose from first, k:N, always)"). Raises ValidationError."""
    what, parse, spellings = SPELLED[name]
    # Before the parser: it takes other scripts' digits ("ttl:٥"), which no page should show as a spelling.
    check(
        not isinstance(value, str) or (value.isascii() and value.isprintable() and " " not in value),
        f"{what} {value!r}: write it in plain ASCII without spaces, as one of {', '.join(spellings)}",
    )
    try:
        parse(value)
    except ConfigError as e:
        message = str(e)  # "unknown ..." names the condition; "'k:101': N must be ..." does not
        raise BadRequest(message if message.startswith("unknown") else f"{what} {message}", code="invalid") from None
    check(isinstance(value, str), f"unknown {what} {value!r} (choose from {', '.join(spellings)})")
    check(len(value) <= CONDITION_CHARS, f"{what} {value!r}: at most {CONDITION_CHARS} characters")
    return value


def clean_condition(c: Condition, value: Any) -> Any:
    """One condition checked against agentcore's choices and spellings, within what its column
    stores. Raises ValidationError."""
    if c.name in SPELLED:
        return clean_spelled(c.name, value)
    if c.type is bool:
        check(type(value) is bool, f"{c.title} must be on or off (True or False), not {value!r}")
    elif c.type is int:
        check(
            type(value) is int and c.minimum <= value <= MAX_SEED,
            f"{c.title} must be a whole number from {c.minimum} to {MAX_SEED}, not {value!r}",
        )
    else:
        check(
            isinstance(value, str) and value in c.values,
            f"{c.title} must be one of {', '.join(c.values)}, not {value!r}",
        )
    return value


def clean_seed(seed: Any) -> int:
    return clean_condition(NAMED["seed"], seed)


def clean_conditions(*values: Any, **named: Any) -> Conditions:
    """The crash model, fsync and the world's faults (Conditions' fields, positional or by name; the
    missing ones at their defaults), checked against agentcore's choices and spellings. Raises
    ValidationError (the first problem found)."""
    given = Conditions(*values, **named)
    return Conditions(*(clean_condition(c, v) for c, v in zip(CONDITIONS, given, strict=True)))


def clean_settings(
    job_source: Any,
    depth: Any,
    runs: Any,
    person: Any,
    source_name: str,
    conditions: Conditions,
    job: Job | None = None,
) -> Job:
    """The job, parsed, once depth, runs, person and conditions are checked too (`job`: the job
    already parsed from `job_source`, taken as it is). Raises ValidationError."""
    check(isinstance(job_source, str), "the job must be JSON text")
    if job is None:
        try:
            job = parse_job(job_source, source_name)
        except JobError as e:
            raise BadRequest(str(e), code="job") from None
    check(type(depth) is int and depth in DEPTHS, f"depth must be {' or '.join(map(str, DEPTHS))}, not {depth!r}")
    check(type(runs) is int and 1 <= runs <= MAX_RUNS, f"runs must be between 1 and {MAX_RUNS}, not {runs!r}")
    check(person in Sweep.Person.values, f"person must be one of {', '.join(Sweep.Person.values)}, not {person!r}")
    check(depth < 3 or person == Sweep.Person.SCRIPTED, DEPTH_3_PERSON)
    clean_conditions(*conditions)
    return job


def clean_name_notes(name: Any, notes: Any) -> tuple[str, str]:
    check(isinstance(name, str) and isinstance(notes, str), "the name and the notes must be text")
    name = name.strip()
    check(len(name) <= MAX_NAME, f"the name must be at most {MAX_NAME} characters")
    check(len(notes) <= MAX_NOTES, f"the notes must be at most {MAX_NOTES:,} characters")
    check("\x00" not in name + notes, "the name and the notes must not contain a NUL character")
    return name, notes


class ChunkPlan(NamedTuple):
    """A checked sweep and its chunks: the agentcore configurations have a truthful person."""

    job: Job
    conditions: Conditions
    configs: list[dict[str, str]]
    agent_configs: list[agentsweep.Config]
    chunks: list[agentsweep.Chunk]
    points: list[int]  # crash points per configuration


def planned_configs(
    job_source: Any, configs: Any, depth: Any, runs: Any, person: Any, source_name: str, conditions: Conditions
) -> tuple[Job, list[dict[str, str]], list[agentsweep.Config]]:
    """Validate a sweep's settings: its job, its configurations checked, and the agentcore
    configurations whose uninterrupted runs list its chunks. Raises ValidationError."""
    job = clean_settings(job_source, depth, runs, person, source_name, conditions)
    clean = clean_configs(configs)
    return job, clean, truthful_configs(job, clean, runs, conditions)


def truthful_configs(
    job: Job, clean: list[dict[str, str]], runs: int, conditions: Conditions
) -> list[agentsweep.Config]:
    """The agentcore configurations of checked settings whose uninterrupted runs list the chunks."""
    # The crash points come from the uninterrupted run with a truthful person: a queue person
    # would suspend it at its first question (the points after an answer are the same).
    return [
        agentsweep.Config(job, design(c["design"]), c["tracker"], runs, "scripted", c["name"], **conditions._asdict())
        for c in clean
    ]


def chunk_plan(
    job_source: Any,
    configs: Any,
    depth: Any,
    runs: Any,
    person: Any,
    source_name: str,
    conditions: Conditions,
    budget: agentsweep.WorkBudget | None = None,
) -> ChunkPlan:
    """Validate a sweep's settings and plan its chunks (every configuration under `conditions`),
    the plays charged to `budget` (agentcore.harness.disk.WorkBudget). Raises ValidationError."""
    job, clean, cfgs = planned_configs(job_source, configs, depth, runs, person, source_name, conditions)
    return plan_chunks(job, conditions, clean, cfgs, budget)


def plan_chunks(
    job: Job,
    conditions: Conditions,
    clean: list[dict[str, str]],
    cfgs: list[agentsweep.Config],
    budget: agentsweep.WorkBudget | None = None,
) -> ChunkPlan:
    """The chunks of checked settings (planned_configs' three), the plays charged to `budget`."""
    plan: list[agentsweep.Chunk] = []
    npoints: list[int] = []
    for i, cfg in enumerate(cfgs):
        try:
            pts = agentsweep.points(cfg, budget=budget)
        except BadInput as e:  # agentcore refused it: the uninterrupted run does not finish
            raise BadRequest(str(e), code="job") from None
        npoints.append(len(pts))
        plan.extend(agentsweep.Chunk(i, n, kind, label) for n, (kind, label) in enumerate(pts, 1))
        if len(plan) > MAX_CHUNKS:
            raise PlanTooBig(
                f"this sweep has more than {MAX_CHUNKS} first crash points; sweep fewer configurations or a smaller job"
            )
    return ChunkPlan(job, conditions, clean, cfgs, plan, npoints)


def sweep_check(
    *,
    job_source: str,
    configs: list[dict[str, str]],
    depth: int = 2,
    runs: int = 1,
    person: str = "scripted",
    source_name: str = "uploaded job",
    **conditions: Any,
) -> int:
    """Validate a sweep as sweep_create would (raises ValidationError), storing nothing; how many
    chunks it would have. `conditions`: Conditions' fields (defaults: agentcore's)."""
    return len(chunk_plan(job_source, configs, depth, runs, person, source_name, conditions_from(conditions)).chunks)


def conditions_from(given: dict[str, Any]) -> Conditions:
    """Conditions from keyword arguments (a service's **conditions), the missing ones at their defaults;
    an unknown name is a TypeError, as for any keyword argument."""
    unknown = set(given) - set(Conditions._fields)
    if unknown:
        raise TypeError(f"unknown conditions: {', '.join(sorted(unknown))}")
    return Conditions(**given)
