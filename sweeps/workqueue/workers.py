"""Worker processes: how to start Celery workers that share this process's database, broker and
queue, and whether any worker consumes the queue. Used by `manage.py sweep`, `/healthz` and the tests.

The broker and the queue are the current Celery app's (celery.current_app: the project's,
sweepsite/celery.py, which a worker started here loads with `-A sweepsite`)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from typing import IO, Any, NamedTuple
from urllib.parse import quote

from celery import current_app
from django.conf import settings
from django.db import connections

from sweeps.limits import WORKER_PING_ROUNDS, WORKER_PING_SECONDS, WORKER_STOP_SECONDS


def database_url(alias: str = "default") -> str:
    """A DATABASE_URL for the database this process uses now (under tests: the test database)."""
    s = connections[alias].settings_dict
    if s["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{s['NAME']}"
    if "postgresql" in s["ENGINE"]:
        user, password = quote(s.get("USER") or "", safe=""), quote(s.get("PASSWORD") or "", safe="")
        auth = f"{user}:{password}@" if password else (f"{user}@" if user else "")
        host = s.get("HOST") or ""
        port = f":{s['PORT']}" if s.get("PORT") else ""
        return f"postgres://{auth}{host}{port}/{quote(s['NAME'], safe='')}"
    raise ValueError(f"cannot start workers for database engine {s['ENGINE']}")


def worker_environ() -> dict[str, str]:
    """The environment for a worker subprocess that shares this process's database and broker."""
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE=os.environ.get("DJANGO_SETTINGS_MODULE", "sweepsite.settings"),
        DATABASE_URL=database_url(),
        CELERY_BROKER_URL=str(current_app.conf.broker_url),
        SWEEPSITE_VAR=str(settings.VAR_DIR),
        SWEEPSITE_QUEUE=str(current_app.conf.task_default_queue),
    )
    return env


def queue_name() -> str:
    return str(current_app.conf.task_default_queue)


def queue_workers(timeout: float = 1.0, limit: int | None = None) -> list[str]:
    """The workers consuming this process's task queue, by name, asked over the broker's control
    channel (Celery's remote control: `inspect().active_queues()`); [] if none answers within
    `timeout` seconds. With `limit`, it stops waiting after that many replies. A solo-pool worker
    answers between two tasks. An unreachable broker raises kombu's errors."""
    queue = queue_name()
    replies = current_app.control.inspect(timeout=timeout, limit=limit).active_queues() or {}
    return sorted(name for name, queues in replies.items() if any(q.get("name") == queue for q in queues or ()))


def await_queue_worker() -> float:
    """Ask up to WORKER_PING_ROUNDS times whether a worker consumes the queue: 0 if one answered,
    else the seconds waited in all. The first answer ends the first round; a worker busy with a task
    answers after it. An unreachable broker raises kombu's errors (or OSError)."""
    waited = 0.0
    for limit in (1, *[None] * (WORKER_PING_ROUNDS - 1)):
        if queue_workers(WORKER_PING_SECONDS, limit):
            return 0.0
        waited += WORKER_PING_SECONDS
    return waited


def worker_argv(
    name: str, loglevel: str = "WARNING", *, pool: str = "solo", concurrency: int = 1, queue: str | None = None
) -> list[str]:
    """A worker on this process's queue (or `queue`). The default, one solo-pool process, runs tasks
    in the worker's own process: it fetches the next message as soon as a task ends, where a prefork
    pool on a polling transport (the filesystem broker) waits for its next poll. The fault tests ask
    for `pool="prefork"` to have pool processes to kill."""
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "sweepsite",
        "worker",
        "--pool",
        pool,
        "--concurrency",
        str(concurrency),
        "-n",
        f"{name}@%h",
        "-Q",
        queue or queue_name(),
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
        "--loglevel",
        loglevel,
    ]


class Worker(NamedTuple):
    """A worker subprocess and the temporary file its output goes to."""

    proc: subprocess.Popen
    log: IO[str]


def start_workers(n: int, prefix: str = "sweep") -> list[Worker]:
    """N solo-pool workers sharing this process's database, broker and queue."""
    workers = []
    env = worker_environ()
    for i in range(n):
        log = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 - closed in stop_workers
        argv = worker_argv(f"{prefix}{i + 1}-{os.getpid()}")
        workers.append(Worker(subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT), log))
    return workers


def stop_workers(workers: list[Worker]) -> None:
    """Warm shutdown (a running task finishes first), killed after WORKER_STOP_SECONDS."""
    for w in workers:
        if w.proc.poll() is None:
            w.proc.terminate()
    for w in workers:
        try:
            w.proc.wait(WORKER_STOP_SECONDS)
        except subprocess.TimeoutExpired:
            w.proc.kill()
            w.proc.wait()
        w.log.close()


def exited(workers: list[Worker]) -> str | None:
    """If every one of these workers has exited: the last lines of the first one's output; else None."""
    if not workers or any(w.proc.poll() is None for w in workers):
        return None
    log: Any = workers[0].log
    log.seek(0)
    return " | ".join(log.read().strip().splitlines()[-3:])
