"""What a sweep sweeps: configurations, and the chapter's table of them.

Rules:
- A configuration is a job, a design, a tracker mode, and how many job runs go in sequence against
  one tracker (a daily job: a fresh run ID each run), played with a person (scripted: answers at
  once and truthfully; queue: the dashboard's people), under a crash model (agentcore.disk: what
  a crash leaves of the checkpoint files), with the store's fsync on or off, and a tracker that
  never crashes or can crash (`tracker_fault`).
- The table's rows are named as the chapter names them; a design and tracker mode the table has
  not are named "DESIGN, MODE tracker". The crash model, fsync and tracker fault are not part of
  the name: a table is swept under one of each, and says which (`conditions`).
"""

from __future__ import annotations

from dataclasses import dataclass

from agentcore import designs
from agentcore.designs import Design
from agentcore.jobs import Job
from agentcore.limits import MAX_RUNS, MIN_RUNS
from agentcore.world import FAULTS, Tracker

PERSONS = ("scripted", "queue")
CRASH_MODELS = ("panic", "power-cut", "kill")
TRACKER_FAULTS = FAULTS  # agentcore.world: "crash" keeps the tracker's records through a log

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

    @property
    def label(self) -> str:
        return self.name or config_name(self.design.name, self.tracker)


    @property
    def conditions(self) -> str:
        """The crash model, fsync and tracker fault in words, e.g. "power-cut, fsync off"."""
        return conditions(self.crash_model, self.fsync, self.tracker_fault)


def conditions(crash_model: str = "panic", fsync: bool = True, tracker_fault: str = "none") -> str:
    words = [crash_model, f"fsync {'on' if fsync else 'off'}"]
    if tracker_fault != "none":
        words.append(f"tracker fault: {tracker_fault}")
    return ", ".join(words)


def table_configs(job: Job, crash_model: str = "panic", fsync: bool = True,
                  tracker_fault: str = "none") -> list[Config]:
    return [Config(job, designs.get(d), t, name=name, crash_model=crash_model, fsync=fsync,
                   tracker_fault=tracker_fault) for name, d, t in TABLE]
