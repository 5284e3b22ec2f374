"""Launch-to-done of the chapter's whole table through the dashboard, beside the CLI (run by hand).

    .venv/bin/python bench/bench_dashboard.py [--reps 5] [--workers 1 2]

The dashboard side: `services.sweep_create` (validation, planning, chunk rows, enqueue on commit)
with N Celery workers already running (as under `make run`), until the sweep's status is "done"
in the database (every chunk's scenarios stored, the table cached). The embedded default (SQLite
and the filesystem broker) in a fresh temp folder, unless DATABASE_URL / CELERY_BROKER_URL are set.
The CLI side: `python -m agentcore table --workers N`, the whole process. Medians of --reps runs.
"""

# ruff: noqa: E402  (Django is set up before the project imports)
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
VAR = tempfile.mkdtemp(prefix="sweepsite-bench-")
os.environ.setdefault("SWEEPSITE_VAR", VAR)
os.environ.setdefault("SWEEPSITE_QUEUE", f"sweepsite-bench-{os.getpid()}")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sweepsite.settings")

import django

django.setup()

from django.core.management import call_command

from agentcore import jobs
from agentcore import sweep as agentsweep
from sweeps import selectors, services, tasks
from sweeps.models import Chunk, Sweep


def start_workers(n: int, logdir: str) -> list[subprocess.Popen]:
    procs = []
    for i in range(n):
        logfile = open(os.path.join(logdir, f"worker{i}.log"), "w")  # noqa: SIM115
        procs.append(subprocess.Popen(tasks.worker_argv(f"bench{i}-{os.getpid()}", "INFO"), env=tasks.worker_environ(),
                                      cwd=ROOT, stdout=logfile, stderr=subprocess.STDOUT))
    deadline = time.monotonic() + 60
    for i in range(n):
        path = os.path.join(logdir, f"worker{i}.log")
        while "ready." not in Path(path).read_text():
            if time.monotonic() > deadline or procs[i].poll() is not None:
                raise SystemExit(f"worker {i} did not start:\n{Path(path).read_text()}")
            time.sleep(0.05)
    return procs


def stop_workers(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def dashboard_once(expected: list) -> tuple[float, float]:
    t0 = time.perf_counter()
    sweep = services.sweep_create(user=None, job_source=services.builtin_job_source("triage"),
                                  configs=services.table_configs_for(), depth=2)
    launched = time.perf_counter() - t0
    while Sweep.objects.filter(pk=sweep.pk).values_list("status", flat=True).get() != Sweep.Status.DONE:
        time.sleep(0.01)
    took = time.perf_counter() - t0
    sweep.refresh_from_db()
    got = [r.to_dict() for r in selectors.sweep_table(sweep)]
    if got != expected:
        raise SystemExit(f"sweep {sweep.pk}: table differs from the CLI's")
    return took, launched


def cli_once(workers: int) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "agentcore", "table", "--workers", str(workers), "--format", "json"],
                   cwd=ROOT, check=True, capture_output=True)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = ap.parse_args()
    call_command("migrate", verbosity=0)
    expected = [r.to_dict() for r in agentsweep.sweep(agentsweep.table_configs(jobs.load("triage"))).rows]
    db = tasks.database_url().split(":")[0]
    print(f"database {db}, broker {tasks.app.conf.broker_url.split(':')[0]}, {os.cpu_count()} cores, "
          f"{args.reps} repetitions, medians in seconds")
    results = {}
    try:
        for n in args.workers:
            procs = start_workers(n, VAR)
            runs, cli = [], []
            try:
                dashboard_once(expected)  # warm-up: imports and caches in the workers
                for _ in range(args.reps):  # interleaved, so that a busy moment hits both sides
                    runs.append(dashboard_once(expected))
                    cli.append(cli_once(n))
            finally:
                stop_workers(procs)
            d = statistics.median(r[0] for r in runs)
            launch = statistics.median(r[1] for r in runs)
            c = statistics.median(cli)
            results[n] = (d, c)
            print(f"{n} worker(s): dashboard {d:.2f} s (launch {launch:.2f} s) | CLI {c:.2f} s | ratio {d / c:.2f}"
                  f"  [dashboard runs: {', '.join(f'{r[0]:.2f}' for r in runs)}; CLI runs: "
                  f"{', '.join(f'{x:.2f}' for x in cli)}]", flush=True)
        if 1 in results and 2 in results:
            print(f"speed-up with 2 workers: dashboard {results[1][0] / results[2][0]:.2f}x, "
                  f"CLI {results[1][1] / results[2][1]:.2f}x")
        scen = Chunk.objects.filter(stored=True).count()
        print(f"({Sweep.objects.count()} sweeps, {scen} chunks stored)")
    finally:
        if os.environ["SWEEPSITE_VAR"] == VAR:
            shutil.rmtree(VAR, ignore_errors=True)


if __name__ == "__main__":
    main()
