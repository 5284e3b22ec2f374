"""The simulated disk under the checkpoint store, and what a crash leaves of it (the crash models).

Rules (after ALICE's abstract persistence models and LazyFS; ../shared/design/CRASH-MODELS.md):
- The store's file operations go through the `Files` port (agentcore.durable.checkpoint): read, write a
  whole file (open with create and truncate, write, close), fsync a file, rename, unlink, fsync the
  folder. A crash point sits after each operation; a process dies between two calls of the port.
- `panic` and `kill` (a process dies; the page cache survives): a crash leaves the files as the
  process last wrote them. `MemoryFiles` is that disk.
- `power-cut` (the machine loses power; `PowerCutDisk`): only what was made durable is sure to
  survive. Each file keeps its durable content and the writes since its last fsync (a write is two
  steps: the truncate, then the data); the folder keeps its durable names and the name operations
  since its last fsync (create, rename, unlink). A legal post-crash disk keeps any prefix of the
  folder's pending name operations and, of each file it names, the durable content or the content
  after any prefix of its pending steps, where the data of a write may be torn at a block boundary
  (`BLOCK`: a 512-byte sector, the unit a drive writes whole; small files tear at no boundary;
  a write of more than `MAX_TEARS` + 1 blocks tears at `MAX_TEARS` boundaries spread evenly from
  its first to its last, so that a big checkpoint costs no more points than a small one).
  A rename that survived while the renamed file's data did not names a file with its durable
  content: the empty file of ext4 without an fsync before the rename.
- The states at a point are listed in a fixed order: the state a panic would leave first, then the
  durable-only state, then the rest in a canonical order. Above `MAX_STATES` a point keeps those
  two and a sample of the rest drawn with a seed taken from the states themselves, so that every
  run of a sweep draws the same sample (documented in the README).
- States that differ only in files no load reads (temp files) are one scenario, played from the
  one nearest the panic state: a load reads the checkpoint only, and the next save truncates the
  temp file before it writes and renames it. What this leaves out: which stale bytes a store that
  renames an unsynced temp file shows after a later power cut (the empty file, which the states
  kept still show, catches such a store).
- Within one save (nothing but its file operations in between), a point offers the state as the
  process left it when the operation changed the disk, and the power cut's other states when the
  save's earlier points did not offer what a load would read in them: the restart from a state
  cannot tell where it came from. So an fsync adds no crash point under panic (it changes nothing a
  process crash leaves), the chapter's two points per save (after the temp file's write, after the
  rename) stay its own, and with fsync on a power cut leaves nothing else: the chapter's table.
- A play's work is counted in steps: a crash point passed (agentcore.harness.scenario), a block of a file
  written, and a legal state a power cut may leave, looked at before the sample (without fsync the
  product of every unsynced file's contents, which grows with each job run). A `WorkBudget` (plain
  data the caller passes in) is charged as the play goes, a point's states before they are listed,
  and stops the play (`OverBudget`) past its bound. A `dry` budget lists no power-cut state but the
  two first ones and counts the rest: the uninterrupted run's operations do not depend on the
  states, so its count is exact and costs about what the panic model's run costs.
"""

from __future__ import annotations

import os
import random
import zlib
from collections.abc import Iterable
from itertools import product

from agentcore.crash import CrashPoints, State
from agentcore.errors import AgentcoreError

BLOCK = 512
MAX_STATES = 8
MAX_TEARS = 4


class OverBudget(AgentcoreError):
    """A play would take more steps than its WorkBudget allows."""

    def __init__(self, spent: int, bound: int) -> None:
        super().__init__(f"more than {bound:,} steps of work ({spent:,} counted)")
        self.spent, self.bound = spent, bound


class WorkBudget:
    """The steps plays may take (see the module's rules): `bound` (None: any number), the steps
    charged so far (`spent`), and `dry` to count power-cut states without listing them. One budget
    may be passed to several plays: it is charged across all of them."""

    __slots__ = ("bound", "spent", "dry")

    def __init__(self, bound: int | None = None, dry: bool = False) -> None:
        self.bound, self.spent, self.dry = bound, 0, dry

    def charge(self, states: int) -> None:
        self.spent += states
        if self.bound is not None and self.spent > self.bound:
            raise OverBudget(self.spent, self.bound)


def ram_dir() -> str | None:
    """A RAM-backed folder for real checkpoint files in sweeps, if the machine has one."""
    d = "/dev/shm"
    return d if os.path.isdir(d) and os.access(d, os.W_OK) else None


class MemoryFiles(CrashPoints):
    """Files as a dict of path to bytes: the page cache, which a process crash leaves alone.

    `version` counts the changes, so that a crash point can tell that a file operation (an fsync)
    changed nothing a crash leaves."""

    __slots__ = ("data", "version", "offered", "in_save", "budget")

    def __init__(self, data: State | None = None, budget: WorkBudget | None = None) -> None:
        self.data: State = {} if data is None else data
        self.budget = budget  # charged a step per block written
        self.version = 0
        self.offered = -1  # the version the last crash point offered
        self.in_save = False  # the last crash point was a file operation of the save under way

    def read(self, path: str) -> bytes | None:
        return self.data.get(path)

    def write(self, path: str, data: bytes) -> None:
        if self.budget is not None:
            self.budget.charge(1 + len(data) // BLOCK)
        self.data[path] = data
        self.version += 1

    def sync(self, path: str) -> None:
        """fsync: the page cache is the disk here."""

    def replace(self, src: str, dst: str) -> None:
        try:
            self.data[dst] = self.data.pop(src)
        except KeyError:
            raise FileNotFoundError(src) from None
        self.version += 1

    def remove(self, path: str) -> None:
        if self.data.pop(path, None) is not None:
            self.version += 1

    def sync_dir(self, path: str) -> None:
        """fsync of the folder: nothing to do in the page cache."""

    def reset(self, files: State) -> None:
        """The disk after a crash that left `files`."""
        self.data = dict(files)
        self.version += 1

    def files(self) -> State:
        return dict(self.data)


class PowerCutDisk(MemoryFiles):
    """The page cache (inherited) over a durable layer; see the module's rules."""

    __slots__ = (
        "names",
        "durable_names",
        "pending_names",
        "inodes",
        "durable",
        "pending",
        "next_inode",
        "seen",
        "cached",
        "cached_version",
        "read_paths",
        "syncs",
        "assignments",
        "assigned",
        "contents",
        "reprs",
    )

    def __init__(self, read: Iterable[str] = (), data: State | None = None, budget: WorkBudget | None = None) -> None:
        """`read`: the paths a load reads (the checkpoints); states that differ elsewhere (in temp
        files) are one scenario, as the module's rules say. `budget`: charged for the blocks written
        and the states looked at, before they are listed."""
        super().__init__(budget=budget)
        self.read_paths = frozenset(read)
        self.names: dict[str, int] = {}  # path -> inode, as the process sees them
        self.durable_names: dict[str, int] = {}
        self.pending_names: list[tuple[str, str, str | None, int]] = []  # (op, path, to, inode)
        self.inodes: dict[int, bytes] = {}  # inode -> content, as the process sees it
        self.durable: dict[int, bytes] = {}
        self.pending: dict[int, list[bytes]] = {}  # inode -> the content after each pending step
        self.next_inode = 1
        self.seen: set[frozenset[tuple[str, bytes]]] = set()
        self.cached: list[tuple[frozenset[tuple[str, bytes]], str, State]] = []
        self.cached_version = (-1, -1)
        self.syncs = 0  # fsyncs change what a power cut leaves, not the files as the process sees them
        # per prefix of the pending name operations (the empty one first), the files the paths name
        self.assignments: list[tuple[tuple[tuple[str, int], ...], tuple[tuple[str, int], ...]]] = []
        self.assigned: set[tuple[tuple[str, int], ...]] = set()
        self.contents: dict[int, list[bytes]] = {}  # inode -> what it may hold after a crash
        self.reprs: dict[bytes, bytes] = {}  # a content -> its repr, encoded (for the sample's seed)
        self.reset(data or {})

    def read(self, path: str) -> bytes | None:
        ino = self.names.get(path)
        return None if ino is None else self.inodes[ino]

    def write(self, path: str, data: bytes) -> None:
        if self.budget is not None:
            self.budget.charge(1 + len(data) // BLOCK)
        ino = self.names.get(path)
        if ino is None:
            ino = self.next_inode
            self.next_inode += 1
            self.names[path], self.inodes[ino], self.durable[ino] = ino, b"", b""
            self.pending_names.append(("create", path, None, ino))
            self._assign()
        self.contents.pop(ino, None)
        steps = self.pending.setdefault(ino, [])
        steps += [b"", data]  # the truncate, then the data
        self.inodes[ino] = data
        self.version += 1

    def sync(self, path: str) -> None:
        ino = self.names[path]
        self.durable[ino] = self.inodes[ino]
        self.pending.pop(ino, None)
        self.contents.pop(ino, None)
        self.syncs += 1

    def replace(self, src: str, dst: str) -> None:
        if src not in self.names:
            raise FileNotFoundError(src)
        ino = self.names.pop(src)
        self.names[dst] = ino
        self.pending_names.append(("rename", src, dst, ino))
        self._assign()
        self.version += 1

    def remove(self, path: str) -> None:
        ino = self.names.pop(path, None)
        if ino is not None:
            self.pending_names.append(("unlink", path, None, ino))
            self._assign()
            self.version += 1

    def sync_dir(self, path: str) -> None:
        self.durable_names = dict(self.names)
        self.pending_names = []
        self.assignments, self.assigned = [], set()
        self._assign()
        self.syncs += 1

    def begin_save(self) -> None:
        self.in_save = False

    def crash_states(self, file_op: bool) -> list[tuple[str, State | None]]:
        if (self.version, self.syncs) != self.cached_version:  # points between file operations share them
            self.cached, self.cached_version = self._states(), (self.version, self.syncs)
        states = self.cached
        if file_op and self.in_save:
            # The state as the process left it is a point whenever the operation changed the
            # disk, as under panic; the power cut's own states when a load would read them anew.
            fresh = [
                (d, s)
                for i, (k, d, s) in enumerate(states)
                if (self.version != self.offered if i == 0 else k not in self.seen)
            ]
            self.seen.update(k for k, _, _ in states)
        else:
            fresh = [(d, s) for _, d, s in states]
            self.seen = {k for k, _, _ in states}
        self.in_save, self.offered = file_op, self.version
        return fresh

    def reset(self, files: State) -> None:
        self.names, self.inodes, self.pending, self.pending_names, self.contents = {}, {}, {}, [], {}
        for path, content in files.items():
            self.names[path] = ino = self.next_inode
            self.next_inode += 1
            self.inodes[ino] = content
        self.durable_names, self.durable = dict(self.names), dict(self.inodes)
        self.assignments, self.assigned = [], set()
        self._assign()
        self.version += 1

    def files(self) -> State:
        return {p: self.inodes[i] for p, i in self.names.items()}

    def _assign(self) -> None:
        """Note the folder's names as they are now, a prefix of its pending operations: which file
        each path a load reads names (each such assignment once), and the other paths'."""
        read = tuple(sorted((p, i) for p, i in self.names.items() if p in self.read_paths))
        if read not in self.assigned:
            self.assigned.add(read)
            self.assignments.append((read, tuple((p, i) for p, i in self.names.items() if p not in self.read_paths)))

    def _states(self) -> list[tuple[frozenset[tuple[str, bytes]], str, State]]:
        """Every legal post-crash state, or the sample the module's rules describe, each with its
        key (for telling states apart) and its description."""
        now = self.files()
        if not self.pending_names and not self.pending:  # all durable: one state
            return [(self._key(now), "", now)]
        durable = {p: self.durable[i] for p, i in self.durable_names.items()}
        if self.budget is not None:
            self.budget.charge(self.count())
            if self.budget.dry:
                first = {self._key(now): now}
                first.setdefault(self._key(durable), durable)
                return [(key, describe(state, now), state) for key, state in first.items()]
        # The choices: a prefix of the folder's pending operations, then a content for each file.
        # Only the files a load reads tell states apart, so each assignment of them to files is
        # looked at once (`assignments`), the other files taking their durable content (a legal
        # choice too).
        Key = frozenset[tuple[str, bytes]]
        candidates: dict[Key, tuple[tuple[tuple[str, int], ...], tuple[tuple[str, int], ...], tuple[bytes, ...]]] = {}
        for read, others in self.assignments:
            paths = [p for p, _ in read]
            for contents in product(*(self._contents(i) for _, i in read)):
                candidates.setdefault(frozenset(zip(paths, contents, strict=True)), (read, others, contents))
        out = {self._key(now): now}
        out.setdefault(self._key(durable), durable)
        rest = sorted((key for key in candidates if key not in out), key=sorted)
        if len(out) + len(rest) > MAX_STATES:  # a sample, seeded by the states (the same in every run)
            seed = self._seed(rest)
            rest = sorted(random.Random(seed).sample(rest, MAX_STATES - len(out)), key=sorted)
        for key in rest:
            read, others, contents = candidates[key]
            state = {p: self.durable[i] for p, i in others}
            state.update((p, c) for (p, _), c in zip(read, contents, strict=True))
            out[key] = state
        return [(key, describe(state, now), state) for key, state in out.items()]

    def count(self) -> int:
        """The legal post-crash states `_states` would look at here (before telling equal ones
        apart), counted without listing them."""
        total = 0
        for read, _ in self.assignments:
            n = 1
            for _, i in read:
                n *= len(self._contents(i))
            total += n
        return total

    def _seed(self, keys: list[frozenset[tuple[str, bytes]]]) -> int:
        """zlib.crc32 of repr([sorted(key) for key in keys]), the sample's seed, computed piece by
        piece with each content's repr made once: a checkpoint of many blocks is in every key, and
        the repr of the whole list cost most of a point's time."""
        crc = zlib.crc32(b"[")
        for n, key in enumerate(keys):
            crc = zlib.crc32(b", [" if n else b"[", crc)
            for m, (path, content) in enumerate(sorted(key)):
                text = self.reprs.get(content)
                if text is None:
                    text = self.reprs[content] = repr(content).encode()
                crc = zlib.crc32(b"%s(%s, " % (b", " if m else b"", repr(path).encode()), crc)
                crc = zlib.crc32(text + b")", crc)
            crc = zlib.crc32(b"]", crc)
        return zlib.crc32(b"]", crc)

    def _key(self, state: State) -> frozenset[tuple[str, bytes]]:
        return frozenset((p, c) for p, c in state.items() if p in self.read_paths)

    def _contents(self, ino: int) -> list[bytes]:
        """What a file may hold after the crash: durable content, or any prefix of its pending
        steps, a write torn at a block boundary (kept until the file's next write or fsync)."""
        out = self.contents.get(ino)
        if out is None:
            out = [self.durable[ino]]
            for content in self.pending.get(ino, []):
                out += [content[:n] for n in tears(len(content))]
                out.append(content)
            out = self.contents[ino] = list(dict.fromkeys(out))
        return out


def tears(size: int) -> list[int]:
    """Where a write of `size` bytes may tear: block boundaries, at most MAX_TEARS of them."""
    cuts = range(BLOCK, size, BLOCK)
    if len(cuts) <= MAX_TEARS:
        return list(cuts)
    return [cuts[i * (len(cuts) - 1) // (MAX_TEARS - 1)] for i in range(MAX_TEARS)]


def _order(state: State) -> list[tuple[str, bytes]]:
    return sorted(state.items())


def _canonical(state: State) -> bytes:
    return repr(sorted(state.items())).encode()


def describe(state: State, now: State) -> str:
    """How a post-crash state differs from the files as the process left them ("" if it does not),
    e.g. " [power cut: run-1.json empty; run-1.json.tmp gone]"."""
    if state == now:
        return ""
    words = []
    for path in sorted(set(state) | set(now)):
        name = path.rsplit("/", 1)[-1]
        if path not in state:
            words.append(f"{name} gone")
        elif path not in now:
            words.append(f"{name} back")
        elif state[path] == now[path]:
            continue
        elif not state[path]:
            words.append(f"{name} empty")
        elif now[path].startswith(state[path]):
            words.append(f"{name} torn at {len(state[path])} of {len(now[path])} bytes")
        else:
            words.append(f"{name} older")
    return f" [power cut: {'; '.join(words)}]"
