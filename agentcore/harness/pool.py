"""The sweep's pool of worker processes: chunks, and the restarts of merged chunks, played in parallel.

Rules:
- Where a few configurations' chunks merge equal states (agentcore.harness.merge), the workers share their
  restarts: this process plays
  each configuration's run to its first points, then hands out each distinct restart (by its state's
  key) to be played once by one worker (`merge.step`), which sends back its outcome, its points with
  the keys of the states a crash there leaves, and each state it has not sent before; this process
  hands out the states no worker has played yet, and builds each chunk's records from the trees
  once they are whole (`chunks.tree_result`). So two workers play what one plays (the same
  `explored`), and records are built once, here, with no record sent between processes. Other
  chunks (timelines kept, a queue person, kill, a tracker that can crash) go to a worker whole, a
  few to a task (fewer toward the end, so that the workers finish together).
- A sweep of many merged configurations (at least BY_CONFIGURATION per worker: the table's 11 on
  up to 3 workers, an audit) sends each configuration's chunks to one worker together instead, the
  biggest first: memos are per configuration, so a worker with all of one plays what one process
  plays, and a restart costs no message (the table's restarts cost about as much as a message);
  the worker builds the records (or rows) and sends them back.
- A sweep that needs only its table (`keep=False`) keeps no record: chunks give their rows
  (agentcore.harness.chunks). A merged chunk's row is its tree's tally: no record is built anywhere; an
  unmerged chunk's worker builds its records and sends back only their row.
- The workers are concurrent.futures' ProcessPoolExecutor, forked: multiprocessing.Pool's worker
  handler thread woke at every result not yet read, taking CPU from the workers
  (bench/bench_workers.py times it).
"""

from __future__ import annotations

import heapq
import os
import queue
from collections.abc import Callable, Iterator
from dataclasses import fields
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from agentcore.harness import merge as merging
from agentcore.harness.chunks import Chunk, ChunkResult, from_tree, merged, run_chunk
from agentcore.harness.state import Durable
from agentcore.records import ScenarioRecord

if TYPE_CHECKING:
    from agentcore.config import Config

_CONFIGS: list[Config] = []
_OPTIONS: dict[str, Any] = {}
_SENT: set[tuple[int, bytes]] = set()  # in a worker process: the states it has sent back
NODES_PER_TASK = 16  # at most: a task of restarts is a few milliseconds, its sending a fraction of one
IN_FLIGHT = 2  # tasks of restarts per worker in the pool: one played, one waiting, none idle
BY_CONFIGURATION = 3  # merged configurations per worker from which each goes to a worker whole
WHOLE_PER_TASK = 8  # at most: chunks played whole go out a few to a task, fewer toward the end


def _plain(obj: Durable | merging.Outcome | ScenarioRecord) -> tuple[Any, ...]:
    """Its fields in order (Durable(*t), Outcome(*t), ScenarioRecord(*t) take them back): a dataclass
    with slots pickles and unpickles five times as slowly as the tuple, and a sweep sends thousands."""
    get = _GETTERS.get(type(obj))
    if get is None:
        get = _GETTERS[type(obj)] = attrgetter(*(f.name for f in fields(obj)))
    return get(obj)


_GETTERS: dict[type, Callable[[Any], tuple[Any, ...]]] = {}


# A restart a worker plays: configuration index, key, crashes still to come, the state it starts
# from (_plain)
Restart = tuple[int, bytes, int, tuple[Any, ...]]
# What comes back, column by column (the sweep's process takes them with set and sum, in C): the
# configuration index, key, outcome (_plain), per point the key of the state a crash there leaves
# and the counters added there, the points' kinds and labels (None where no record is kept: a row
# needs none), and the states (_plain) this worker had not sent before, by key
Node = tuple[
    int,
    bytes,
    tuple[Any, ...],
    tuple[bytes, ...],
    tuple[merging.Counters, ...],
    tuple[tuple[str, str], ...] | None,
    dict[bytes, tuple[Any, ...]],
]
# A played restart, kept until the restarts below it are back: outcome, keys, counters added, kinds and labels
_Played = tuple[merging.Outcome, tuple[bytes, ...], tuple[merging.Counters, ...], tuple[tuple[str, str], ...] | None]


def _workdir() -> str | None:
    base = _OPTIONS["base"]
    if base is None:
        return None
    d = os.path.join(base, f"w{os.getpid()}")
    os.makedirs(d, exist_ok=True)
    return d


def _worker(items: list[tuple[int, Chunk]]) -> tuple[tuple[int, ChunkResult, list[tuple[Any, ...]]], ...]:
    """A pool process runs chunks (numbered) whole, in order. Records travel back as plain tuples:
    pickling ten thousand dataclass instances field by field cost more than a tenth of a second on
    each side."""
    out, d = [], _workdir()
    for i, chunk in items:
        res = run_chunk(
            _CONFIGS[chunk.config],
            chunk,
            _OPTIONS["depth"],
            d,
            _OPTIONS["collect"],
            _OPTIONS["merge"],
            _OPTIONS["keep"],
        )
        rows = list(map(_plain, res.records))
        res.records = []
        out.append((i, res, rows))
    return tuple(out)


def _restarts(batch: list[Restart]) -> list[Node]:
    """A pool process plays each restart once (agentcore.harness.merge.step)."""
    d = _workdir()
    out = []
    keep = _OPTIONS["keep"]
    for ci, k, crashes, state in batch:
        cfg = _CONFIGS[ci]
        done, pts = merging.step(cfg, Durable(*state), crashes, d)
        keys = tuple(merging.key(cfg, note, crashes - 1) for _, _, _, note in pts)
        new: dict[bytes, tuple[Any, ...]] = {}
        for ck, (_, _, _, note) in zip(keys, pts, strict=True):
            if (ci, ck) not in _SENT:
                _SENT.add((ci, ck))
                new[ck] = _plain(note)
        where = tuple((kind, label) for kind, label, _, _ in pts) if keep else None
        out.append((ci, k, _plain(done), keys, tuple(added for _, _, added, _ in pts), where, new))
    return out


def run_parallel(
    configs: list[Config],
    chunks: list[Chunk],
    depth: int,
    workers: int,
    base: str | None,
    collect: bool,
    merge: bool,
    keep: bool,
) -> Iterator[ChunkResult]:
    """agentcore.harness.sweep.run_chunks with a pool of `workers` processes (forked: they inherit the
    configurations and options), checkpoint files under `base` if given."""
    _CONFIGS[:] = configs
    _OPTIONS.update(base=base, depth=depth, collect=collect, merge=merge, keep=keep)
    # Here: a one-worker sweep starts without them.
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(workers, multiprocessing.get_context("fork"))
    try:
        yield from _Parallel(configs, chunks, depth, workers, pool, base, collect, merge).run()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


class _Parallel:
    """run_chunks with a pool of workers, as the module's rules say. Restarts go out in the order of
    the first chunk that reaches them, a few tasks per worker at a time: chunks come whole in their
    order, as in one process, so progress shows as it goes."""

    def __init__(
        self,
        configs: list[Config],
        chunks: list[Chunk],
        depth: int,
        workers: int,
        pool: Any,
        base: str | None,
        collect: bool,
        merge: bool,
    ) -> None:
        self.configs, self.chunks, self.depth, self.workers, self.pool = configs, chunks, depth, workers, pool
        self.here = None if base is None else os.path.join(base, "main")
        self.merged = [merged(configs[c.config], c, collect, merge) for c in chunks]
        self.results: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.whole: dict[int, ChunkResult] = {}  # chunks played whole, by number
        self.roots: dict[int, tuple[Durable, int, bytes]] = {}  # merged chunks: state, saves, key
        # Per configuration, by a restart's key: the restarts known (crashes still to come and the
        # first chunk that reaches them), those not handed out yet, those played (as sent back), and
        # those whose restarts below are all back too: built into a tree, or a tally where no
        # record is kept.
        self.known: list[dict[bytes, tuple[int, int]]] = [{} for _ in configs]
        self.pending: list[dict[bytes, Restart]] = [{} for _ in configs]
        self.nodes: list[dict[bytes, _Played]] = [{} for _ in configs]
        self.built: list[dict[bytes, merging.Tree | merging.Tally]] = [{} for _ in configs]
        self.heap: list[tuple[int, int, int, bytes]] = []  # (chunk, seq, configuration, key) over pending
        self.seq = self.waiting = 0  # restarts made known; pending in all
        self.flying = 0  # tasks of restarts handed out, their results not yet taken
        self.counted = self.count = 0  # restarts built, in chunks' `explored` so far and in all

    def run(self) -> Iterator[ChunkResult]:
        merged_by_config: dict[int, list[tuple[int, Chunk]]] = {}
        for i, chunk in enumerate(self.chunks):
            if self.merged[i]:
                merged_by_config.setdefault(chunk.config, []).append((i, chunk))
        tasks: list[list[tuple[int, Chunk]]] = []
        grouped: set[int] = set()
        if len(merged_by_config) >= BY_CONFIGURATION * self.workers:
            tasks = sorted(merged_by_config.values(), key=len, reverse=True)
            grouped = {i for group in tasks for i, _ in group}
            for i in grouped:
                self.merged[i] = False  # merged in a worker, so here a chunk that comes back whole
        # Early first points have the longest restarts: those go out first, in tasks of a few chunks (a
        # task costs the sweep's process half a millisecond), each a quarter of a worker's share of those left.
        whole = [
            (i, self.chunks[i])
            for i in sorted(range(len(self.chunks)), key=lambda i: self.chunks[i].first)
            if not self.merged[i] and i not in grouped
        ]
        at = 0
        while at < len(whole):
            size = max(1, min(WHOLE_PER_TASK, (len(whole) - at) // (4 * self.workers)))
            tasks.append(whole[at : at + size])
            at += size
        for items in tasks:
            self._send(_worker, items)
        if self.here is not None:
            os.makedirs(self.here, exist_ok=True)
        for i, chunk in enumerate(self.chunks):
            if self.merged[i]:
                cfg = self.configs[chunk.config]
                state, saves = merging.memo(cfg).first(chunk.first, self.here)
                k = merging.key(cfg, state, self.depth - 1)
                self.roots[i] = state, saves, k
                self._know(i, (chunk.config, k, self.depth - 1, _plain(state)))
                if len(self.heap) >= 4 * self.workers:
                    self._hand_out()  # the workers start while the first states are still being found
        following = 0
        while following < len(self.chunks):
            self._hand_out()
            self._take(block=False)
            if self._ready(following):
                yield self._result(following)
                following += 1
            else:
                self._take(block=True)

    def _know(self, chunk: int, restart: Restart) -> None:
        ci, k = restart[0], restart[1]
        known, pending = self.known[ci], self.pending[ci]
        was = known.get(k)
        if was is not None and (was[1] <= chunk or k not in pending):
            return
        known[k] = restart[2], chunk
        if k not in pending:
            self.waiting += 1
        pending[k] = restart
        self.seq += 1
        heapq.heappush(self.heap, (chunk, self.seq, ci, k))

    def _send(self, work: Callable[[Any], Any], items: Any) -> None:
        def done(f: Any) -> None:
            if not f.cancelled():  # a failed sweep's shutdown cancels what is queued: nothing to hand on
                self.results.put((work, f.exception() or f.result()))

        self.pool.submit(work, items).add_done_callback(done)

    def _hand_out(self) -> None:
        """Keep IN_FLIGHT tasks a worker in the pool, the restarts of the earliest chunks first."""
        while self.heap and self.flying < IN_FLIGHT * self.workers:
            size = max(1, min(NODES_PER_TASK, self.waiting // (IN_FLIGHT * self.workers)))
            batch: list[Restart] = []
            while self.heap and len(batch) < size:
                _, _, ci, k = heapq.heappop(self.heap)
                restart = self.pending[ci].pop(k, None)
                if restart is not None:
                    self.waiting -= 1
                    batch.append(restart)
            if batch:
                self.flying += 1
                self._send(_restarts, batch)

    def _take(self, block: bool) -> None:
        """Take the results that have come back (with `block`, wait for one), noting the states
        they reached that no worker has been given."""
        while True:
            try:
                got = self.results.get(block=block)
            except queue.Empty:
                return
            block = False
            work, got = got
            if isinstance(got, BaseException):
                raise got
            if work is _worker:  # whole chunks
                for i, res, rows in got:
                    res.records = [ScenarioRecord(*row) for row in rows]
                    self.whole[i] = res
                continue
            self.flying -= 1
            for ci, k, done, keys, added, where, new in got:
                crashes, chunk = self.known[ci][k]
                known, pending = self.known[ci], self.pending[ci]
                for ck, note in new.items():
                    if ck not in known:
                        self._know(chunk, (ci, ck, crashes - 1, note))
                reached = set(keys)
                assert reached <= known.keys(), "a worker sent a key before its state"
                for ck in reached & pending.keys():  # not handed out yet: this chunk may need it sooner
                    self._know(chunk, pending[ck])
                self.nodes[ci][k] = merging.Outcome(*done), keys, added, where
            self._hand_out()

    def _ready(self, i: int) -> bool:
        if not self.merged[i]:
            return i in self.whole
        return self._build(self.chunks[i].config, self.roots[i][2]) is not None

    def _result(self, i: int) -> ChunkResult:
        if not self.merged[i]:
            return self.whole.pop(i)
        chunk = self.chunks[i]
        state, saves, k = self.roots[i]
        res = from_tree(self.configs[chunk.config], chunk, state, saves, self.built[chunk.config][k])
        # Chunks are taken in order, so the restarts built since the last are what one process plays for this one.
        res.explored, self.counted = self.count - self.counted, self.count
        return res

    def _build(self, ci: int, k: bytes) -> merging.Tree | merging.Tally | None:
        """A restart's tree (its tally where no record is kept), once it and every restart below it
        are back (else None)."""
        built = self.built[ci]
        got = built.get(k)
        if got is not None:
            return got
        node = self.nodes[ci].get(k)
        if node is None:
            return None
        done, keys, added, where = node  # (dropped once built: `built` answers from then on)
        kids = list(map(built.get, keys))  # most are built already: no call for those
        if not all(kids):
            for n, kid in enumerate(kids):
                if kid is None:
                    kid = kids[n] = self._build(ci, keys[n])
                    if kid is None:
                        return None
        if where is None:
            got = merging.tally(done, added, kids)  # type: ignore[arg-type]
        else:
            got = merging.grown(
                done, tuple((kind, label, a, kid) for (kind, label), a, kid in zip(where, added, kids, strict=True))
            )  # type: ignore[misc]
        built[k] = got
        del self.nodes[ci][k]
        self.count += 1
        return got
