"""Health: whether the database and the task broker answer, and how many workers consume the queue.

Rules:
- Each check says what is wrong in one line ("the database is unreachable (connection refused ...)")
  or None; none raises. The same checks serve `/healthz` (sweepsite/health.py serves `report`), a
  worker's start (sweeps/workqueue/signals.py: a worker whose database is unreachable stops at once
  with that line) and `manage.py migrate` (sweeps/management/commands/migrate.py).
- The report is ok when the database and the broker answer and at least one worker consumes the
  queue; else its problems say why: {"ok", "database", "broker", "workers", "queue", "problems"}.
  Live workers are asked over the broker's control channel (workqueue.workers.queue_workers),
  waiting limits.HEALTH_PING_SECONDS for their answers; a solo-pool worker busy with a task answers
  after it.
- The broker is the current Celery app's (celery.current_app: the project's, sweepsite/celery.py).
"""

from __future__ import annotations

from typing import Any

from celery import current_app
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections

from sweeps import limits
from sweeps.workqueue import workers


def one_line(e: BaseException) -> str:
    """An exception's message on one line (psycopg's span several)."""
    text = " ".join(str(e).split()) or type(e).__name__
    return text if len(text) <= limits.ERROR_CHARS else text[: limits.ERROR_CHARS - 1] + "…"


def database_problem(alias: str = DEFAULT_DB_ALIAS) -> str | None:
    """None if the database answers a query; else why not, in one line."""
    try:
        with connections[alias].cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError as e:
        return f"the database is unreachable ({one_line(e)})"
    return None


def broker_problem() -> str | None:
    """None if the task broker takes a connection; else why not, in one line."""
    try:
        with current_app.connection_for_read() as conn:
            conn.ensure_connection(max_retries=0, timeout=limits.HEALTH_PING_SECONDS)
    except Exception as e:  # noqa: BLE001 - kombu raises its transports' own errors
        return f"the task broker is unreachable ({one_line(e)})"
    return None


def report() -> dict[str, Any]:
    """The health report (see the rules)."""
    database, broker = database_problem(), broker_problem()
    live: list[str] = []
    problems = [p for p in (database, broker) if p]
    if broker is None:
        try:
            live = workers.queue_workers(limits.HEALTH_PING_SECONDS)
        except Exception as e:  # noqa: BLE001 - the broker went away between the two questions
            problems.append(f"the workers cannot be asked ({one_line(e)})")
        else:
            if not live:
                problems.append(f"no worker consumes the queue {workers.queue_name()!r}: sweeps will not run")
    return {
        "ok": not problems,
        "database": database or "ok",
        "broker": broker or "ok",
        "workers": len(live),
        "queue": workers.queue_name(),
        "problems": problems,
    }
