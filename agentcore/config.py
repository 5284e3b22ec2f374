"""What a sweep sweeps: configurations, and the chapter's table of them.

Rules:
- A configuration is a job, a design, a tracker mode, and how many job runs go in sequence against
  one tracker (a daily job: a fresh run ID each run), played with a person (scripted: answers at
  once, as the person faults condition says; queue: the dashboard's people, whom no condition
  touches), under the conditions of agentcore.conditions (a crash model, fsync, the world's faults):
  Config has one field per declared condition, after its own, with the declaration's default and check.
- The table's rows are named as the chapter names them; a design and tracker mode the table has
  not are named "DESIGN, MODE tracker". The crash model, fsync and the world's faults are not part
  of the name: a table is swept under one of each, and says which (`conditions`).
"""

from __future__ import annotations

from dataclasses import field, make_dataclass

from agentcore import conditions as declared
from agentcore.crashmodels import NAMES as CRASH_MODELS
from agentcore.durable import designs
from agentcore.durable.designs import Design
from agentcore.errors import BadInput, ConfigError
from agentcore.jobs import Job
from agentcore.limits import MAX_RUNS, MIN_RUNS
from agentcore.standins.faults import MODELS, PERSON_FAULTS, TOOL_FAULTS, TRACKER_FAULTS
from agentcore.standins.tracker import Tracker

PERSONS = ("scripted", "queue")
# The conditions a table is swept under, with their defaults (the chapter's world): agentcore.conditions'.
CONDITIONS = declared.DEFAULTS
__all__ = [
    "CONDITIONS",
    "CRASH_MODELS",
    "MODELS",
    "PERSONS",
    "PERSON_FAULTS",
    "TABLE",
    "TOOL_FAULTS",
    "TRACKER_FAULTS",
    "Config",
    "conditions",
    "config_name",
    "table_configs",
]

TABLE: tuple[tuple[str, str, str], ...] = (
    ("save once per turn", "once-per-turn", "keyed"),
    ("save after the reply", "after-reply", "keyed"),
    ("+ idempotency keys", "keys", "keyed"),
    ("+ attempt markers, no keys", "markers", "keyed"),
    ("keys and markers", "keys-and-markers", "keyed"),
    ("real loop, keyed tracker", "loop", "keyed"),
    ("real loop, keyless tracker", "loop", "keyless"),
    ("tool fails after accept, keyed tracker", "tool-fails", "keyed"),
    ("tool fails after accept, keyless tracker", "tool-fails", "keyless"),
    ("approval gate, keyed tracker", "approval-gate", "keyed"),
    ("approval gate, keyless tracker", "approval-gate", "keyless"),
)
_TABLE_NAMES = {(d, t): name for name, d, t in TABLE}


def config_name(design: str, tracker: str) -> str:
    """A design with a tracker mode, named as the table names it ("real loop, keyless tracker"), or
    "DESIGN, MODE tracker" for a pair the table has not (a design with planted bugs, a lookup tracker)."""
    return _TABLE_NAMES.get((design, tracker), f"{design}, {tracker} tracker")


class _Configured:
    """Config's behaviour; its fields are the configuration's, then one per condition (below)."""

    __slots__ = ()
    job: Job
    design: Design
    tracker: str
    runs: int
    person: str
    name: str

    @property
    def expected(self) -> list[tuple[int, str]]:
        """The effects the job should make: each changing call of each job run, once."""
        return [(r, c.id) for r in range(self.runs) for c in self.job.changing_calls()]

    def __post_init__(self) -> None:
        Tracker(self.tracker, self.tracker_fault)  # type: ignore[attr-defined]  # validates the mode and the fault
        if not MIN_RUNS <= self.runs <= MAX_RUNS:
            raise BadInput(f"runs must be between {MIN_RUNS} and {MAX_RUNS}, not {self.runs}")
        if self.person not in PERSONS:
            raise ConfigError(f"unknown person {self.person!r} (choose from {', '.join(PERSONS)})")
        for c in declared.CONDITIONS:
            c.check(getattr(self, c.name))

    @property
    def label(self) -> str:
        return self.name or config_name(self.design.name, self.tracker)

    @property
    def conditions(self) -> str:
        """The crash model, fsync and the world's faults in words, e.g. "power-cut, fsync off"."""
        return declared.words({c: getattr(self, c) for c in CONDITIONS})


Config = make_dataclass(
    "Config",
    [
        ("job", Job),
        ("design", Design),
        ("tracker", str),
        ("runs", int, field(default=1)),
        ("person", str, field(default="scripted")),
        ("name", str, field(default="")),
        *((c.name, c.type, field(default=c.default)) for c in declared.CONDITIONS),
    ],
    bases=(_Configured,),
    frozen=True,
    slots=True,
)
Config.__module__ = __name__  # where pickle finds it (worker processes get configurations pickled)


def conditions(**values: object) -> str:
    """The conditions in words: the crash model, fsync, then each other one not at its default
    ("power-cut, fsync off, tracker fault: crash"); the seed only where something random uses it.
    `values`: CONDITIONS' names, the missing ones at their defaults."""
    unknown = set(values) - set(CONDITIONS)
    if unknown:
        raise TypeError(f"conditions() got unexpected keyword arguments: {', '.join(sorted(unknown))}")
    return declared.words(CONDITIONS | values)


def table_configs(job: Job, **conditions: object) -> list[Config]:
    """The chapter's table on `job`, every row under `conditions` (CONDITIONS' names)."""
    unknown = set(conditions) - set(CONDITIONS)
    if unknown:
        raise TypeError(f"unknown conditions: {', '.join(sorted(unknown))}")
    return [Config(job, designs.get(d), t, name=name, **conditions) for name, d, t in TABLE]  # type: ignore[arg-type]
