"""Judging the audit's scenarios: each record's outcome under its world, counted by (design, tracker mode).

Rules:
- A scenario (its record) is judged by `judge`: "ok" (no duplicate, missing, wrong or denied-yet-
  run effect, and not "corrupt"); else an "expected" loss where the world makes it unavoidable and
  the design reports rather than hides it; else a "break". Expected losses, by world (`excuse`):
  tool faults (the tool does not recover within MAX_ATTEMPTS attempts, or never): effects missing
  in a scenario that ended "failed" (the loop gave up on a call more often than the restarts allow:
  the tool never recovered), with nothing doubled or wrong. A scenario that gave up and still ended
  "done" had a tool that recovered: a restart must then make every effect, so its missing ones are a
  break (a loop that skips a given-up call and moves on, the planted bug skip_given_up); a wrong
  or lying person (wrong:P, adversarial): any double, loss or wrong effect of a scenario that
  asked the person (the ladder asks only when no key and no lookup can settle the call: there was
  nothing to check the lie against; the record does not say whether an answer was a lie, so a
  scenario whose answers all happened to be true is excused too: a loss with a truthful person is
  caught in the worlds where the person is truthful, which every design is swept under first);
  power-cut without fsync: doubles, losses and corrupt checkpoints (the store did not sync: the
  chapter's advice is to sync, and no design survives a disk that keeps no write), but not wrong
  effects. A denied call that ran is always a break.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from agentcore.checker.variants import Variant
from agentcore.checker.witness import Witness
from agentcore.checker.worlds import World
from agentcore.config import config_name
from agentcore.durable.designs import Design
from agentcore.jobs import Job
from agentcore.records import ScenarioRecord

CANDIDATES = 16  # breaking scenarios replayed per broken (design, tracker mode) to find the shortest
OK, EXPECTED, BREAK = "ok", "expected", "break"


def judge(r: ScenarioRecord, w: World) -> str:
    """OK, EXPECTED or BREAK for one scenario's record under world `w` (the module's rules)."""
    if not (r.duplicates or r.missing or r.wrong or r.denied_ran or r.status == "corrupt"):
        return OK
    if r.denied_ran:
        return BREAK
    if w.excuse == "tool" and r.gave_up and r.status == "failed" and not (r.duplicates or r.wrong):
        return EXPECTED
    if w.excuse == "person" and r.asks and r.status != "corrupt":
        return EXPECTED
    if w.excuse == "fsync" and not r.wrong:
        return EXPECTED
    return BREAK


def promise(r: ScenarioRecord) -> int:
    """How long a scenario's timeline promises to be, from its record: each model reply, question,
    approval and extra effect is an event or more, and each crash two (the crash and the restart)."""
    return r.model_calls + r.asks + r.approvals + r.duplicates + (4 if r.second_point is not None else 2)


@dataclass(slots=True)
class Cell:
    """One (design, tracker mode) under one world model, over every variant."""

    scenarios: int = 0
    breaks: int = 0
    expected: int = 0
    skipped: str = ""  # why it was not swept ("" if it was)
    # the breaking scenarios most promising as a witness, as a max-heap: (-promise, -seen, config, record)
    candidates: list[tuple[int, int, int, ScenarioRecord]] = field(default_factory=list)

    @property
    def text(self) -> str:
        """The Markdown table's cell: "safe", the count of breaking scenarios, or "n/a"."""
        if self.skipped:
            return "n/a"
        if self.breaks:
            return str(self.breaks)
        return f"safe ({self.expected} expected)" if self.expected else "safe"


@dataclass(slots=True)
class Subject:
    """One (design, tracker mode) audited: its cells by world, and its verdict."""

    design: Design
    tracker: str
    cells: dict[str, Cell] = field(default_factory=dict)
    broken: str = ""  # the first world that breaks it ("" while none does)
    witness: Witness | None = None

    @property
    def name(self) -> str:
        return config_name(self.design.name, self.tracker)


@dataclass(slots=True)
class AuditResult:
    job: Job
    depth: int
    worlds: list[World]
    variants: list[Variant]
    skipped: list[tuple[str, str]]
    subjects: list[Subject]
    scenarios: int = 0


def tally(cell: Cell, r: ScenarioRecord, w: World, config: int, seen: int, keep: bool = True) -> str:
    """Count one scenario's record in its cell under world `w` and, if it breaks and `keep`, offer it
    as a witness candidate (`config` indexes the sweep's configurations, `seen` orders ties: the
    earlier swept wins); its judge outcome. The one counting of the CLI and the dashboard."""
    cell.scenarios += 1
    outcome = judge(r, w)
    if outcome == EXPECTED:
        cell.expected += 1
    elif outcome == BREAK:
        cell.breaks += 1
        if keep:
            heapq.heappush(cell.candidates, (-promise(r), -seen, config, r))
            if len(cell.candidates) > CANDIDATES:  # drop the least promising, the later of a tie
                heapq.heappop(cell.candidates)
    return outcome
