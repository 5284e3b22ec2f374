"""Chunks: one first crash point of one configuration, its once, twice (and thrice) scenarios.

Rules:
- The uninterrupted run lists the first points. For each first point p: the once scenario crashes
  at p and runs the restart to the end, listing the restart's points; at depth 2, for each of those
  points q, a twice scenario crashes at p, then at q of the restart, then runs to the end; at depth
  3, for each point r of that second restart, a thrice scenario crashes at r too.
- A twice scenario does not replay the crashed run: it starts its last process from the durable
  state the once scenario's restart noted at q. A test checks this against crashing a full replay
  at (p, q), scenario by scenario. The exception: a second point q where the tracker crashes
  (agentcore.harness.trackerfault) is no restart from a noted state, so that twice scenario is played in
  full, crashed at p and at q, with the answers given by q. A thrice scenario starts from the
  state the twice scenario's restart noted at r, in the same way.
- Where agentcore.harness.merge allows it (and `merge` is on), a chunk plays the run to p, then the restarts
  of the distinct states the crashes leave, once each per process (agentcore.harness.merge; a sweep with
  workers shares them among its workers: agentcore.harness.sweep): the same records, fewer plays
  (`ChunkResult.explored`).
- A chunk run without keeping its records (`keep=False`: a sweep that needs only its table, as the
  CLI's `table` and `sweep` without `--records`) gives their table row instead (`ChunkResult.row`):
  a merged chunk's from its tree's tally (agentcore.harness.merge), with no record built.
- A question for a queue person pauses a scenario; the answer continues it (`resume`). The points
  the once scenario's restart reaches after an answer are crashed too: the resume says which
  (`Resumed.chunk`), and a chunk of those twice scenarios plays the once scenario again with its
  answers to note their states.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentcore.config import Config
from agentcore.errors import BadInput
from agentcore.harness import merge as merging
from agentcore.harness.disk import WorkBudget
from agentcore.harness.scenario import Options, Played, play
from agentcore.harness.state import Durable
from agentcore.harness.trackerfault import full_play
from agentcore.limits import SWEEP_DEPTHS
from agentcore.records import ScenarioRecord, TableRow, table_row

Point = tuple[int, str, str]  # a crash point: number (1-based), kind, label
_NO_POINT = (None, None, None)


def _record(cfg: Config, p: Played, first: Point, second: Point | None, third: Point | None = None) -> ScenarioRecord:
    return _new_record(cfg, merging.outcome(p, (0, 0, 0, 0)), (0, 0, 0, 0), first, second, third, p.timeline, p.effects)


def _new_record(
    cfg: Config,
    o: merging.Outcome,
    base: merging.Counters,
    first: Point,
    second: Point | None,
    third: Point | None,
    timeline: list[dict[str, Any]] | None = None,
    effects: list[dict[str, Any]] | None = None,
) -> ScenarioRecord:
    asks, avoidable, approvals, model_calls = merging.plus(base, o.added)
    # In ScenarioRecord's field order: positional arguments build a record five times as fast as
    # keywords, and a sweep builds one per scenario.
    return ScenarioRecord(
        cfg.job.name,
        cfg.design.name,
        cfg.tracker,
        cfg.runs,
        *first,
        *(second or _NO_POINT),
        o.duplicates,
        o.missing,
        o.wrong,
        o.gave_up,
        o.denied_ran,
        asks,
        avoidable,
        approvals,
        model_calls,
        model_calls - job_calls(cfg),
        o.status,
        timeline,
        effects,
        *(third or _NO_POINT),
    )


def job_calls(cfg: Config) -> int:
    """The model calls of the job's runs uncrashed: a reply per turn and the final one, per run
    (calls_plus counts the calls above it)."""
    return (len(cfg.job.turns) + 1) * cfg.runs


def points(cfg: Config, workdir: str | None = None, budget: WorkBudget | None = None) -> list[tuple[str, str]]:
    """The crash points of the uninterrupted run, in order, as (kind, label); `budget` bounds its
    steps (agentcore.harness.disk)."""
    p = play(cfg, (), Options(points=True, budget=budget), workdir)
    if p.status not in ("done", "failed"):  # a run that gave up for good has its points crashed too
        raise BadInput(f"{cfg.label}: the uninterrupted run did not finish ({p.status})")
    pts = p.processes[0].points
    assert pts is not None
    return pts


@dataclass(slots=True)
class Chunk:
    """One first crash point of one configuration: its once scenario and its twice scenarios.

    With `second_from`, a chunk made after an answer: only the twice scenarios at the points
    second_from..second_to of the once scenario's restart, which it reaches with `answers`.
    """

    config: int  # index into the sweep's configurations
    first: int
    kind: str
    label: str
    second_from: int = 0
    second_to: int = 0
    answers: dict[str, bool] = field(default_factory=dict)


@dataclass(slots=True)
class ChunkResult:
    config: int
    first: int
    records: list[ScenarioRecord]
    saves: int
    # per waiting scenario (in records order): its question and durable state
    waiting: list[tuple[int, dict[str, Any], dict[str, Any]]] = field(default_factory=list)
    explored: int = 0  # scenario plays: the records less those agentcore.harness.merge rebuilt from a tree
    row: TableRow | None = None  # the records' table row, where they were not kept (records and waiting empty)
    timelines: bool = False  # every record carries its timeline and effects: store them (a target's: never replayed)


def run_chunk(
    cfg: Config,
    chunk: Chunk,
    depth: int,
    workdir: str | None = None,
    collect: bool = False,
    merge: bool = True,
    keep: bool = True,
) -> ChunkResult:
    if depth not in SWEEP_DEPTHS:
        raise BadInput(f"depth must be one of {', '.join(map(str, SWEEP_DEPTHS))}, not {depth}")
    first = (chunk.first, chunk.kind, chunk.label)
    later = chunk.second_from > 0
    if later and depth != 2:
        raise BadInput(f"a chunk of twice scenarios (from point {chunk.second_from}) needs depth 2")
    if depth == 3 and cfg.person != "scripted":
        raise BadInput("depth 3 needs the scripted person (a queue person's questions pause depth 2 at most)")
    if merged(cfg, chunk, collect, merge):
        m = merging.memo(cfg)
        before = m.explored
        state, saves = m.first(chunk.first, workdir)
        tree = merging.explore(m, state, depth - 1, workdir)
        out = from_tree(cfg, chunk, state, saves, tree if keep else tree.tally)
        out.explored = m.explored - before
        return out
    # A later chunk plays its once scenario again (its record is stored already) only to note the
    # states of its restart's points (with the timeline so far, when collecting).
    deeper = depth >= 2
    once = play(
        cfg, (chunk.first,), Options(points=deeper, timeline=collect, notes=deeper), workdir, answers=chunk.answers
    )
    out = ChunkResult(chunk.config, chunk.first, [], 0)
    if not later:
        out.records.append(_record(cfg, once, first, None))
        out.saves = once.saves
        _keep_waiting(out, once)
    if deeper and once.restarts is not None:
        restart = once.processes[1].points
        assert restart is not None
        lo, hi = (chunk.second_from, chunk.second_to) if later else (1, len(restart))
        if hi > len(restart):
            raise BadInput(
                f"{cfg.label}, first point {chunk.first}: the restart reaches {len(restart)} points "
                f"with these answers, not {hi}"
            )
        opts = Options(timeline=collect, points=depth == 3, notes=depth == 3)
        for q in range(lo, hi + 1):
            (kind, label), state = restart[q - 1], once.restarts[q - 1]
            twice = play_from_note(cfg, (chunk.first, q), kind, state, opts, workdir)
            out.records.append(_record(cfg, twice, first, (q, kind, label)))
            out.saves += twice.saves
            _keep_waiting(out, twice)
            if depth == 3 and twice.restarts is not None:
                again = twice.processes[-1].points
                assert again is not None
                for r, ((kind3, label3), note) in enumerate(zip(again, twice.restarts, strict=True), 1):
                    thrice = play_from_note(cfg, (chunk.first, q, r), kind3, note, Options(timeline=collect), workdir)
                    out.records.append(_record(cfg, thrice, first, (q, kind, label), (r, kind3, label3)))
                    out.saves += thrice.saves
    out.explored = len(out.records)
    if not keep:
        out.row, out.records, out.waiting = table_row(cfg.label, out.records), [], []
    return out


def merged(cfg: Config, chunk: Chunk, collect: bool, merge: bool) -> bool:
    """Whether run_chunk plays the chunk's scenarios from agentcore.harness.merge's trees."""
    return merge and chunk.second_from == 0 and not chunk.answers and merging.mergeable(cfg, collect)


def tree_result(cfg: Config, chunk: Chunk, state: Durable, saves: int, tree: merging.Tree) -> ChunkResult:
    """run_chunk's records from agentcore.harness.merge's tree of `state`, the state a crash at the chunk's
    first point leaves (with `saves` made by then). `explored` is left to the caller."""
    first = (chunk.first, chunk.kind, chunk.label)
    base = merging.counters(state)
    out = ChunkResult(
        chunk.config, chunk.first, [_new_record(cfg, tree.outcome, base, first, None, None)], saves + tree.outcome.saves
    )
    for q, (kind, label, added, twice) in enumerate(tree.children, 1):
        at_q = merging.plus(base, added)
        out.records.append(_new_record(cfg, twice.outcome, at_q, first, (q, kind, label), None))
        out.saves += twice.outcome.saves
        for r, (kind3, label3, added3, thrice) in enumerate(twice.children, 1):
            out.records.append(
                _new_record(
                    cfg, thrice.outcome, merging.plus(at_q, added3), first, (q, kind, label), (r, kind3, label3)
                )
            )
            out.saves += thrice.outcome.saves
    return out


def tree_row(cfg: Config, chunk: Chunk, state: Durable, saves: int, t: merging.Tally) -> ChunkResult:
    """tree_result's table row, from the tree's tally: the same counts, no record built."""
    n = t[0] + t[1] + t[2]
    asks, avoidable, _, calls = merging.counters(state)
    row = TableRow(
        cfg.label,
        t[0],
        t[1],
        t[3],
        t[4],
        t[5],
        t[6],
        t[7],
        t[8],
        t[10] + n * asks,
        t[11] + n * avoidable,
        t[12] + n * (calls - job_calls(cfg)),
        t[2],
    )
    return ChunkResult(chunk.config, chunk.first, [], saves + t[9], row=row)


def from_tree(
    cfg: Config, chunk: Chunk, state: Durable, saves: int, built: merging.Tree | merging.Tally
) -> ChunkResult:
    """The chunk's records from its tree, or its row from a tally (records not kept)."""
    if isinstance(built, merging.Tree):
        return tree_result(cfg, chunk, state, saves, built)
    return tree_row(cfg, chunk, state, saves, built)


def play_from_note(
    cfg: Config,
    plan: tuple[int, ...],
    kind: str,
    note: Durable,
    options: Options,
    workdir: str | None,
    answers: dict[str, bool] | None = None,
) -> Played:
    """The scenario crashed at the points of `plan`, the last (of `kind`) in the restart whose
    state there is `note`: played from the note, or in full when the crash there is the tracker's."""
    if full_play(kind):
        return play(cfg, plan, options, workdir, answers={**note.answers, **(answers or {})})
    return play(cfg, (), options, workdir, start=note, answers=answers)


def _keep_waiting(out: ChunkResult, p: Played) -> None:
    if p.durable is not None and p.question is not None:
        out.waiting.append((len(out.records) - 1, p.question, p.durable))


@dataclass(slots=True)
class Resumed:
    record: ScenarioRecord  # the scenario after the answer: done, failed, or waiting again
    played: Played
    twice: tuple[int, int] | None  # restart points reached for the first time: (from, to), 1-based

    def chunk(self, config: int) -> Chunk | None:
        """The twice scenarios at the restart points this resume reached, as a chunk to run."""
        if self.twice is None:
            return None
        r = self.record
        return Chunk(config, r.first_point, r.first_kind, r.first_label, *self.twice, dict(self.played.answers or {}))


def resume(
    cfg: Config,
    durable: Durable | dict[str, Any],
    answers: dict[str, bool],
    first: Point,
    second: Point | None,
    workdir: str | None = None,
    depth: int = 1,
) -> Resumed:
    """Continue a paused scenario from its durable state with the person's answers.

    A stored state (a dict) is checked first (`Durable.from_dict`). At depth 2 a once scenario's
    restart may reach points it had not reached before the pause; `Resumed.twice` says which, for
    their twice scenarios to be crashed as a chunk of their own."""
    state = durable if isinstance(durable, Durable) else Durable.from_dict(durable, "the durable state")
    capture = depth == 2 and second is None
    p = play(cfg, state.plan, Options(points=capture, timeline=True, notes=capture), workdir, state, answers)
    swept = state.swept or 0
    reached = len(p.restarts) if p.restarts is not None else 0
    return Resumed(_record(cfg, p, first, second), p, (swept + 1, reached) if reached > swept else None)


def replay(
    cfg: Config,
    first: int,
    second: int | None = None,
    answers: dict[str, bool] | None = None,
    once_answers: dict[str, bool] | None = None,
    third: int | None = None,
    budget: WorkBudget | None = None,
) -> Played:
    """Play a scenario again, with its timeline and effects (sweeps are deterministic): crashed at
    `first`, and in a twice scenario at `second` of the restart, and in a thrice scenario (depth 3,
    the scripted person's) at `third` of the second restart, with the answers its questions got.

    A twice scenario starts its last process from the state noted at `second` of the once
    scenario's restart, as the sweep started it: with a queue person that restart reaches
    `second` with the once scenario's answers (`once_answers`), which are not the twice
    scenario's own (an ask number can be both scenarios' with a different truth). A thrice
    scenario starts from the state its twice scenario's restart noted at `third`, in the same way.
    `budget` bounds the steps of its plays, in all (agentcore.harness.disk)."""
    shown = Options(timeline=True, budget=budget)
    if second is None:
        return play(cfg, (first,), shown, answers=answers)
    noting = Options(points=True, timeline=True, notes=True, budget=budget)
    once = play(cfg, (first,), noting, answers=once_answers)
    kind, note = _noted(cfg, once, 1, second, f"the restart after point {first}")
    if third is None:
        return play_from_note(cfg, (first, second), kind, note, shown, None, answers)
    twice = play_from_note(cfg, (first, second), kind, note, noting, None)
    kind3, note3 = _noted(cfg, twice, -1, third, f"the restart after points {first} and {second}")
    return play_from_note(cfg, (first, second, third), kind3, note3, shown, None)


def _noted(cfg: Config, p: Played, process: int, point: int, what: str) -> tuple[str, Durable]:
    """The kind of a restart's `point` (process `process` of `p`) and the state noted there."""
    notes = p.restarts or []
    if point > len(notes):
        raise BadInput(f"{cfg.label}: {what} reaches {len(notes)} points with these answers, not {point}")
    restart = p.processes[process].points
    assert restart is not None
    return restart[point - 1][0], notes[point - 1]
