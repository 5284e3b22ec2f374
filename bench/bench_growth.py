"""How a sweep's cost grows with the job; run by hand: .venv/bin/python bench/bench_growth.py.

Sweeps one configuration (default: the real loop on a keyed tracker, 2 workers) on generated jobs of
1, 2, 4, ... turn pairs (agentcore.jobs.turn_pairs: turn A files an issue and searches, turn B
comments on A's issue), each in a fresh `python -m agentcore sweep` process, process start
included, and prints a Markdown table: scenarios, restarts played (the rest merged: agentcore.harness.merge),
wall time, scenarios/s, and the peak resident memory of the process and its workers. `--no-merge`
measures the sweep that plays every scenario.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentcore import jobs  # noqa: E402


def job_file(n: int, folder: str) -> str:
    """The job file of a generated job (agentcore.jobs.turn_pairs_source)."""
    path = Path(folder) / f"pairs-{n}.json"
    path.write_text(jobs.turn_pairs_source(n))
    return str(path)


def measure(path: str, args: argparse.Namespace) -> tuple[int, int, float, int]:
    """(scenarios, played, wall seconds, peak KB of the sweep and its workers)."""
    cmd = [
        sys.executable,
        "-c",
        "import resource, runpy, sys; sys.argv = ['agentcore', *sys.argv[1:]]\n"
        "try:\n    runpy.run_module('agentcore', run_name='__main__')\nfinally:\n"
        "    r = max(resource.getrusage(w).ru_maxrss for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))\n"
        "    print(f'peak {r}', file=sys.stderr)",
        "sweep",
        "--job",
        path,
        "--design",
        args.design,
        "--tracker",
        args.tracker,
        "--workers",
        str(args.workers),
        "--format",
        "csv",
        *(["--no-merge"] if args.no_merge else []),
    ]
    t = time.perf_counter()
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t
    counts = re.search(r"(\d+) scenarios, (\d+) played", out.stderr)
    peak = re.search(r"peak (\d+)", out.stderr)
    assert counts and peak, out.stderr
    return int(counts[1]), int(counts[2]), wall, int(peak[1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--max-pairs", type=int, default=32)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--design", default="loop")
    ap.add_argument("--tracker", default="keyed")
    ap.add_argument("--no-merge", action="store_true")
    args = ap.parse_args()
    print("| turn pairs | scenarios | played | time | scenarios/s | peak memory |")
    print("|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as folder:
        n = 1
        while n <= args.max_pairs:
            scenarios, played, wall, peak = measure(job_file(n, folder), args)
            rate = scenarios / wall
            mb = peak / 1024
            print(f"| {n} | {scenarios:,} | {played:,} | {wall:.2f} s | {rate:,.0f} | {mb:.0f} MB |", flush=True)
            n *= 2


if __name__ == "__main__":
    main()
