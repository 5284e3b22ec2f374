"""What a second worker gives the CLI; run by hand: .venv/bin/python bench/bench_workers.py.

For the whole triage table (`python -m agentcore table`) and the 8-pair generated job
(`sweep --design loop --tracker keyed` on agentcore.jobs.turn_pairs(8), the job file that
bench/bench_growth.py writes), each round times, in alternating order:
- the command with --workers 1 and with --workers 2, each a fresh process (wall time, process start
  and imports included: what a user waits for);
- the same sweep in a fresh process, timing only `sweep()` (the sweep's own work, without the
  interpreter's start and imports);
- what two cores give this work on this machine now: that in-process sweep with one worker alone,
  then two copies at once (2 x alone / together: 2.0 on two idle cores).
It prints each median, the ratio of the medians and the median of the rounds' own ratios, and the
load average before and after (the machine is shared: a loaded machine cannot show 2.0).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench_growth import job_file  # noqa: E402

# Times sweep() alone in a fresh process: argv[1] is "table" or a job file, argv[2] the workers.
INNER = """
import sys, time
from agentcore import designs, jobs
from agentcore.sweep import Config, sweep, table_configs
what, workers = sys.argv[1], int(sys.argv[2])
if what == "table":
    configs = table_configs(jobs.load("triage"))
else:
    configs = [Config(jobs.load(what), designs.get("loop", ()), "keyed")]
t = time.perf_counter()
sweep(configs, workers=workers)
print(time.perf_counter() - t)
"""


def command(what: str, workers: int) -> list[str]:
    if what == "table":
        return [sys.executable, "-m", "agentcore", "table", "--format", "csv", "--workers", str(workers)]
    return [sys.executable, "-m", "agentcore", "sweep", "--job", what, "--design", "loop", "--tracker", "keyed",
            "--format", "csv", "--workers", str(workers)]


def wall(what: str, workers: int) -> float:
    t = time.perf_counter()
    subprocess.run(command(what, workers), cwd=ROOT, check=True, capture_output=True)
    return time.perf_counter() - t


def inner(what: str, workers: int, copies: int = 1) -> float:
    """sweep()'s own seconds; with copies > 1, that many at once, the slowest."""
    procs = [subprocess.Popen([sys.executable, "-c", INNER, what, str(workers)], cwd=ROOT, stdout=subprocess.PIPE,
                              text=True) for _ in range(copies)]
    return max(float(p.communicate()[0]) for p in procs)


def report(name: str, one: list[float], two: list[float]) -> None:
    m1, m2 = statistics.median(one), statistics.median(two)
    own = statistics.median(a / b for a, b in zip(one, two, strict=True))
    print(f"| {name} | {m1:.3f} s | {m2:.3f} s | {m1 / m2:.2f}x | {own:.2f}x |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--pairs", type=int, default=8, help="turn pairs of the generated job (default 8)")
    args = ap.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {args.rounds} rounds")
    print("| measure | 1 worker | 2 workers | ratio of medians | median of rounds' ratios |")
    print("|---|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as folder:
        for what, name in (("table", "table"), (job_file(args.pairs, folder), f"{args.pairs}-pair job")):
            times: dict[str, list[float]] = {k: [] for k in ("w1", "w2", "i1", "i2", "alone", "both")}
            for r in range(args.rounds):
                for workers in ((1, 2) if r % 2 == 0 else (2, 1)):
                    times[f"w{workers}"].append(wall(what, workers))
                for workers in ((1, 2) if r % 2 == 0 else (2, 1)):
                    times[f"i{workers}"].append(inner(what, workers))
                times["alone"].append(inner(what, 1))
                times["both"].append(inner(what, 1, copies=2) / 2)
            report(f"{name}: CLI, whole process", times["w1"], times["w2"])
            report(f"{name}: sweep() in process", times["i1"], times["i2"])
            report(f"{name}: two cores (one sweep alone; two at once, per sweep)", times["alone"], times["both"])
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
