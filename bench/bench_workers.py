"""What a second worker gives the CLI; run by hand: .venv/bin/python bench/bench_workers.py.

For the whole triage table (`python -m agentcore table`), the same table unmerged (`--no-merge`,
every scenario played: the work the table was before agentcore.harness.merge) and the 8-pair generated job
(`sweep --design loop --tracker keyed` on agentcore.jobs.turn_pairs(8), the job file that
bench/bench_growth.py writes), each round times, in alternating order:
- the command with --workers 1 and with --workers 2, each a fresh process (wall time, process start
  and imports included: what a user waits for);
- the same sweep in a fresh process, timing only `sweep()` (the sweep's own work, without the
  interpreter's start and imports), and the CPU seconds it took in its own process and in its
  workers (what a second worker adds in handing out work and sending results, load or not);
- what two cores give this work on this machine now: that in-process sweep with one worker alone,
  then two copies at once (2 x alone / together: 2.0 on two idle cores).
It prints each median, the ratio of the medians and the median of the rounds' own ratios, and the
load average before and after (the machine is shared: a loaded machine cannot show 2.0).

What no second worker shortens: the interpreter's start and the imports, timed as the median of
`python -m agentcore key` (a command that sweeps nothing); with it, the best a CLI command can
reach on two cores (Amdahl: start + (whole - start) / 2). Commands run as on a user's machine,
with their bytecode cached (PYTHONDONTWRITEBYTECODE dropped, one run first to write it).
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

TREE = [ROOT]  # the checkout whose agentcore is timed (--tree)

# Times sweep() alone in a fresh process: argv[1] is "table" or a job file, argv[2] the workers.
INNER = """
import resource, sys, time
from agentcore import Config, designs, jobs, sweep, table_configs
what, workers, merge = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "merge"
if what == "table":
    configs = table_configs(jobs.load("triage"))
else:
    configs = [Config(jobs.load(what), designs.get("loop", ()), "keyed")]
def cpu(who):
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime
t, own, pool = time.perf_counter(), cpu(resource.RUSAGE_SELF), cpu(resource.RUSAGE_CHILDREN)
sweep(configs, workers=workers, keep=False, merge=merge)
print(time.perf_counter() - t, cpu(resource.RUSAGE_SELF) - own, cpu(resource.RUSAGE_CHILDREN) - pool)
"""


ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def command(what: str, workers: int, merge: bool) -> list[str]:
    more = [] if merge else ["--no-merge"]
    if what == "table":
        return [sys.executable, "-m", "agentcore", "table", "--format", "csv", "--workers", str(workers), *more]
    return [
        sys.executable,
        "-m",
        "agentcore",
        "sweep",
        "--job",
        what,
        "--design",
        "loop",
        "--tracker",
        "keyed",
        "--format",
        "csv",
        "--workers",
        str(workers),
        *more,
    ]


def wall(argv: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(argv, cwd=TREE[0], check=True, capture_output=True, env=ENV)
    return time.perf_counter() - t


def inner(what: str, workers: int, merge: bool, copies: int = 1) -> tuple[float, float, float]:
    """sweep()'s own seconds, and CPU seconds in its process and in its workers; with copies > 1,
    that many at once, the slowest."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", INNER, what, str(workers), "merge" if merge else "no-merge"],
            cwd=TREE[0],
            stdout=subprocess.PIPE,
            text=True,
            env=ENV,
        )
        for _ in range(copies)
    ]
    wall, own, pool = max(tuple(map(float, p.communicate()[0].split())) for p in procs)
    return wall, own, pool


def report(name: str, one: list[float], two: list[float], start: float | None = None) -> None:
    m1, m2 = statistics.median(one), statistics.median(two)
    own = statistics.median(a / b for a, b in zip(one, two, strict=True))
    bound = "" if start is None else f" {m1 / (start + (m1 - start) / 2):.2f}x |"
    print(f"| {name} | {m1:.3f} s | {m2:.3f} s | {m1 / m2:.2f}x | {own:.2f}x |{bound}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--pairs", type=int, action="append", help="turn pairs of a generated job (repeatable; default 8)")
    ap.add_argument("--jobs-only", action="store_true", help="only the generated jobs, not the table")
    ap.add_argument("--tree", type=Path, default=ROOT, help="time the agentcore of another checkout (default this one)")
    args = ap.parse_args()
    TREE[0] = args.tree
    print(f"{TREE[0]}: load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {args.rounds} rounds")
    key = [sys.executable, "-m", "agentcore", "key", "run", "call"]
    wall(key)  # writes the bytecode caches
    start = statistics.median(wall(key) for _ in range(args.rounds * 2))
    print(f"start-up (interpreter and imports: `python -m agentcore key`, median): {start:.3f} s")
    print("| measure | 1 worker | 2 workers | ratio of medians | median of rounds' ratios | best with that start-up |")
    print("|---|---:|---:|---:|---:|---:|")
    cpus: list[str] = []
    with tempfile.TemporaryDirectory() as folder:
        cases = [] if args.jobs_only else [("table", True, "table"), ("table", False, "table unmerged")]
        cases += [(job_file(n, folder), True, f"{n}-pair job") for n in args.pairs or [8]]
        for what, merge, name in cases:
            times: dict[str, list[float]] = {k: [] for k in ("w1", "w2", "i1", "i2", "alone", "both")}
            cpu: dict[int, list[tuple[float, float]]] = {1: [], 2: []}
            for r in range(args.rounds):
                for workers in (1, 2) if r % 2 == 0 else (2, 1):
                    times[f"w{workers}"].append(wall(command(what, workers, merge)))
                for workers in (1, 2) if r % 2 == 0 else (2, 1):
                    seconds, own, pool = inner(what, workers, merge)
                    times[f"i{workers}"].append(seconds)
                    cpu[workers].append((own, pool))
                times["alone"].append(inner(what, 1, merge)[0])
                times["both"].append(inner(what, 1, merge, copies=2)[0] / 2)
            report(f"{name}: CLI, whole process", times["w1"], times["w2"], start)
            report(f"{name}: sweep() in process", times["i1"], times["i2"], 0.0)
            report(f"{name}: two cores (one sweep alone; two at once, per sweep)", times["alone"], times["both"])
            one = statistics.median(own + pool for own, pool in cpu[1])
            own2, pool2 = (statistics.median(c[n] for c in cpu[2]) for n in (0, 1))
            cpus.append(
                f"{name}: sweep() CPU, medians: 1 worker {one:.3f} s; 2 workers {own2:.3f} s here + "
                f"{pool2:.3f} s in the workers = {own2 + pool2:.3f} s ({(own2 + pool2) / one:.2f}x one's)"
            )
    print("\n".join(cpus))
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
