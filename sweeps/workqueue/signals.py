"""The Celery signal handlers of a worker: the database check at its start, the leases of the
messages it receives and the tasks it plays, and its lease keeper's thread (workqueue/keeper.py).

Rules:
- Connected when this module is imported: sweeps/apps.py imports it when Django sets the app up,
  which Celery's Django fixup does in a worker before it sends worker_init (and in every other
  process, where the worker signals never fire).
- A worker starts only with a database that answers: before it takes any message (worker_init), it
  asks (sweeps/health.py); if the database is unreachable it says so in one line and exits with
  status 1, rather than reporting ready and failing every task.
- A worker's main process takes the leases of a message's chunks (or its audit unit: the same for
  units throughout) when it receives the message (task_received): should the worker die before
  the task claims them, they run out with it (and are queued again). The process that runs the
  task renews them from the task's start to its end (task_prerun, task_postrun: keeper.play, played).
- The keeper starts when the worker is ready (its main process, leading when
  settings.SWEEPSITE_STALL_SECONDS > 0) and in each prefork pool process (never leading), and
  stops as the worker shuts down.
"""

from __future__ import annotations

import sys
from typing import Any

from celery.signals import (
    task_postrun,
    task_prerun,
    task_received,
    worker_init,
    worker_process_init,
    worker_ready,
    worker_shutting_down,
)
from django.conf import settings
from django.db import connections

from sweeps import health
from sweeps.workqueue import keeper, leases, publish


@worker_init.connect
def refuse_to_start_without_the_database(sender: Any = None, **kwargs: Any) -> None:
    problem = health.database_problem()
    connections.close_all()
    if problem:
        sys.stderr.write(f"celery worker: {problem}: not started\n")
        sys.stderr.flush()
        raise SystemExit(1)


def _leased(name: str, args: Any, kwargs: Any) -> tuple[list[int], list[int]]:
    return publish.chunk_ids_of(name, args or (), kwargs or {}), publish.audit_unit_ids_of(
        name, args or (), kwargs or {}
    )


@task_received.connect
def _received(request: Any = None, **_: Any) -> None:
    chunk_ids, unit_ids = _leased(
        getattr(request, "task_name", ""), getattr(request, "args", None), getattr(request, "kwargs", None)
    )
    if chunk_ids or unit_ids:
        keeper.guarded(
            "taking the leases of a message",
            lambda: leases.leases_renew(chunk_ids=chunk_ids, unit_ids=unit_ids, receipt=True),
        )


@task_prerun.connect
def _play(task_id: str = "", task: Any = None, args: Any = None, kwargs: Any = None, **_: Any) -> None:
    chunk_ids, unit_ids = _leased(getattr(task, "name", ""), args, kwargs)
    if chunk_ids or unit_ids:
        keeper.play(task_id, chunk_ids, unit_ids)


@task_postrun.connect
def _played(task_id: str = "", **_: Any) -> None:
    keeper.played(task_id)


@worker_ready.connect
def start_watchdog(sender: Any = None, **kwargs: Any) -> None:
    keeper.start(float(getattr(settings, "SWEEPSITE_STALL_SECONDS", 0) or 0), main=True)


@worker_process_init.connect
def start_pool_keeper(**kwargs: Any) -> None:
    """A prefork pool process renews the leases of what it plays (it never leads)."""
    keeper.start(0.0, main=False)


@worker_shutting_down.connect
def stop_watchdog(sender: Any = None, **kwargs: Any) -> None:
    keeper.stop()
