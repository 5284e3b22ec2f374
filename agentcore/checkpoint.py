"""The checkpoint store: one run's durable state, as JSON in one file.

Rules:
- A save writes the whole state to a temp file beside the checkpoint, then renames it over the
  old one (os.replace is atomic), so a reader sees the old state or the new one, never half.
  Crash points sit between the two steps (save-half-done) and after the rename (save-renamed).
- fsync of the file and its directory is a setting: on for real use (the rename must survive a
  power cut), off in sweeps (a crash here is a killed process, and the page cache survives that).
- A temp file left by a crash is ignored and removed on load: it may be half written.
- Encoding relies on one fact of the loop's state: {"run_id", "done", "turns": [...], ...} where
  only the last turn ever changes. Earlier turns are encoded once and reused, which halves the
  cost of a save late in a run. A state of another shape is encoded whole.
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


class Encoder:
    """State to bytes, reusing the encoding of every turn but the last (see the rules above)."""

    __slots__ = ("done",)

    def __init__(self) -> None:
        self.done: list[tuple[object, str]] = []  # (turn object, its encoding), for closed turns

    def __call__(self, state: dict[str, Any]) -> bytes:
        turns = state.get("turns")
        if not isinstance(turns, list) or not turns:
            return _encode(state).encode()
        cache = self.done
        n = len(turns) - 1
        if len(cache) > n or any(cache[i][0] is not turns[i] for i in range(len(cache))):
            cache.clear()
        while len(cache) < n:
            cache.append((turns[len(cache)], _encode(turns[len(cache)])))
        parts = [c[1] for c in cache]
        parts.append(_encode(turns[-1]))
        rest = {k: v for k, v in state.items() if k != "turns"}
        head = _encode(rest)
        return (head[:-1] + (',"turns":[' if len(head) > 2 else '"turns":[') + ",".join(parts) + "]}").encode()
_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC


class CheckpointError(Exception):
    """The stored checkpoint cannot be read; the message names the file."""


class Store(Protocol):
    """The port a loop saves through; a crash point sits at each step of a save."""

    def load(self) -> dict[str, Any] | None: ...

    def save(self, state: dict[str, Any], what: str) -> None: ...


class FileCheckpoint:
    __slots__ = ("path", "tmp", "fsync", "hook", "saves", "encode")

    def __init__(self, path: str, fsync: bool = True, hook: Hook = no_crash) -> None:
        self.path = path
        self.tmp = path + ".tmp"
        self.fsync = fsync
        self.hook = hook
        self.saves = 0
        self.encode = Encoder()

    def load(self) -> dict[str, Any] | None:
        try:
            os.remove(self.tmp)
        except FileNotFoundError:
            pass
        try:
            with open(self.path, "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            return None
        return parse(raw, self.path)

    def save(self, state: dict[str, Any], what: str) -> None:
        data = self.encode(state)
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
