"""The scenario record (the contract the dashboard stores) and the table row built from records.

Rules:
- One record per scenario: a sweep configuration (job, design, tracker mode, runs in sequence)
  crashed at `first_point` (1-based, counted from the start of the uninterrupted run) and, in a
  twice scenario, again at `second_point` (counted from the start of the first restart), in a
  thrice scenario (depth 3) again at `third_point` (counted from the start of the second restart),
  then run to the end. `second_point` is None in a once scenario, `third_point` in all but thrice
  ones.
- duplicates: extra effects on the tracker (a second issue or comment made by one call of one job
  run); missing: calls of the job script that should have happened and whose effect never did. Both
  are counted against the job script (each changing call of each job run once), not against an
  uninterrupted run, so that a loop whose uninterrupted run is already wrong (a reused run ID)
  shows it. A gated call the person denies (its verdict on the call: agentcore.standins.person) should not
  happen: its absence is not missing, its effect is denied_ran (once per call; a second effect of
  it is a duplicate besides).
- wrong: effects that exist but differ from the same job's uninterrupted, fault-free run (their
  arguments, or the results they depend on); gave_up: the times the loop gave up on a call (a
  process stopped, or moved on, with the call kept failing: agentcore.harness.scenario), and calls a strict
  tracker refused (agentcore.standins.tracker); denied_ran: calls a person denied that ran anyway.
- asks: "did it happen?" questions over all runs, of which `avoidable` a key or a lookup would
  have settled (the rest were necessary: agentcore.durable.ladder grades them); approvals: approval
  prompts (a separate count:
  they are part of the job, not a recovery cost); model_calls over all runs and calls_plus =
  model_calls - (model replies of the job) x runs.
- status: "done" (finished), "waiting" (a question waits for a person in the dashboard's queue),
  "failed" (a call kept failing through every restart agentcore.harness.scenario allows). timeline and
  effects are filled when a sweep is asked for records.
- Every field is JSON: `to_dict`/`from_dict` round-trip exactly.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

from agentcore.errors import BadInput

# The chapter's columns, then the ones its world could not show (0 in the chapter's world).
CHAPTER_COLUMNS = ("once", "twice", "with_dups", "dups", "missing", "asks", "calls_plus")
COLUMNS = (
    "once",
    "twice",
    "with_dups",
    "dups",
    "missing",
    "wrong",
    "gave_up",
    "denied_ran",
    "asks",
    "avoidable",
    "calls_plus",
)
EXTRA_COLUMNS = tuple(c for c in COLUMNS if c not in CHAPTER_COLUMNS)
# thrice (depth 3) is in every format only when a row has some, after twice: a depth-2 table keeps
# its shape to the byte (`columns`).
DEPTH_COLUMNS = ("thrice",)
# The record's outcome fields added after the first stored records: 0 where a stored record lacks them.
_LATER_FIELDS = ("wrong", "gave_up", "denied_ran", "avoidable")
_THIRD = ("third_point", "third_kind", "third_label")


@dataclass(slots=True)
class ScenarioRecord:
    job: str
    design: str
    tracker: str
    runs: int
    first_point: int
    first_kind: str
    first_label: str
    second_point: int | None
    second_kind: str | None
    second_label: str | None
    duplicates: int
    missing: int
    wrong: int
    gave_up: int
    denied_ran: int
    asks: int
    avoidable: int
    approvals: int
    model_calls: int
    calls_plus: int
    status: str
    timeline: list[dict[str, Any]] | None = None
    effects: list[dict[str, Any]] | None = None
    third_point: int | None = None
    third_kind: str | None = None
    third_label: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Every field; the third point's only in a thrice scenario (a depth-2 record keeps its shape)."""
        out = asdict(self)
        if self.third_point is None:
            for f in _THIRD:
                del out[f]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ScenarioRecord:
        names = {f.name for f in fields(cls)}
        unknown = set(data) - names
        if unknown:
            raise BadInput(f"unknown scenario record fields: {', '.join(sorted(unknown))}")
        return cls(**(dict.fromkeys(_LATER_FIELDS, 0) | data))


@dataclass(slots=True)
class TableRow:
    name: str
    once: int = 0
    twice: int = 0
    with_dups: int = 0
    dups: int = 0
    missing: int = 0
    wrong: int = 0
    gave_up: int = 0
    denied_ran: int = 0
    asks: int = 0
    avoidable: int = 0
    calls_plus: int = 0
    thrice: int = 0  # last: rows are built positionally in COLUMNS order

    def add(self, r: ScenarioRecord) -> None:
        if r.second_point is None:
            self.once += 1
        elif r.third_point is None:
            self.twice += 1
        else:
            self.thrice += 1
        self.with_dups += r.duplicates > 0
        self.dups += r.duplicates
        self.missing += r.missing
        self.wrong += r.wrong
        self.gave_up += r.gave_up
        self.denied_ran += r.denied_ran
        self.asks += r.asks
        self.avoidable += r.avoidable
        self.calls_plus += r.calls_plus

    def add_row(self, other: TableRow) -> None:
        """Add the counts of another row (a chunk's, when its records were not kept)."""
        for c in _COUNTS:
            setattr(self, c, getattr(self, c) + getattr(other, c))

    @property
    def scenarios(self) -> int:
        return self.once + self.twice + self.thrice

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if k not in DEPTH_COLUMNS or v}

    def values(self, columns: tuple[str, ...] = COLUMNS) -> tuple[int, ...]:
        return tuple(getattr(self, c) for c in columns)


_COUNTS = COLUMNS + DEPTH_COLUMNS


def columns(rows: Sequence[TableRow] = (), *, thrice: bool = False) -> tuple[str, ...]:
    """COLUMNS, with thrice after twice when some row has a thrice scenario (or `thrice` says so)."""
    if not (thrice or any(r.thrice for r in rows)):
        return COLUMNS
    return COLUMNS[:2] + DEPTH_COLUMNS + COLUMNS[2:]


def table_row(name: str, records: list[ScenarioRecord]) -> TableRow:
    row = TableRow(name)
    for r in records:
        row.add(r)
    return row


def check_writable(path: str) -> None:
    """A records file (--records PATH) can be written: its folder exists (checked before a sweep runs)."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise BadInput(f"--records {path}: folder {folder} does not exist")
