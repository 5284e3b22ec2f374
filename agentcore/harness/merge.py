"""Merging equal states: a restart's future is a function of the durable state it starts from.

Rules:
- A process that starts from a durable state (the checkpoint files and the world a crash leaves:
  agentcore.harness.state) goes on as every process starting from an equal state does: its points, the
  states its crashes would leave and its outcome are the same (scenarios are deterministic). So a
  sweep keys each restart by a digest of that state (`key`: what a restart reads, never the counters
  that only add up, nor the timeline) and of the crashes still to come, and plays each distinct one
  once (`explore`).
- Its `Tree` holds the restart's outcome as it adds to the counters the state started with (model
  calls, asks, avoidable asks, approvals; saves are the restart's own), and with crashes still to
  come, for each point of the restart the counters there and the tree of the state a crash there
  leaves. Records are rebuilt from the trees, one per scenario, equal field by field to the
  unmerged sweep's (tests/agentcore/harness/test_merge.py): `Memo.explored` counts the restarts played,
  the records are the raw scenarios.
- A state may merge only where a restart's future is the durable state's alone (`mergeable`): not
  where timelines are kept (each scenario's own), nor with a queue person (a question pauses a
  scenario), nor under kill (the processes are real) or a tracker that can crash (a crash at its
  own point leaves the process running, with what it holds in memory).
- Each tree carries its `Tally`: the sums over the scenarios it stands for that a table row needs,
  with the counters relative to the state the tree starts from. A row is then the root's tally
  shifted by the chunk's counters (agentcore.harness.chunks.tree_row), with no record built: what a sweep
  that keeps no records (the CLI's table) needs.
- A process that runs chunks itself (a one-worker sweep, a dashboard worker) keeps one memo per
  configuration object, all of them together at most MAX_ENTRIES trees and MAX_MEMOS
  configurations; past that it starts again (a merge missed costs time, never a record). A sweep
  with workers shares one set of trees among them (agentcore.harness.sweep): each restart's play (`step`)
  goes to one worker, and the trees are built where the sweep started, held for the sweep's length
  (not a Memo: MAX_ENTRIES does not bound them). A sweep of many configurations gives each worker
  whole configurations instead, with a memo of its own per configuration.
"""

from __future__ import annotations

import hashlib
import marshal
from collections.abc import Sequence
from dataclasses import dataclass
from operator import add, mul
from typing import TYPE_CHECKING

from agentcore.crashmodels import CRASH_MODELS
from agentcore.harness.scenario import Options, play
from agentcore.harness.state import Durable

if TYPE_CHECKING:
    from agentcore.config import Config
    from agentcore.harness.scenario import Played

MAX_ENTRIES = 1_000_000  # about 300 bytes each
MAX_MEMOS = 4096
Counters = tuple[int, int, int, int]  # asks, avoidable, approvals, model calls


@dataclass(frozen=True, slots=True)
class Outcome:
    """A restart played to its end: the tallies of its end, and the counters it added."""

    duplicates: int
    missing: int
    wrong: int
    gave_up: int
    denied_ran: int
    status: str
    added: Counters
    saves: int


# Over the scenarios a tree stands for: how many end at each level below it (the restart itself,
# a crash in it, a crash in that restart: once, twice and thrice where the tree is a chunk's),
# how many with duplicates, then duplicates, missing, wrong, gave_up, denied_ran and saves summed,
# then asks, avoidable asks and model calls summed as added to the tree's starting counters.
Tally = tuple[int, int, int, int, int, int, int, int, int, int, int, int, int]
LEVELS = 3


@dataclass(frozen=True, slots=True)
class Tree:
    outcome: Outcome
    # per point of the restart (with crashes still to come): its kind and label, the counters it
    # had added there, and the tree of the state a crash there leaves
    children: tuple[tuple[str, str, Counters, Tree], ...]
    tally: Tally  # of the whole tree (`tally`): grown() builds every tree


def grown(done: Outcome, children: tuple[tuple[str, str, Counters, Tree], ...]) -> Tree:
    """The tree of a restart with its children's trees, and its tally."""
    kids = [child.tally for _, _, _, child in children]
    return Tree(done, children, tally(done, [added for _, _, added, _ in children], kids))


def tally(done: Outcome, added: Sequence[Counters], kids: Sequence[Tally]) -> Tally:
    """A restart's tally from its outcome and, per point, the counters added there and the tally of
    the state a crash there leaves. Column by column (zip, sum, map run in C): a sweep's process
    adds up every point of every restart its workers played."""
    asks, avoidable, _, calls = done.added
    t = [
        1,
        0,
        0,
        int(done.duplicates > 0),
        done.duplicates,
        done.missing,
        done.wrong,
        done.gave_up,
        done.denied_ran,
        done.saves,
        asks,
        avoidable,
        calls,
    ]
    if kids:
        cols = list(zip(*kids, strict=True))
        assert not any(cols[LEVELS - 1]), "a tree deeper than three levels"
        t[1] += sum(cols[0])
        t[2] += sum(cols[1])
        for i in range(LEVELS, len(t)):
            t[i] += sum(cols[i])
        n = list(map(add, cols[0], cols[1]))  # each point's scenarios, each adding the counters there
        adds = list(zip(*added, strict=True))
        t[10] += sum(map(mul, n, adds[0]))
        t[11] += sum(map(mul, n, adds[1]))
        t[12] += sum(map(mul, n, adds[3]))
    return tuple(t)  # type: ignore[return-value]


def mergeable(cfg: Config, collect: bool) -> bool:
    return (
        not collect
        and cfg.person == "scripted"
        and not CRASH_MODELS[cfg.crash_model].forks
        and cfg.tracker_fault != "crash"
    )


def counters(state: Durable) -> Counters:
    return state.asks, state.avoidable, state.prompts, state.model_calls


def key(cfg: Config, state: Durable, crashes: int) -> bytes:
    """The digest of what a restart from `state` reads, with `crashes` crashes still to come. The
    person's ask count only where its answers are drawn by it (wrong:P)."""
    asks = state.asks if cfg.person_faults.startswith("wrong") else None
    parts = (
        crashes,
        state.process,
        state.seq,
        state.plan,
        sorted(state.files.items()),
        state.tracker,
        sorted(state.attempts),
        sorted(state.gave_up or ()),
        sorted(state.decisions.items()),
        sorted(state.answers.items()),
        state.model_asks,
        asks,
    )
    # marshal: 8 times as fast as repr; version 2 writes no back-references, so equal values give equal bytes
    return hashlib.blake2b(marshal.dumps(parts, 2), digest_size=16).digest()


class Memo:
    """One worker process's trees of one configuration, and how many restarts it played."""

    __slots__ = ("cfg", "trees", "explored", "_first")

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self.trees: dict[bytes, Tree] = {}
        self.explored = 0
        self._first: list[tuple[Durable, int]] | None = None

    def first(self, point: int, workdir: str | None = None) -> tuple[Durable, int]:
        """The state a crash at `point` of the uninterrupted run leaves, and the saves made by then:
        one play of that run notes them all (instead of a play to each first point)."""
        if self._first is None:
            p = play(self.cfg, (), Options(notes=True, root=True), workdir)
            assert p.restarts is not None and p.saved is not None
            self._first = list(zip(p.restarts, p.saved, strict=True))
        return self._first[point - 1]


_MEMOS: list[Memo] = []  # found by their configuration object, which each holds (no id() to reuse)
_ENTRIES = [0]  # trees in all memos


def memo(cfg: Config) -> Memo:
    """This process's memo of `cfg` (the same object: a sweep's configurations live as long as it)."""
    for m in reversed(_MEMOS):  # the latest first: a sweep asks for one configuration chunk after chunk
        if m.cfg is cfg:
            return m
    if len(_MEMOS) >= MAX_MEMOS:
        _forget()
    m = Memo(cfg)
    _MEMOS.append(m)
    return m


def explore(m: Memo, state: Durable, crashes: int, workdir: str | None = None) -> Tree:
    """The tree of the restart from `state`, with `crashes` more crashes in it and after it."""
    k = key(m.cfg, state, crashes)
    tree = m.trees.get(k)
    if tree is not None:
        return tree
    done, points = step(m.cfg, state, crashes, workdir)
    m.explored += 1
    tree = grown(
        done, tuple((kind, label, added, explore(m, note, crashes - 1, workdir)) for kind, label, added, note in points)
    )
    if _ENTRIES[0] >= MAX_ENTRIES:
        _forget()
    m.trees[k] = tree
    _ENTRIES[0] += 1
    return tree


def step(
    cfg: Config, state: Durable, crashes: int, workdir: str | None = None
) -> tuple[Outcome, list[tuple[str, str, Counters, Durable]]]:
    """One play of the restart from `state`: its outcome and, with crashes still to come, for each
    of its points the kind, label, counters added there and the state a crash there leaves."""
    deeper = crashes > 0
    p = play(cfg, (), Options(points=deeper, notes=deeper), workdir, start=state)
    base = counters(state)
    points: list[tuple[str, str, Counters, Durable]] = []
    if deeper and p.restarts is not None:
        kinds = p.processes[-1].points
        assert kinds is not None
        points = [
            (kind, label, _added(counters(note), base), note)
            for (kind, label), note in zip(kinds, p.restarts, strict=True)
        ]
    return outcome(p, base), points


def _forget() -> None:
    for m in _MEMOS:
        m.trees.clear()
    _MEMOS.clear()
    _ENTRIES[0] = 0


def outcome(p: Played, base: Counters) -> Outcome:
    return Outcome(
        p.duplicates,
        p.missing,
        p.wrong,
        p.gave_up,
        p.denied_ran,
        p.status,
        _added((p.asks, p.avoidable, p.approvals, p.model_calls), base),
        p.saves,
    )


def _added(now: Counters, base: Counters) -> Counters:
    return now[0] - base[0], now[1] - base[1], now[2] - base[2], now[3] - base[3]


def plus(a: Counters, b: Counters) -> Counters:
    return a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3]
