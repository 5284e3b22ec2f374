"""The checkpoint store: one run's durable state, as JSON in one file.

Rules:
- A save writes the whole state to a temp file beside the checkpoint, fsyncs it, renames it over
  the old one (os.replace is atomic) and fsyncs the folder, so that a reader sees the old state or
  the new one, never half, and a power cut cannot undo the save. A crash point sits after each
  step (save-half-done, save-synced, save-renamed, save-dir-synced); agentcore.harness.disk says what a
  crash at each leaves under each crash model.
- fsync is a setting (on by default): a sweep with it off shows what the missing syncs cost.
- A load only reads: a temp file left by a crash is ignored (the next save truncates it).
- A checkpoint that is not valid JSON of the expected shape is an error naming the file. Starting
  from scratch instead would silently redo every effect the run already had.
- The file operations sit behind a port, `Files`: `OsFiles` is the real file system; the
  simulated disks of agentcore.harness.disk hold the files in memory that outlives the crashed process
  object. The save protocol above is the same code over all, so a sweep can use either: memory by
  default (no system calls: ten thousand scenarios make ~54,000 saves), real files on request,
  with the same records (a test compares them).
- The planted store bugs (designs.STORE_BUGS) are here too, each one step of the protocol done
  wrong, so that a test can show which crash model catches it.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, Protocol

from agentcore.crash import CrashPoints, Hook, Kind, no_crash
from agentcore.errors import AgentcoreError

if TYPE_CHECKING:
    from agentcore.durable.designs import Design

# One encoder for every save: json.dumps with options builds a new one per call.
_encode = json.JSONEncoder(separators=(",", ":"), check_circular=False).encode


_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
_CHUNK = 1 << 16


class CheckpointError(AgentcoreError):
    """The stored checkpoint cannot be read; the message names the file."""


class Files(Protocol):
    """The file operations a checkpoint makes; a crash point sits after each one (agentcore.harness.disk)."""

    def read(self, path: str) -> bytes | None:
        """The file's bytes, or None if there is no such file."""

    def write(self, path: str, data: bytes) -> None:
        """Create or truncate the file and write all of data."""

    def sync(self, path: str) -> None:
        """fsync the file: its content survives a power cut."""

    def replace(self, src: str, dst: str) -> None:
        """Rename src over dst in one step."""

    def remove(self, path: str) -> None:
        """Remove the file if it is there."""

    def sync_dir(self, path: str) -> None:
        """fsync the folder that holds path: its names (a rename, an unlink) survive a power cut."""

    def begin_save(self) -> None:
        """A save starts (a simulated disk tells the save's crash points apart from the others)."""


class OsFiles(CrashPoints):
    """Real files, with the panic points of agentcore.crash.CrashPoints (as the simulated disks)."""

    __slots__ = ("version", "offered", "in_save")

    def __init__(self) -> None:
        self.version = 0
        self.offered = -1
        self.in_save = False

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
        finally:
            os.close(fd)
        self.version += 1

    def sync(self, path: str) -> None:
        _fsync(path)

    def replace(self, src: str, dst: str) -> None:
        os.replace(src, dst)
        self.version += 1

    def remove(self, path: str) -> None:
        try:
            os.remove(path)
        except FileNotFoundError:
            return
        self.version += 1

    def sync_dir(self, path: str) -> None:
        _fsync(os.path.dirname(os.path.abspath(path)))


def _fsync(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Store(Protocol):
    """The port a loop saves through; a crash point sits at each step of a save."""

    def load(self) -> dict[str, Any] | None: ...

    def save(self, state: dict[str, Any], what: str) -> None: ...


class FileCheckpoint:
    __slots__ = ("path", "tmp", "files", "hook", "saves", "fsync", "bugs")

    def __init__(
        self,
        path: str,
        fsync: bool = True,
        hook: Hook = no_crash,
        files: Files | None = None,
        bugs: Design | None = None,
    ) -> None:
        """`files` puts the checkpoint elsewhere than real files; `bugs`: a design whose planted
        store bugs (designs.STORE_BUGS) this store has."""
        self.path = path
        self.tmp = path + ".tmp"
        self.files: Files = OsFiles() if files is None else files
        self.hook = hook
        self.saves = 0
        self.fsync = fsync
        self.bugs = bugs

    def load(self) -> dict[str, Any] | None:
        raw = self.files.read(self.path)
        if raw is None:
            return None
        return parse(raw, self.path)

    def save(self, state: dict[str, Any], what: str) -> None:
        data = _encode(state).encode()
        files, hook, bugs = self.files, self.hook, self.bugs
        files.begin_save()
        if bugs is not None and bugs.write_in_place:
            files.write(self.path, data)
            hook(Kind.SAVE_HALF_DONE, what)
            self.saves += 1
            self._sync(self.path, what, True, True)
            return
        files.write(self.tmp, data)
        hook(Kind.SAVE_HALF_DONE, what)
        self._sync(self.tmp, what, bugs is None or not bugs.skip_file_fsync, False)
        if bugs is not None and bugs.remove_then_rename:
            files.remove(self.path)
            hook(Kind.SAVE_REMOVED, what)
        files.replace(self.tmp, self.path)
        self.saves += 1
        hook(Kind.SAVE_RENAMED, what)
        self._sync(self.path, what, False, bugs is None or not bugs.skip_dir_fsync)

    def _sync(self, path: str, what: str, file: bool, folder: bool) -> None:
        if not self.fsync:
            return
        if file:
            self.files.sync(path)
            self.hook(Kind.SAVE_SYNCED, what)
        if folder:
            self.files.sync_dir(path)
            self.hook(Kind.SAVE_DIR_SYNCED, what)


def completes_save(kind: str, design: Design) -> bool:
    """Whether the point `kind` is where a save of `design`'s store counts as made (`saves` is
    counted just before it)."""
    return kind == Kind.SAVE_RENAMED or (design.write_in_place and kind == Kind.SAVE_HALF_DONE)


def parse(raw: bytes, name: str) -> dict[str, Any]:
    """Checkpoint bytes to state; `name` says where they came from (a file, a database row)."""
    try:
        state = json.loads(raw)
    except (ValueError, RecursionError) as e:  # bad JSON or UTF-8, a 5,000-digit number, nesting too deep
        raise CheckpointError(f"{name}: corrupt or truncated checkpoint ({type(e).__name__}: {e})") from None
    if (
        not isinstance(state, dict)
        or not isinstance(state.get("run_id"), str)
        or not isinstance(state.get("turns"), list)
    ):
        raise CheckpointError(f"{name}: not a checkpoint (needs an object with run_id and turns)")
    return state
