"""What a play is asked to keep (Options) and what it gives back (Played): agentcore.harness.scenario's
terms, apart so that its callers and the merging of states (agentcore.harness.merge) read them alone."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentcore.crash import Crash, CrashPlan
    from agentcore.harness.disk import WorkBudget
    from agentcore.harness.state import Durable


@dataclass(frozen=True, slots=True)
class Options:
    """What a play keeps besides its tallies (each costs time, so each is asked for)."""

    points: bool = False  # every process's crash points, as (kind, label)
    timeline: bool = False  # the events as a timeline, and the tracker's effects at the end
    notes: bool = False  # the durable state at each point of the scenario's second process
    root: bool = False  # notes in the uninterrupted run's process too, with the saves made by each (Played.saved)
    # The steps the play may take (agentcore.harness.disk.WorkBudget), charged as it goes: a caller's bound
    # on the work, not something the play keeps, so it takes no part in comparing options.
    budget: WorkBudget | None = field(default=None, compare=False)


@dataclass(slots=True)
class Played:
    """What one scenario did: the points of each process (when recorded) and the tallies."""

    processes: list[CrashPlan]
    crashes: list[Crash]
    duplicates: int
    missing: int
    asks: int
    approvals: int
    model_calls: int
    saves: int
    status: str
    timeline: list[dict[str, Any]] | None = None
    effects: list[dict[str, Any]] | None = None
    durable: dict[str, Any] | None = None  # set when a question suspended the scenario (the stored shape)
    question: dict[str, Any] | None = None
    restarts: list[Durable] | None = None  # the durable state at each point of process 2
    answers: dict[str, bool] | None = None  # a queue person's answers to the asks made
    saved: list[int] | None = None  # with Options.root: the saves made by each noted point
    wrong: int = 0  # agentcore.records says what these count
    gave_up: int = 0
    denied_ran: int = 0
    avoidable: int = 0
