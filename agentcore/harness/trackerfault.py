"""A tracker that can crash (`Config.tracker_fault` "crash"): how a scenario plays the tracker's crash.

Rules:
- The tracker keeps its records through a write-ahead log (agentcore.standins.tracker): a request is appended
  (`tracker-logged`), the log synced (`tracker-synced`), then the request is applied and answered
  (`tracker-accepted`). The first two are the tracker's own points, fired only under this fault.
- A crash at one of them is the tracker's, not the agent process's: the tracker restarts from its
  log (an appended request not yet synced is lost, a synced one has happened), the request's
  answer never arrives (the call fails with `TrackerCrashed`, a `ToolFailed`: an unknown outcome
  the loop settles on its ladder), and the agent process goes on with what it holds in memory.
- A scenario's plan crashes segments: a segment is a process, or the rest of a process after a
  tracker crash, and counts its points from 1; each segment's crash plan takes the plan's next
  number. So "the restart" of a once scenario crashed at a tracker point is the rest of the same
  process, and its twice scenarios crash at point q of that rest. Process numbers (run IDs, the
  timeline) count processes only.
- A state noted at a point is what an agent crash there leaves: a twice scenario whose second point
  is a tracker point is played in full (`full_play`), since its process lives on through the crash.
  One whose first point was a tracker crash starts from its note as any other: the note holds the
  tracker as its log rebuilt it, and the crash at q is an agent crash.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from agentcore.crash import TRACKER_KINDS, Crash, Hook
from agentcore.standins.tools import ToolFailed

if TYPE_CHECKING:
    from agentcore.harness.state import World


class TrackerCrashed(ToolFailed):
    """The tracker crashed while it held the request: its answer never arrives."""


def full_play(second_kind: str | None) -> bool:
    """Whether a twice scenario whose second point is of this kind must be played in full."""
    return second_kind in TRACKER_KINDS


class Relay:
    """The hook of a process whose tracker can crash: each point goes to the crash plan of the
    current segment; a crash at a tracker point crashes the tracker, and the process goes on with
    the plan `next_segment` gives (the scenario's: it counts the crash and starts a segment)."""

    __slots__ = ("plan", "world", "next_segment")

    def __init__(self, plan: Hook, world: World, next_segment: Callable[[Crash], Hook]) -> None:
        self.plan = plan
        self.world = world
        self.next_segment = next_segment

    def __call__(self, kind: str, detail: str) -> None:
        try:
            self.plan(kind, detail)
        except Crash as c:
            if kind not in TRACKER_KINDS:
                raise
            log = self.world.log
            self.world.tracker.crash()
            if log is not None:
                log.append(("crash", f"the tracker crashed at point {c.index} of this process: {c.label}"))
                log.append(
                    (
                        "tracker",
                        f"restarted from its log, the synced requests applied: the answer to {detail} never arrives",
                    )
                )
            self.plan = self.next_segment(c)
            raise TrackerCrashed(f"the tracker crashed before answering {detail}") from None
