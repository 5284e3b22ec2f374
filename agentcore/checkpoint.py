"""The checkpoint store: one run's durable state, as JSON in one file.

Rules:
- A save writes the whole state to a temp file beside the checkpoint, then renames it over the
  old one (os.replace is atomic), so a reader sees the old state or the new one, never half.
  Crash points sit between the two steps (save-half-done) and after the rename (save-renamed).
- fsync of the file and its directory is a setting: on for real use (the rename must survive a
  power cut), off in sweeps (a crash here is a killed process, and the page cache survives that).
- A temp file left by a crash is ignored and removed on load: it may be half written.
- A checkpoint that is not valid JSON of the expected shape is an error naming the file. Starting
  from scratch instead would silently redo every effect the run already had.
"""

from __future__ import annotations

import json
import os
from typing import Any, Protocol

from agentcore.crash import Hook, Kind, no_crash

# One encoder for every save: json.dumps with options builds a new one per call.
_encode = json.JSONEncoder(separators=(",", ":"), check_circular=False).encode


_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
_CHUNK = 1 << 16


class CheckpointError(Exception):
    """The stored checkpoint cannot be read; the message names the file."""


class Store(Protocol):
    """The port a loop saves through; a crash point sits at each step of a save."""

    def load(self) -> dict[str, Any] | None: ...

    def save(self, state: dict[str, Any], what: str) -> None: ...


class FileCheckpoint:
    # `disk` and `pending` mirror what the files hold (the checkpoint, and a temp file between
    # write and rename), so that a sweep can note the durable state at a point without reading.
    __slots__ = ("path", "tmp", "fsync", "hook", "saves", "disk", "pending")

    def __init__(self, path: str, fsync: bool = True, hook: Hook = no_crash) -> None:
        self.path = path
        self.tmp = path + ".tmp"
        self.fsync = fsync
        self.hook = hook
        self.saves = 0
        self.disk: bytes | None = None
        self.pending: bytes | None = None

    def load(self) -> dict[str, Any] | None:
        try:
            os.remove(self.tmp)
        except FileNotFoundError:
            pass
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:
            raw = os.read(fd, _CHUNK)
            if len(raw) == _CHUNK:  # a big checkpoint: read the rest
                raw += b"".join(iter(lambda: os.read(fd, _CHUNK), b""))
        finally:
            os.close(fd)
        self.disk = raw
        return parse(raw, self.path)

    def save(self, state: dict[str, Any], what: str) -> None:
        data = self.pending = _encode(state).encode()
        fd = os.open(self.tmp, _FLAGS, 0o644)
        try:
            os.write(fd, data)
            if self.fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        self.hook(Kind.SAVE_HALF_DONE, what)
        os.replace(self.tmp, self.path)
        if self.fsync:
            fd = os.open(os.path.dirname(os.path.abspath(self.path)), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        self.disk, self.pending = data, None
        self.saves += 1
        self.hook(Kind.SAVE_RENAMED, what)


def parse(raw: bytes, name: str) -> dict[str, Any]:
    """Checkpoint bytes to state; `name` says where they came from (a file, a database row)."""
    try:
        state = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CheckpointError(f"{name}: corrupt or truncated checkpoint ({e})") from None
    if not isinstance(state, dict) or not isinstance(state.get("run_id"), str) or not isinstance(
        state.get("turns"), list
    ):
        raise CheckpointError(f"{name}: not a checkpoint (needs an object with run_id and turns)")
    return state
