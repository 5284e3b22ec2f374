"""The crash sweep: crash configurations at every point they can be crashed, in worker processes.

Rules:
- A sweep plans one chunk per first crash point of each configuration (agentcore.harness.chunks: the once
  scenario and its twice scenarios; agentcore.harness.scenario plays each scenario; agentcore.config says
  what a configuration is).
- Scenarios are independent, so chunks run in parallel in worker processes; results are put back
  in order, so a sweep gives the same records with any number of workers, every time.
- Checkpoint files live in memory, or with `disk="files"` in real files in a RAM-backed temp dir
  when there is one, without fsync. Both give the same records.
- With more than one worker, chunks run in a pool of worker processes (agentcore.harness.pool).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from agentcore.config import Config
from agentcore.errors import BadInput, ConfigError
from agentcore.harness.chunks import Chunk, ChunkResult, points, run_chunk
from agentcore.harness.disk import ram_dir
from agentcore.harness.pool import run_parallel
from agentcore.limits import SWEEP_DEPTHS
from agentcore.records import ScenarioRecord, TableRow

DISKS = ("memory", "files")


class Workdir:
    """For disk="files": a temp dir for checkpoint files (RAM-backed when possible), removed on
    exit. For "memory", no dir (None)."""

    def __init__(self, disk: str) -> None:
        if disk not in DISKS:
            raise ConfigError(f"unknown disk {disk!r} (choose from {', '.join(DISKS)})")
        self.path = tempfile.mkdtemp(prefix="agentcore-", dir=ram_dir()) if disk == "files" else None

    def __enter__(self) -> str | None:
        return self.path

    def __exit__(self, *exc: object) -> None:
        if self.path is not None:
            shutil.rmtree(self.path, ignore_errors=True)


def plan_chunks(configs: list[Config], workdir: str | None = None) -> list[Chunk]:
    chunks = []
    for i, cfg in enumerate(configs):
        for n, (kind, label) in enumerate(points(cfg, workdir), 1):
            chunks.append(Chunk(i, n, kind, label))
    return chunks


def run_chunks(
    configs: list[Config],
    chunks: list[Chunk],
    depth: int = 2,
    workers: int = 1,
    collect: bool = False,
    disk: str = "memory",
    merge: bool = True,
    keep: bool = True,
) -> Iterator[ChunkResult]:
    """Run chunks (in parallel with workers > 1), yielding results in the chunks' order; `merge`:
    equal states where agentcore.harness.merge allows it; `keep`: the records (else each chunk's row)."""
    if depth not in SWEEP_DEPTHS:
        raise BadInput(f"depth must be one of {', '.join(map(str, SWEEP_DEPTHS))}, not {depth}")
    if workers < 1:
        raise BadInput(f"workers must be at least 1, not {workers}")
    with Workdir(disk) as base:
        if workers == 1 or len(chunks) < 2:
            for c in chunks:
                yield run_chunk(configs[c.config], c, depth, base, collect, merge, keep)
            return
        yield from run_parallel(configs, chunks, depth, workers, base, collect, merge, keep)


@dataclass(slots=True)
class SweepResult:
    rows: list[TableRow]
    records: list[list[ScenarioRecord]]  # per configuration (empty lists where the sweep kept none)
    saves: int
    scenarios: int
    explored: int = 0  # scenario plays (agentcore.harness.merge rebuilt the other records from its trees)


def sweep(
    configs: list[Config],
    depth: int = 2,
    workers: int = 1,
    collect: bool = False,
    progress: Callable[[int, int], None] | None = None,
    disk: str = "memory",
    merge: bool = True,
    keep: bool = True,
) -> SweepResult:
    """Sweep configurations; one table row per configuration. `disk`: where checkpoint files
    live, "memory" or (real) "files"; `merge`: equal states (agentcore.harness.merge), the same records;
    `keep`: the records (without them, the same rows, sooner)."""
    if collect and not keep:
        raise BadInput("timelines are collected only into records that are kept")
    with Workdir(disk) as d:
        chunks = plan_chunks(configs, d)
    records: list[list[ScenarioRecord]] = [[] for _ in configs]
    rows = [TableRow(cfg.label) for cfg in configs]
    saves = explored = 0
    for n, res in enumerate(run_chunks(configs, chunks, depth, workers, collect, disk, merge, keep), 1):
        row = rows[res.config]
        if res.row is None:
            records[res.config].extend(res.records)
            for r in res.records:
                row.add(r)
        else:
            row.add_row(res.row)
        saves += res.saves
        explored += res.explored
        if progress is not None:
            progress(n, len(chunks))
    return SweepResult(rows, records, saves, sum(r.scenarios for r in rows), explored)


def each_record(result: SweepResult) -> Iterable[ScenarioRecord]:
    for recs in result.records:
        yield from recs
