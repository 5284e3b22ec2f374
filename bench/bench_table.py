"""Time the whole table (python -m agentcore table) with 1 and 2 workers; run by hand: make bench.

Prints the median wall time of --repeat runs of the command (process start included), scenarios
per second and milliseconds per scenario, and the number of checkpoint saves the sweep performs.
`--crash-model` and `--fsync` time the table under another crash model (kill: a forked child per
process, SIGKILLed at its point).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agentcore import jobs, sweep, table_configs  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--crash-model", default="panic")
    ap.add_argument("--fsync", choices=("on", "off"), default="on")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = ap.parse_args()
    conditions = ["--crash-model", args.crash_model, "--fsync", args.fsync]
    result = sweep(
        table_configs(jobs.load("triage"), crash_model=args.crash_model, fsync=args.fsync == "on"),
        workers=max(args.workers),
    )
    print(f"{' '.join(conditions)}: scenarios: {result.scenarios}, checkpoint saves: {result.saves}")
    print("| workers | median wall (s) | min (s) | scenarios/s | ms/scenario |")
    print("|---:|---:|---:|---:|---:|")
    for workers in args.workers:
        times = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "agentcore", "table", "--workers", str(workers), *conditions],
                check=True,
                capture_output=True,
            )
            times.append(time.perf_counter() - t)
        med = statistics.median(times)
        print(
            f"| {workers} | {med:.2f} | {min(times):.2f} | {result.scenarios / med:,.0f} | "
            f"{1000 * med / result.scenarios:.2f} |"
        )


if __name__ == "__main__":
    main()
