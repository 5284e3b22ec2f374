"""A scenario's checkpoint folder and disk, as its crash model (agentcore.crashmodels) says.

Rules: the files live in memory, or in `workdir` when one is given; a power-cut disk in memory; a
crash model that forks writes real files, in a temp folder of the scenario's own (RAM-backed when
possible) when no workdir is given. `lay_out` puts on a disk the files a crash would have left.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import TYPE_CHECKING

from agentcore.crashmodels import CRASH_MODELS
from agentcore.durable.checkpoint import OsFiles
from agentcore.harness.disk import MemoryFiles, PowerCutDisk, WorkBudget, ram_dir

if TYPE_CHECKING:
    from agentcore.config import Config


def scenario_disk(
    cfg: Config, workdir: str | None, paths: list[str], budget: WorkBudget | None
) -> MemoryFiles | PowerCutDisk | OsFiles:
    if CRASH_MODELS[cfg.crash_model].disk == "power-cut":
        return PowerCutDisk(read=paths, budget=budget)
    return MemoryFiles(budget=budget) if workdir is None else OsFiles()


class Folder:
    """The workdir a scenario's files go in: the one given, or for a crash model that forks (it needs real files)
    a temp dir of its own, RAM-backed when possible, removed at the end."""

    def __init__(self, cfg: Config, workdir: str | None) -> None:
        self.own = workdir is None and CRASH_MODELS[cfg.crash_model].forks
        self.path = tempfile.mkdtemp(prefix="agentcore-kill-", dir=ram_dir()) if self.own else workdir

    def close(self) -> None:
        if self.own and self.path is not None:
            shutil.rmtree(self.path, ignore_errors=True)


def lay_out(disk: MemoryFiles | OsFiles, paths: list[str], files: dict[str, str]) -> None:
    """Put the files a crash would have left (checkpoints and temp files), and no others."""
    if not isinstance(disk, OsFiles):
        folder = os.path.dirname(paths[0]) if paths else ""
        disk.reset({os.path.join(folder, name): text.encode() for name, text in files.items()})
        return
    for p in paths:
        name = os.path.basename(p)
        for f, text in ((p, files.get(name)), (p + ".tmp", files.get(name + ".tmp"))):
            if text is not None:
                disk.write(f, text.encode())
            else:
                disk.remove(f)
