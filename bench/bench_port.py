"""What a scenario of a target costs through the port's fork server, against a fresh interpreter per
process; run by hand: .venv/bin/python bench/bench_port.py [--langgraph] [--depth 2] [--workers 1 2].

For each worker count: the target swept (agentcore.port.sweep_target) `--repeat` times, its median
wall time (the servers' start and the two uninterrupted runs included) and
seconds per scenario, and the processes per scenario (each crash point's first process
and its restarts). Then the median start-up of a fresh interpreter that imports the target's module
(`python -c "import <module>"`): what a process would pay on top if the port started an interpreter
per process instead of forking a pre-imported server; the per-scenario figure of that way is the fork
server's plus that start-up times the processes per scenario (an estimate from two measurements).

`--langgraph` sweeps examples.langgraph_triage:keyed_sync on examples/triage4.json (the extra must be
installed); its goal: depth 2 on 2 workers in <= 30 s (GOAL_SECONDS, printed against the figure), for
one pass (`samples=1`): its tools run in threads, so the sweep left unasked is a sample of
agentcore.port.sweep.AUTO_SAMPLES passes, each pass costing this.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentcore import jobs  # noqa: E402
from agentcore.port import sweep_target  # noqa: E402

GOAL_SECONDS = 30.0  # the LangGraph StateGraph sync sweep at depth 2 on 2 workers


def timed_sweep(target: str, job_path: str, depth: int, workers: int) -> tuple[float, int, int]:
    """Wall seconds, scenarios and processes of one sweep."""
    job = jobs.load(job_path)
    t0 = time.perf_counter()
    result = sweep_target(target, job, job_path, depth=depth, workers=workers, samples=1)
    wall = time.perf_counter() - t0
    processes = sum(1 + len([p for p in (r.first_label, r.second_label, r.third_label) if p]) for r in result.records)
    return wall, len(result.records), processes


def start_up(module: str, repeat: int) -> float:
    """The median wall seconds of a fresh interpreter importing `module`."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", f"import {module}"], cwd=ROOT, check=True, env={**os.environ})
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--langgraph", action="store_true", help="the StateGraph triage agent (the extra)")
    ap.add_argument("--target", help="MODULE:ATTR (default examples.plain_loop:naive)")
    ap.add_argument("--job", help="a job name or file (default triage; triage4.json with --langgraph)")
    ap.add_argument("--depth", type=int, default=1)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    target = args.target or ("examples.langgraph_triage:keyed_sync" if args.langgraph else "examples.plain_loop:naive")
    job = args.job or ("examples/triage4.json" if args.langgraph else "triage")
    print(f"{target} on {job}, depth {args.depth}, {args.repeat} sweeps each")
    print("| workers | median wall (s) | scenarios | processes/scenario | s/scenario |")
    print("|---:|---:|---:|---:|---:|")
    per_scenario, per_process = {}, 0.0
    for w in args.workers:
        runs = [timed_sweep(target, job, args.depth, w) for _ in range(args.repeat)]
        wall = statistics.median(r[0] for r in runs)
        _, scenarios, processes = runs[0]
        per_scenario[w], per_process = wall / scenarios, processes / scenarios
        print(f"| {w} | {wall:.2f} | {scenarios} | {per_process:.2f} | {wall / scenarios:.4f} |")
        if args.langgraph and args.depth == 2 and w == 2:
            print(f"goal: depth 2 on 2 workers in <= {GOAL_SECONDS:g} s; measured {wall:.1f} s")
    fresh = start_up(target.split(":")[0], args.repeat)
    one = per_scenario[min(per_scenario)]
    estimate = one + per_process * fresh
    print(
        f"fresh interpreter importing {target.split(':')[0]}: {fresh:.3f} s median start-up; per scenario "
        f"{one:.4f} s forked ({min(per_scenario)} worker(s)) against about {estimate:.3f} s with an interpreter "
        f"per process ({estimate / one:.0f}x)"
    )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
