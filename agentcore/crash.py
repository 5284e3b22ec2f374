"""Crash points: where a run can die, and the exception that kills it.

Rules: every crash point is one call of a hook at an I/O boundary, with a kind and a detail; the
point's label is "kind detail", e.g. "tracker-accepted create_issue call_2". A crash is a `Crash`,
derived from BaseException so that no `except Exception` in a loop can swallow it (it stands for a
panic or a kill). The harness throws away everything the crashed run held in memory and starts a
new run object from the checkpoint file and the surviving stand-ins. A crash at one of the tracker's
own points (`TRACKER_KINDS`, fired only by a tracker that can crash) is the tracker's instead: the
process goes on (agentcore.harness.trackerfault).
A files store (agentcore.harness.disk's, the checkpoint's real files) offers the panic points of its
file operations through `CrashPoints`: one state, the files as they are, at each point that changed
something since the last (a file operation that changed nothing offers none).
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import Protocol


class Kind(StrEnum):
    REPLY_ARRIVED = "reply-arrived"
    MARKER_SAVED = "marker-saved"
    TRACKER_ACCEPTED = "tracker-accepted"
    TOOL_RETURNED = "tool-returned"
    TOOL_FAILED = "tool-failed"
    LOOKUP_ANSWERED = "lookup-answered"
    RESULT_SAVED = "result-saved"
    SAVE_HALF_DONE = "save-half-done"  # after the save's write
    SAVE_RENAMED = "save-renamed"
    APPROVAL_PENDING = "approval-pending"
    DECISION_SAVED = "decision-saved"
    # Kinds added later go last: the dashboard's heatmap codes are handed out in this order.
    SAVE_SYNCED = "save-synced"  # after the fsync of the written file
    SAVE_REMOVED = "save-removed"  # after an unlink
    SAVE_DIR_SYNCED = "save-dir-synced"  # after the fsync of the folder
    TRACKER_LOGGED = "tracker-logged"  # the request appended to the tracker's log, not yet synced
    TRACKER_SYNCED = "tracker-synced"  # the log synced, the request not yet applied nor answered


# The points a file operation of a save makes (agentcore.harness.disk: each one's crash may leave the disk
# in several states, and a state the save's previous point offered is not offered again).
FILE_KINDS = frozenset(
    {Kind.SAVE_HALF_DONE, Kind.SAVE_SYNCED, Kind.SAVE_REMOVED, Kind.SAVE_RENAMED, Kind.SAVE_DIR_SYNCED}
)
# The tracker's own points (tracker_fault crash): a crash there is the tracker's (agentcore.harness.trackerfault).
TRACKER_KINDS = frozenset({Kind.TRACKER_LOGGED, Kind.TRACKER_SYNCED})


def label(kind: str, detail: str) -> str:
    return f"{kind} {detail}"


class Crash(BaseException):
    """The run dies here. Never caught by a loop; only the harness catches it."""

    def __init__(self, index: int, kind: str, detail: str) -> None:
        super().__init__(f"crash at point {index}: {label(kind, detail)}")
        self.index = index
        self.kind = kind
        self.label = label(kind, detail)


class Hook(Protocol):
    def __call__(self, kind: str, detail: str) -> None: ...


def no_crash(kind: str, detail: str) -> None:
    """The hook of a run that nobody is sweeping."""


class CrashPlan:
    """Counts the points one process passes and crashes at the chosen one (1-based).

    With `record`, it also lists every point as (kind, label): the sweep records the points of the
    uninterrupted run and of each once-scenario's restart, and only counts everywhere else.
    """

    __slots__ = ("crash_at", "count", "points", "on_point")

    def __init__(self, crash_at: int | None = None, record: bool = False) -> None:
        self.crash_at = crash_at
        self.count = 0
        self.points: list[tuple[str, str]] | None = [] if record else None
        self.on_point: Callable[[], None] | None = None  # called at each point, before a crash

    def __call__(self, kind: str, detail: str) -> None:
        self.count += 1
        if self.points is not None:
            self.points.append((kind, label(kind, detail)))
        if self.on_point is not None:
            self.on_point()
        if self.count == self.crash_at:
            raise Crash(self.count, kind, detail)


State = dict[str, bytes]  # path -> content: the files a crash leaves
AS_IS: list[tuple[str, State | None]] = [("", None)]  # one state: the files as they are (never changed)


class CrashPoints:
    """The panic points of a files store: its `version` counts its changes, `offered` is the version
    the last crash point offered, `in_save` whether that point was a file operation of the save under
    way (the store declares the three in its slots)."""

    __slots__ = ()
    version: int
    offered: int
    in_save: bool

    def begin_save(self) -> None:
        self.in_save = False

    def crash_states(self, file_op: bool) -> list[tuple[str, State | None]]:
        """What a crash here may leave, as (description, files); None: the files as they are."""
        if file_op and self.in_save and self.version == self.offered:
            return []
        self.offered, self.in_save = self.version, file_op
        return AS_IS
