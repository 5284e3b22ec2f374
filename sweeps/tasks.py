"""Celery tasks: thin, one service call each, taking IDs only.

Rules:
- acks_late + reject_on_worker_lost: a message is acknowledged after its task ran, and a task
  whose pool process died goes back to the queue. The services are idempotent, so a redelivery
  stores nothing twice.
- Database trouble (a locked SQLite file, a dropped connection) is retried a bounded number of
  times with backoff; a chunk that still fails (or keeps killing its process, counted in
  Chunk.attempts by the service) fails its sweep with a message, and the sweep can be resumed.
- A message lost with its worker (SIGKILL) or its broker (restarted empty) is not redelivered by
  these settings alone: the stall watchdog every worker runs (sweepsite/celery.py,
  services.sweeps_resume_stalled) queues the sweep's missing chunks again.
- `worker_argv` / `worker_environ`: how to start a worker that shares this process's database,
  broker and queue (used by `manage.py sweep --workers N` and by the tests).
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any
from urllib.parse import quote

from celery import Task, shared_task
from django.conf import settings
from django.db import InterfaceError, OperationalError, connections

from sweeps import services
from sweepsite.celery import app

log = logging.getLogger(__name__)

RETRY = {
    "autoretry_for": (OperationalError, InterfaceError),
    "max_retries": 3,
    "retry_backoff": 1,
    "retry_backoff_max": 20,
    "retry_jitter": True,
}


class ChunkTask(Task):
    def on_failure(self, exc: BaseException, task_id: str, args: Any, kwargs: Any, einfo: Any) -> None:
        # run_chunk(chunk_id) or run_chunks(chunk_ids): chunks run in order, so the first one not
        # stored is the one that failed (chunk_failed ignores stored chunks).
        ids = kwargs.get("chunk_id", kwargs.get("chunk_ids", args[0] if args else []))
        ids = ids if isinstance(ids, list) else [ids]
        try:
            services.chunks_failed(chunk_ids=ids, error=f"{type(exc).__name__}: {exc}")
        except Exception:  # noqa: BLE001 - the database itself may be what failed; the sweep stays resumable
            log.exception("chunks %s: cannot record the failure", ids)


@shared_task(base=ChunkTask, acks_late=True, reject_on_worker_lost=True, ignore_result=True, **RETRY)
def run_chunk(chunk_id: int) -> bool:
    """Run and store one chunk of a sweep (no-op if it is stored already)."""
    return services.chunk_run(chunk_id=chunk_id)


@shared_task(base=ChunkTask, acks_late=True, reject_on_worker_lost=True, ignore_result=True, **RETRY)
def run_chunks(chunk_ids: list[int]) -> int:
    """Run and store a few chunks, each in its own transaction (stored ones are skipped)."""
    return services.chunks_run(chunk_ids=chunk_ids)


@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True, **RETRY)
def resume_question(question_id: int) -> bool:
    """Resume the scenario of an answered question (no-op unless it is answered and not resumed)."""
    return services.question_resume(question_id=question_id)


# --- starting workers ------------------------------------------------------------------------


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
        CELERY_BROKER_URL=str(app.conf.broker_url),
        SWEEPSITE_VAR=str(settings.VAR_DIR),
        SWEEPSITE_QUEUE=str(app.conf.task_default_queue),
    )
    return env


def queue_workers(timeout: float = 1.0, limit: int | None = None) -> list[str]:
    """The workers consuming this process's task queue, by name, asked over the broker's control
    channel (Celery's remote control: `inspect().active_queues()`); [] if none answers within
    `timeout` seconds. With `limit`, it stops waiting after that many replies. A solo-pool worker
    answers between two tasks. An unreachable broker raises kombu's errors."""
    queue = str(app.conf.task_default_queue)
    replies = app.control.inspect(timeout=timeout, limit=limit).active_queues() or {}
    return sorted(name for name, queues in replies.items() if any(q.get("name") == queue for q in queues or ()))


def worker_argv(name: str, loglevel: str = "WARNING", *, pool: str = "solo", concurrency: int = 1) -> list[str]:
    """A worker on this process's queue. The default, one solo-pool process, runs tasks in the
    worker's own process: it fetches the next message as soon as a task ends, where a prefork pool
    on a polling transport (the filesystem broker) waits for its next poll. The fault tests ask for
    `pool="prefork"` to have pool processes to kill."""
    return [sys.executable, "-m", "celery", "-A", "sweepsite", "worker", "--pool", pool, "--concurrency",
            str(concurrency), "-n", f"{name}@%h", "-Q", str(app.conf.task_default_queue), "--without-gossip",
            "--without-mingle", "--without-heartbeat", "--loglevel", loglevel]
