"""Time the whole table (python -m agentcore table) with 1 and 2 workers; run by hand: make bench.

Prints the median wall time of REPEAT runs of the command (process start included), scenarios per
second, and the number of checkpoint saves the sweep performs.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agentcore import jobs  # noqa: E402
from agentcore.sweep import sweep, table_configs  # noqa: E402

REPEAT = 5


def main() -> None:
    result = sweep(table_configs(jobs.load("triage")))
    print(f"scenarios: {result.scenarios}, checkpoint saves: {result.saves}")
    print("| workers | median wall (s) | min (s) | scenarios/s |")
    print("|---:|---:|---:|---:|")
    for workers in (1, 2):
        times = []
        for _ in range(REPEAT):
            t = time.perf_counter()
            subprocess.run([sys.executable, "-m", "agentcore", "table", "--workers", str(workers)],
                           check=True, capture_output=True)
            times.append(time.perf_counter() - t)
        med = statistics.median(times)
        print(f"| {workers} | {med:.2f} | {min(times):.2f} | {result.scenarios / med:,.0f} |")


if __name__ == "__main__":
    main()
