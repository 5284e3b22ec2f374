"""The crash sweep: crash configurations at every point they can be crashed, in worker processes.

Rules:
- A sweep plans one chunk per first crash point of each configuration (agentcore.chunks: the once
  scenario and its twice scenarios; agentcore.scenario plays each scenario; agentcore.config says
  what a configuration is).
- Scenarios are independent, so chunks run in parallel in worker processes; results are put back
  in order, so a sweep gives the same records with any number of workers, every time.
- Checkpoint files live in memory, or with `disk="files"` in real files in a RAM-backed temp dir
  when there is one, without fsync. Both give the same records.
- This module is also the dashboard's entry point: the names it uses (`Config`, `Chunk`,
  `run_chunk`, `play` with its `Options`, ...) are importable from here.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, fields
from typing import Any

from agentcore.chunks import Chunk, ChunkResult, Resumed, points, replay, resume, run_chunk
from agentcore.config import PERSONS, TABLE, Config, config_name, table_configs
from agentcore.disk import ram_dir
from agentcore.limits import SWEEP_DEPTHS
from agentcore.records import ScenarioRecord, TableRow, table_row
from agentcore.scenario import Options, Played, play

DISKS = ("memory", "files")


class Workdir:
    """For disk="files": a temp dir for checkpoint files (RAM-backed when possible), removed on
    exit. For "memory", no dir (None)."""

    def __init__(self, disk: str) -> None:
        if disk not in DISKS:
            raise ValueError(f"unknown disk {disk!r} (choose from {', '.join(DISKS)})")
        self.path = tempfile.mkdtemp(prefix="agentcore-", dir=ram_dir()) if disk == "files" else None

    def __enter__(self) -> str | None:
        return self.path

    def __exit__(self, *exc: object) -> None:
        if self.path is not None:
            shutil.rmtree(self.path, ignore_errors=True)


_CONFIGS: list[Config] = []
_OPTIONS: dict[str, Any] = {}


_FIELDS = tuple(f.name for f in fields(ScenarioRecord))  # ScenarioRecord(*row) takes them in this order


def _worker(item: tuple[int, Chunk]) -> tuple[int, ChunkResult, list[tuple[Any, ...]]]:
    """A pool process runs chunk number item[0]. Records travel back as plain tuples: pickling ten
    thousand dataclass instances field by field cost more than a tenth of a second on each side."""
    chunk, base = item[1], _OPTIONS["base"]
    d = None
    if base is not None:
        d = os.path.join(base, f"w{os.getpid()}")
        os.makedirs(d, exist_ok=True)
    res = run_chunk(_CONFIGS[chunk.config], chunk, _OPTIONS["depth"], d, _OPTIONS["collect"], _OPTIONS["merge"])
    rows = [tuple(getattr(r, f) for f in _FIELDS) for r in res.records]
    res.records = []
    return item[0], res, rows


def plan_chunks(configs: list[Config], workdir: str | None = None) -> list[Chunk]:
    chunks = []
    for i, cfg in enumerate(configs):
        for n, (kind, label) in enumerate(points(cfg, workdir), 1):
            chunks.append(Chunk(i, n, kind, label))
    return chunks


def run_chunks(configs: list[Config], chunks: list[Chunk], depth: int = 2, workers: int = 1,
               collect: bool = False, disk: str = "memory", merge: bool = True) -> Iterator[ChunkResult]:
    """Run chunks (in parallel with workers > 1), yielding results in the chunks' order; `merge`:
    equal states where agentcore.merge allows it."""
    if depth not in SWEEP_DEPTHS:
        raise ValueError(f"depth must be one of {', '.join(map(str, SWEEP_DEPTHS))}, not {depth}")
    if workers < 1:
        raise ValueError(f"workers must be at least 1, not {workers}")
    with Workdir(disk) as base:
        if workers == 1 or len(chunks) < 2:
            for c in chunks:
                yield run_chunk(configs[c.config], c, depth, base, collect, merge)
            return
        _CONFIGS[:] = configs
        _OPTIONS.update(base=base, depth=depth, collect=collect, merge=merge)
        # Early first points have the longest restarts: hand those out first, so that no worker
        # is left with a big chunk at the end; results are put back in the chunks' order.
        order = sorted(range(len(chunks)), key=lambda i: chunks[i].first)
        done: dict[int, ChunkResult] = {}
        following = 0
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(workers) as pool:
            for i, res, rows in pool.imap_unordered(_worker, [(i, chunks[i]) for i in order], chunksize=1):
                res.records = [ScenarioRecord(*row) for row in rows]
                done[i] = res
                while following in done:
                    yield done.pop(following)
                    following += 1


@dataclass(slots=True)
class SweepResult:
    rows: list[TableRow]
    records: list[list[ScenarioRecord]]  # per configuration
    saves: int
    scenarios: int
    explored: int = 0  # scenario plays (agentcore.merge rebuilt the other records from its trees)


def sweep(configs: list[Config], depth: int = 2, workers: int = 1, collect: bool = False,
          progress: Callable[[int, int], None] | None = None, disk: str = "memory", merge: bool = True) -> SweepResult:
    """Sweep configurations; one table row per configuration. `disk`: where checkpoint files
    live, "memory" or (real) "files"; `merge`: equal states (agentcore.merge), the same records."""
    with Workdir(disk) as d:
        chunks = plan_chunks(configs, d)
    records: list[list[ScenarioRecord]] = [[] for _ in configs]
    saves = explored = 0
    for n, res in enumerate(run_chunks(configs, chunks, depth, workers, collect, disk, merge), 1):
        records[res.config].extend(res.records)
        saves += res.saves
        explored += res.explored
        if progress is not None:
            progress(n, len(chunks))
    rows = [table_row(cfg.label, recs) for cfg, recs in zip(configs, records, strict=True)]
    return SweepResult(rows, records, saves, sum(len(r) for r in records), explored)


def each_record(result: SweepResult) -> Iterable[ScenarioRecord]:
    for recs in result.records:
        yield from recs


__all__ = ["DISKS", "PERSONS", "TABLE", "Chunk", "ChunkResult", "Config", "Options", "Played", "Resumed",
           "SweepResult", "config_name", "each_record", "plan_chunks", "play", "points", "replay", "resume",
           "run_chunk", "run_chunks", "sweep", "table_configs"]
