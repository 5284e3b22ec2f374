"""`python -m tests.sweeps._poison_worker <celery worker options>`: a Celery worker in which one chunk
kills the process that plays it, every time (a chunk that keeps failing hard: a crash in native
code, the OOM killer). FAULTS_POISON="<config>:<first point>" names the chunk.

The chunk's play is patched in agentcore (pure Python, no Django needed yet) before Celery starts,
so the pool processes forked by the worker inherit it. The attempt is counted (chunks._claim)
before the play: the bound MAX_CHUNK_ATTEMPTS sees every death.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import agentcore as agentsweep

_play_chunk = agentsweep.run_chunk


def run_chunk(cfg: agentsweep.Config, chunk: agentsweep.Chunk, *args: Any, **kwargs: Any) -> agentsweep.ChunkResult:
    if f"{chunk.config}:{chunk.first}" == os.environ.get("FAULTS_POISON"):
        os._exit(70)
    return _play_chunk(cfg, chunk, *args, **kwargs)


if __name__ == "__main__":
    agentsweep.run_chunk = run_chunk
    from celery.__main__ import main

    sys.argv = ["celery", *sys.argv[1:]]
    main()
