"""The audit: every design under every world model, on a job and on its variants (agentcore.checker).

Rules:
- A verdict per (design, tracker mode): worlds in WORLDS' order, each swept at `depth` with RUNS
  (2) job runs in sequence, on every variant; "safe" if no world breaks it (with its expected
  losses listed), else the first world that breaks it, with a minimal witness: among the breaking
  scenarios of that world, the one with the shortest timeline. Only the CANDIDATES breaking
  scenarios that promise the shortest timeline (fewest model calls, asks, approvals, duplicates
  and crashes: `promise`) are replayed with their timelines, never all of them. It prints
  through the last job run that crashed or lost (`needed`), and links to the dashboard's page of
  one scenario (agentcore.checker.witness.link: /witness/ with the job, variant, design, tracker
  mode, runs, crash points and the world's conditions) at the address the caller gives (`site`:
  the CLI's --site, the dashboard's own; "" gives the path alone).
- Cost: once broken, a (design, tracker mode) is not swept under later worlds (its verdict is
  known); `every=True` (the Markdown table) sweeps every cell. Scenarios stream through: only
  counts and the witness candidates are kept.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from agentcore.checker.judge import AuditResult, Cell, Subject, tally
from agentcore.checker.variants import Variant, variants
from agentcore.checker.witness import Witness, link, loss_runs, needed
from agentcore.checker.worlds import RUNS, WORLDS, World
from agentcore.config import Config
from agentcore.durable.designs import Design
from agentcore.errors import BadInput
from agentcore.harness.chunks import replay
from agentcore.harness.scenario import Played
from agentcore.harness.sweep import plan_chunks, run_chunks
from agentcore.jobs import Job
from agentcore.limits import DEFAULT_SWEEP_DEPTH
from agentcore.records import ScenarioRecord

AUDIT_DEPTHS = (1, 2)  # a witness (replay, link, /witness/) names a first and a second crash point


def audit(
    job: Job,
    designs: Sequence[Design],
    trackers: Sequence[str],
    worlds: Sequence[World] = WORLDS,
    depth: int = DEFAULT_SWEEP_DEPTH,
    workers: int = 1,
    every: bool = False,
    site: str = "",
    progress: Callable[[str], Callable[[int, int], None]] | None = None,
) -> AuditResult:
    """Audit each design with each tracker mode on `job` and its variants under `worlds` (the
    module's rules). `every`: sweep every cell, also past a (design, tracker mode)'s first break.
    `progress(world)` gives a callback (chunks done, chunks) for that world's sweep."""
    if depth not in AUDIT_DEPTHS:
        raise BadInput(
            f"the audit's depth is {' or '.join(map(str, AUDIT_DEPTHS))}, not {depth}: its witnesses "
            "replay and link two crash points at most"
        )
    made, skipped = variants(job)
    result = AuditResult(job, depth, list(worlds), made, skipped, [Subject(d, t) for d in designs for t in trackers])
    for w in worlds:
        todo = []
        for s in result.subjects:
            if s.broken and not every:
                continue
            cell = s.cells[w.name] = Cell()
            if w.flaky_only and not s.design.flaky:
                cell.skipped = "the world acts only on a flaky tool server"
            else:
                todo.append(s)
        configs = [Config(v.job, s.design, s.tracker, runs=RUNS, **w.conditions) for s in todo for v in made]
        owners = [(s, v) for s in todo for v in made]
        result.scenarios += _sweep(w, configs, owners, depth, workers, progress(w.name) if progress else None)
        for s in todo:
            if s.cells[w.name].breaks and not s.broken:
                s.broken = w.name
                s.witness = _witness(w, configs, owners, s, site)
    return result


def unit_configs(made: Sequence[Variant], design: Design, tracker: str, w: World) -> list[Config]:
    """One (design, tracker mode)'s configurations under world `w`: one per variant, in `made`'s order."""
    return [Config(v.job, design, tracker, runs=RUNS, **w.conditions) for v in made]


def sweep_unit(
    made: Sequence[Variant], design: Design, tracker: str, w: World, depth: int = DEFAULT_SWEEP_DEPTH, workers: int = 1
) -> Cell:
    """One cell of the audit: a (design, tracker mode) under one world over every variant, counted
    by `tally` (candidates' configs index `made`). The dashboard's unit of work; a flaky-only world
    of a design without a flaky tool server is skipped, as `audit` skips it."""
    cell = Cell()
    if w.flaky_only and not design.flaky:
        cell.skipped = "the world acts only on a flaky tool server"
        return cell
    owner = Subject(design, tracker, {w.name: cell})
    configs = unit_configs(made, design, tracker, w)
    _sweep(w, configs, [(owner, v) for v in made], depth, workers, None)
    return cell


def _sweep(
    w: World,
    configs: list[Config],
    owners: list[tuple[Subject, Variant]],
    depth: int,
    workers: int,
    progress: Callable[[int, int], None] | None,
) -> int:
    """Sweep `configs` under `w`, counting each owner's cell; returns the scenarios played."""
    if not configs:
        return 0
    chunks = plan_chunks(configs)
    played = 0
    for n, res in enumerate(run_chunks(configs, chunks, depth, workers), 1):
        subject = owners[res.config][0]
        cell = subject.cells[w.name]
        for r in res.records:
            played += 1
            tally(cell, r, w, res.config, played, keep=not subject.broken)
        if progress is not None:
            progress(n, len(chunks))
    return played


def _witness(w: World, configs: list[Config], owners: list[tuple[Subject, Variant]], s: Subject, site: str) -> Witness:
    return shortest(w, configs, [v.name for _, v in owners], s.cells[w.name].candidates, site)


def shortest(
    w: World,
    configs: Sequence[Config],
    variant_names: Sequence[str],
    candidates: Sequence[tuple[int, int, int, ScenarioRecord]],
    site: str,
    audit_id: int | None = None,
) -> Witness:
    """The witness: the shortest timeline among `candidates` (Cell.candidates' tuples; their config
    indexes `configs` and `variant_names`), of those as short, the first swept; each is replayed.
    Its link names the dashboard's audit `audit_id` in place of the job, if given."""
    best: tuple[tuple[int, int], int, ScenarioRecord, Played] | None = None
    for _, neg_seen, i, r in candidates:
        p = replay(configs[i], r.first_point, r.second_point)
        rank = (len(p.timeline or []), -neg_seen)
        if best is None or rank < best[0]:
            best = (rank, i, r, p)
    assert best is not None
    _, i, r, p = best
    cfg, variant, timeline = configs[i], variant_names[i], p.timeline or []
    return Witness(
        w.name,
        variant,
        r,
        timeline,
        link(site, cfg, variant, w, r.first_point, r.second_point, audit_id),
        needed(timeline, loss_runs(cfg, p)),
    )
