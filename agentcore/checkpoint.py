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
- The file operations sit behind a port, `Files`: `OsFiles` is the real file system; `MemoryFiles`
  holds the files in a dict that outlives the crashed process object, as the page cache outlives
  a killed process. The save protocol above is the same code over both, so a sweep can use either:
  memory by default (no system calls: ten thousand scenarios make ~54,000 saves), real files on
  request, with the same records (a test compares them).
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


class Files(Protocol):
    """The file operations a checkpoint makes; a crash point can sit between any two of them."""

    def read(self, path: str) -> bytes | None:
        """The file's bytes, or None if there is no such file."""

    def write(self, path: str, data: bytes) -> None:
        """Create or truncate the file and write all of data."""

    def replace(self, src: str, dst: str) -> None:
        """Rename src over dst in one step."""

    def remove(self, path: str) -> None:
        """Remove the file if it is there."""


class OsFiles:
    """Real files; with fsync, a write reaches the disk before it returns and so does a rename
    (the folder is synced), so that a power cut cannot undo a save."""

    __slots__ = ("fsync",)

    def __init__(self, fsync: bool = True) -> None:
        self.fsync = fsync

    def read(self, path: str) -> bytes | None:
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:
            raw = os.read(fd, _CHUNK)
            if len(raw) == _CHUNK:  # a big file: read the rest
                raw += b"".join(iter(lambda: os.read(fd, _CHUNK), b""))
        finally:
            os.close(fd)
        return raw

    def write(self, path: str, data: bytes) -> None:
        fd = os.open(path, _FLAGS, 0o644)
        try:
            os.write(fd, data)
            if self.fsync:
                os.fsync(fd)
        finally:
            os.close(fd)

    def replace(self, src: str, dst: str) -> None:
        os.replace(src, dst)
        if self.fsync:
            fd = os.open(os.path.dirname(os.path.abspath(dst)), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def remove(self, path: str) -> None:
        try:
            os.remove(path)
        except FileNotFoundError:
            pass


class MemoryFiles:
    """Files as a dict of path to bytes, for sweeps: the dict is the part of the machine a crash
    leaves alone."""

    __slots__ = ("data",)

    def __init__(self, data: dict[str, bytes] | None = None) -> None:
        self.data: dict[str, bytes] = {} if data is None else data

    def read(self, path: str) -> bytes | None:
        return self.data.get(path)

    def write(self, path: str, data: bytes) -> None:
        self.data[path] = data

    def replace(self, src: str, dst: str) -> None:
        try:
            self.data[dst] = self.data.pop(src)
        except KeyError:
            raise FileNotFoundError(src) from None

    def remove(self, path: str) -> None:
        self.data.pop(path, None)


class Store(Protocol):
    """The port a loop saves through; a crash point sits at each step of a save."""

    def load(self) -> dict[str, Any] | None: ...

    def save(self, state: dict[str, Any], what: str) -> None: ...


class FileCheckpoint:
    # `disk` and `pending` mirror what the files hold (the checkpoint, and a temp file between
    # write and rename), so that a sweep can note the durable state at a point without reading.
    __slots__ = ("path", "tmp", "files", "hook", "saves", "disk", "pending")

    def __init__(self, path: str, fsync: bool = True, hook: Hook = no_crash, files: Files | None = None) -> None:
        """`fsync` applies to the default, real files; `files` puts the checkpoint elsewhere."""
        self.path = path
        self.tmp = path + ".tmp"
        self.files: Files = OsFiles(fsync) if files is None else files
        self.hook = hook
        self.saves = 0
        self.disk: bytes | None = None
        self.pending: bytes | None = None

    def load(self) -> dict[str, Any] | None:
        self.files.remove(self.tmp)
        raw = self.files.read(self.path)
        if raw is None:
            return None
        self.disk = raw
        return parse(raw, self.path)

    def save(self, state: dict[str, Any], what: str) -> None:
        data = self.pending = _encode(state).encode()
        self.files.write(self.tmp, data)
        self.hook(Kind.SAVE_HALF_DONE, what)
        self.files.replace(self.tmp, self.path)
        self.disk, self.pending = data, None
        self.saves += 1
        self.hook(Kind.SAVE_RENAMED, what)


def parse(raw: bytes, name: str) -> dict[str, Any]:
    """Checkpoint bytes to state; `name` says where they came from (a file, a database row)."""
    try:
        state = json.loads(raw)
    except (ValueError, RecursionError) as e:  # bad JSON or UTF-8, a 5,000-digit number, nesting too deep
        raise CheckpointError(f"{name}: corrupt or truncated checkpoint ({type(e).__name__}: {e})") from None
    if not isinstance(state, dict) or not isinstance(state.get("run_id"), str) or not isinstance(
        state.get("turns"), list
    ):
        raise CheckpointError(f"{name}: not a checkpoint (needs an object with run_id and turns)")
    return state
