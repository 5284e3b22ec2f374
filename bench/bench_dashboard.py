"""Launch-to-done of the chapter's whole table through the dashboard, beside the CLI (run by hand).

    .venv/bin/python bench/bench_dashboard.py [--reps 5] [--workers 1 2]

The dashboard side: `launch.sweep_create` (validation, planning, chunk rows, enqueue on commit)
with N Celery workers already running (as under `make run`), until the sweep's finished_at, set
in the database when it is done (every chunk's scenarios stored, the table cached). The embedded default (SQLite
and the filesystem broker) in a fresh temp folder, unless DATABASE_URL / CELERY_BROKER_URL are set.
The CLI side: `python -m agentcore table --workers N`, the whole process. Medians of --reps runs.

The machine's own ceiling, measured in every repetition too: the CLI's in-process sweep alone,
then two copies at once (each in its own process, on its own core). If one copy takes t1 alone and
t2a, t2b side by side, two cores do t1/t2a + t1/t2b times the work of one: no way of spreading the
sweep over two workers can beat that.
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

import agentcore as agentsweep
from agentcore import jobs
from sweeps import configs as sweep_configs
from sweeps import selectors
from sweeps.models import Chunk, Sweep
from sweeps.services import launch
from sweeps.workqueue import workers as sweepworkers
from sweepsite.celery import app


def start_workers(n: int, logdir: str) -> list[subprocess.Popen]:
    procs = []
    for i in range(n):
        logfile = open(os.path.join(logdir, f"worker{i}.log"), "w")  # noqa: SIM115
        procs.append(
            subprocess.Popen(
                sweepworkers.worker_argv(f"bench{i}-{os.getpid()}", "INFO"),
                env=sweepworkers.worker_environ(),
                cwd=ROOT,
                stdout=logfile,
                stderr=subprocess.STDOUT,
            )
        )
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
    # "Done" is the moment the database says so: the worker that stores the last chunk sets
    # finished_at. Polling for it every 0.25 s keeps this process off the workers' cores (two
    # workers on two cores: a tight poll would slow one of them down, as no browser does).
    t0 = time.time()
    sweep = launch.sweep_create(
        user=None,
        job_source=sweep_configs.builtin_job_source("triage"),
        configs=sweep_configs.table_configs_for(),
        depth=2,
    )
    launched = time.time() - t0
    while Sweep.objects.filter(pk=sweep.pk).values_list("status", flat=True).get() != Sweep.Status.DONE:
        time.sleep(0.25)
    sweep.refresh_from_db()
    took = sweep.finished_at.timestamp() - t0
    got = [r.to_dict() for r in selectors.sweep_table(sweep)]
    if got != expected:
        raise SystemExit(f"sweep {sweep.pk}: table differs from the CLI's")
    return took, launched


def warm_up() -> None:
    """A small sweep, one chunk per message: every worker imports, connects and caches."""
    sweep = launch.sweep_create(
        user=None,
        job_source=sweep_configs.builtin_job_source("triage"),
        configs=sweep_configs.table_configs_for()[:1],
        depth=1,
    )
    while Sweep.objects.filter(pk=sweep.pk).values_list("status", flat=True).get() != Sweep.Status.DONE:
        time.sleep(0.05)


def cli_once(workers: int) -> float:
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "agentcore", "table", "--workers", str(workers), "--format", "json"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - t0


SWEEP_ONCE = (
    "import time; import agentcore as s; from agentcore import jobs; "
    "c = s.table_configs(jobs.load('triage')); "
    "t = time.perf_counter(); s.sweep(c); print(time.perf_counter() - t)"
)


def ceiling_once() -> float:
    """What two cores give this work here: one in-process sweep alone, then two at once."""

    def start() -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-c", SWEEP_ONCE], cwd=ROOT, stdout=subprocess.PIPE, text=True)

    alone = float(start().communicate()[0])
    both = [start(), start()]
    return sum(alone / float(p.communicate()[0]) for p in both)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = ap.parse_args()
    call_command("migrate", verbosity=0)
    expected = [r.to_dict() for r in agentsweep.sweep(agentsweep.table_configs(jobs.load("triage"))).rows]
    db = sweepworkers.database_url().split(":")[0]
    print(
        f"database {db}, broker {app.conf.broker_url.split(':')[0]}, {os.cpu_count()} cores, "
        f"{args.reps} repetitions, medians in seconds"
    )
    counts = sorted(set(args.workers))
    runs: dict[int, list[tuple[float, float]]] = {n: [] for n in counts}
    cli: dict[int, list[float]] = {n: [] for n in counts}
    ceiling: list[float] = []
    # The machine's speed drifts over minutes: every repetition measures each worker count,
    # dashboard and CLI side by side (the order alternating), rather than one count after the
    # other. Each measurement gets its own fresh workers, warmed up by a small sweep.
    for rep in range(args.reps):
        for n in counts if rep % 2 == 0 else counts[::-1]:
            procs = start_workers(n, VAR)
            try:
                warm_up()
                runs[n].append(dashboard_once(expected))
            finally:
                stop_workers(procs)
            cli[n].append(cli_once(n))
        ceiling.append(ceiling_once())
    results = {}
    try:
        for n in counts:
            d = statistics.median(r[0] for r in runs[n])
            launch = statistics.median(r[1] for r in runs[n])
            c = statistics.median(cli[n])
            results[n] = (d, c)
            print(
                f"{n} worker(s): dashboard {d:.2f} s (launch {launch:.2f} s) | CLI {c:.2f} s | ratio {d / c:.2f}"
                f"  [dashboard runs: {', '.join(f'{r[0]:.2f}' for r in runs[n])}; CLI runs: "
                f"{', '.join(f'{x:.2f}' for x in cli[n])}]",
                flush=True,
            )
        if 1 in results and 2 in results:
            paired = [one[0] / two[0] for one, two in zip(runs[1], runs[2], strict=True)]
            print(
                f"speed-up with 2 workers: dashboard {results[1][0] / results[2][0]:.2f}x (median of the "
                f"repetitions' own: {statistics.median(paired):.2f}x), CLI {results[1][1] / results[2][1]:.2f}x"
            )
        print(
            f"this machine's ceiling for 2 cores (two in-process sweeps at once): median "
            f"{statistics.median(ceiling):.2f}x [{', '.join(f'{c:.2f}' for c in ceiling)}]"
        )
        scen = Chunk.objects.filter(stored=True).count()
        print(f"({Sweep.objects.count()} sweeps, {scen} chunks stored)")
    finally:
        if os.environ["SWEEPSITE_VAR"] == VAR:
            shutil.rmtree(VAR, ignore_errors=True)


if __name__ == "__main__":
    main()
