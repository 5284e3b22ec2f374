"""What a sweep sweeps: configurations, and the chapter's table of them.

Rules:
- A configuration is a job, a design, a tracker mode, and how many job runs go in sequence against
  one tracker (a daily job: a fresh run ID each run), played with a person (scripted: answers at
  once, truthfully unless `person_faults` says otherwise; queue: the dashboard's people, whom
  `person_faults` does not touch), under a crash model (agentcore.harness.disk: what
  a crash leaves of the checkpoint files), with the store's fsync on or off, and a world that
  misbehaves as agentcore.standins.faults spells it: the tracker (`tracker_fault`: never, crash, ttl:N,
  strict-params), a flaky tool (`tool_faults`), the scripted person (`person_faults`) and the model
  (`model`); `seed` seeds their random choices. Every default is the chapter's world.
- The table's rows are named as the chapter names them; a design and tracker mode the table has
  not are named "DESIGN, MODE tracker". The crash model, fsync and the world's faults are not part
  of the name: a table is swept under one of each, and says which (`conditions`).
"""

from __future__ import annotations

from dataclasses import dataclass

from agentcore.durable import designs
from agentcore.durable.designs import Design
from agentcore.harness.crashmodels import NAMES as CRASH_MODELS
from agentcore.jobs import Job
from agentcore.limits import MAX_RUNS, MIN_RUNS
from agentcore.standins import faults
from agentcore.standins.faults import MODELS, PERSON_FAULTS, TOOL_FAULTS, TRACKER_FAULTS
from agentcore.standins.tracker import Tracker

PERSONS = ("scripted", "queue")
# The conditions a table is swept under, with their defaults (the chapter's world); the spellings
# of the last five are agentcore.standins.faults'.
CONDITIONS = {"crash_model": "panic", "fsync": True, "tracker_fault": "none", "tool_faults": "first",
              "person_faults": "truthful", "model": "fixed", "seed": 0}
__all__ = ["CONDITIONS", "CRASH_MODELS", "MODELS", "PERSONS", "PERSON_FAULTS", "TABLE", "TOOL_FAULTS",
           "TRACKER_FAULTS", "Config", "conditions", "config_name", "table_configs"]

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


@dataclass(frozen=True, slots=True)
class Config:
    job: Job
    design: Design
    tracker: str
    runs: int = 1
    person: str = "scripted"
    name: str = ""
    crash_model: str = "panic"
    fsync: bool = True
    tracker_fault: str = "none"
    tool_faults: str = "first"
    person_faults: str = "truthful"
    model: str = "fixed"
    seed: int = 0

    @property
    def expected(self) -> list[tuple[int, str]]:
        """The effects the job should make: each changing call of each job run, once."""
        return [(r, c.id) for r in range(self.runs) for c in self.job.changing_calls()]

    def __post_init__(self) -> None:
        Tracker(self.tracker, self.tracker_fault)  # validates the mode and the fault
        if not MIN_RUNS <= self.runs <= MAX_RUNS:
            raise ValueError(f"runs must be between {MIN_RUNS} and {MAX_RUNS}, not {self.runs}")
        if self.person not in PERSONS:
            raise ValueError(f"unknown person {self.person!r} (choose from {', '.join(PERSONS)})")
        if self.crash_model not in CRASH_MODELS:
            raise ValueError(f"unknown crash model {self.crash_model!r} (choose from {', '.join(CRASH_MODELS)})")
        faults.tool_failures(self.tool_faults)
        faults.person_faults(self.person_faults)
        faults.model(self.model)
        if type(self.seed) is not int or self.seed < 0:
            raise ValueError(f"seed must be a whole number from 0, not {self.seed!r}")

    @property
    def label(self) -> str:
        return self.name or config_name(self.design.name, self.tracker)

    @property
    def conditions(self) -> str:
        """The crash model, fsync and the world's faults in words, e.g. "power-cut, fsync off"."""
        return conditions(**{c: getattr(self, c) for c in CONDITIONS})


_WORDS = {"tracker_fault": "tracker fault", "tool_faults": "tool faults", "person_faults": "person",
          "model": "model", "seed": "seed"}


def conditions(crash_model: str = "panic", fsync: bool = True, tracker_fault: str = "none",
               tool_faults: str = "first", person_faults: str = "truthful", model: str = "fixed",
               seed: int = 0) -> str:
    """The conditions in words: the crash model, fsync, then each other one not at its default
    ("power-cut, fsync off, tracker fault: crash"); the seed only where something random uses it."""
    words = [crash_model, f"fsync {'on' if fsync else 'off'}"]
    given = {"tracker_fault": tracker_fault, "tool_faults": tool_faults, "person_faults": person_faults,
             "model": model}
    words += [f"{_WORDS[c]}: {v}" for c, v in given.items() if v != CONDITIONS[c]]
    if seed != CONDITIONS["seed"] and (model == "fickle" or person_faults != "truthful"):
        words.append(f"seed: {seed}")
    return ", ".join(words)


def table_configs(job: Job, **conditions: object) -> list[Config]:
    """The chapter's table on `job`, every row under `conditions` (CONDITIONS' names)."""
    unknown = set(conditions) - set(CONDITIONS)
    if unknown:
        raise TypeError(f"unknown conditions: {', '.join(sorted(unknown))}")
    return [Config(job, designs.get(d), t, name=name, **conditions) for name, d, t in TABLE]  # type: ignore[arg-type]
