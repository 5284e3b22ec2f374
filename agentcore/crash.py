"""Crash points: where a run can die, and the exception that kills it.

Rules: every crash point is one call of a hook at an I/O boundary, with a kind and a label such
as "tracker-accepted create_issue call_2". A crash is a `Crash`, derived from BaseException so
that no `except Exception` in a loop can swallow it (it stands for a panic or a kill). The
harness throws away everything the crashed run held in memory and starts a new run object from
the checkpoint file and the surviving stand-ins.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Protocol


class Kind(StrEnum):
    REPLY_ARRIVED = "reply-arrived"
    MARKER_SAVED = "marker-saved"
    TRACKER_ACCEPTED = "tracker-accepted"
    TOOL_RETURNED = "tool-returned"
    TOOL_FAILED = "tool-failed"
    RESULT_SAVED = "result-saved"
    SAVE_HALF_DONE = "save-half-done"
    SAVE_RENAMED = "save-renamed"
    APPROVAL_PENDING = "approval-pending"
    DECISION_SAVED = "decision-saved"


class Crash(BaseException):
    """The run dies here. Never caught by a loop; only the harness catches it."""

    def __init__(self, index: int, kind: str, label: str) -> None:
        super().__init__(f"crash at point {index}: {kind} {label}")
        self.index = index
        self.kind = kind
        self.label = label


class Hook(Protocol):
    def __call__(self, kind: str, label: str) -> None: ...


def no_crash(kind: str, label: str) -> None:
    """The hook of a run that nobody is sweeping."""


class CrashPlan:
    """Counts the points one run passes, lists them, and crashes at the chosen one (1-based)."""

    __slots__ = ("crash_at", "count", "points")

    def __init__(self, crash_at: int | None = None) -> None:
        self.crash_at = crash_at
        self.count = 0
        self.points: list[tuple[str, str]] = []

    def __call__(self, kind: str, label: str) -> None:
        self.count += 1
        self.points.append((kind, label))
        if self.count == self.crash_at:
            raise Crash(self.count, kind, label)
