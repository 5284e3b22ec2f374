"""The Celery app: configuration comes from Django settings (CELERY_* names), tasks from the apps.

Every worker also runs the stall watchdog (a thread of its main process, started when the worker
is ready): every quarter of settings.SWEEPSITE_STALL_SECONDS it calls
services.recovery.sweeps_resume_stalled, which queues again the missing chunks of a sweep whose messages
were lost (a SIGKILLed worker, a broker restarted empty). SWEEPSITE_STALL_SECONDS=0 turns it off.

A worker starts only with a database that answers: before it takes any message (worker_init), it
asks (sweepsite.health); if the database is unreachable it says so in one line and exits with
status 1, rather than reporting ready and failing every task. A setting missing from the
environment (production's SECRET_KEY) is one line too (sweepsite.config), when Celery first reads
its configuration.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from typing import Any

from celery import Celery
from celery.signals import worker_init, worker_ready, worker_shutting_down

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sweepsite.settings")

app = Celery("sweepsite")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.on_configure.connect
def load_settings_or_say_what_is_missing(sender: Any = None, **kwargs: Any) -> None:
    from django.conf import settings

    from sweepsite.config import one_line_errors

    with one_line_errors("celery"):
        settings.INSTALLED_APPS  # noqa: B018 - loads the settings module


@worker_init.connect
def refuse_to_start_without_the_database(sender: Any = None, **kwargs: Any) -> None:
    from django.db import connections

    from sweepsite import health

    problem = health.database_problem()
    connections.close_all()
    if problem:
        sys.stderr.write(f"celery worker: {problem}: not started\n")
        sys.stderr.flush()
        raise SystemExit(1)

log = logging.getLogger("sweepsite.watchdog")
_watchdog_stop = threading.Event()


def watchdog_round(stalled_for: float) -> int:
    """One round of the stall watchdog, with fresh database connections; never raises."""
    from django.db import DatabaseError, close_old_connections

    from sweeps.services import audits, recovery

    close_old_connections()
    try:
        return (recovery.sweeps_resume_stalled(stalled_for=stalled_for)
                + audits.audits_resume_stalled(stalled_for=stalled_for))
    except DatabaseError as e:  # a database that is down now: the next round tries again
        log.warning("the stall watchdog cannot read the sweeps (%s: %s)", type(e).__name__, e)
        return 0
    except Exception:  # noqa: BLE001 - never let the thread die
        log.exception("the stall watchdog failed this round")
        return 0
    finally:
        close_old_connections()


def _watch(stalled_for: float) -> None:
    every = min(max(stalled_for / 4, 0.25), 15.0)
    while not _watchdog_stop.wait(every):
        watchdog_round(stalled_for)


@worker_ready.connect
def start_watchdog(sender: Any = None, **kwargs: Any) -> None:
    from django.conf import settings

    stalled_for = float(getattr(settings, "SWEEPSITE_STALL_SECONDS", 0) or 0)
    if stalled_for <= 0:
        return
    _watchdog_stop.clear()
    threading.Thread(target=_watch, args=(stalled_for,), name="sweepsite-stall-watchdog", daemon=True).start()


@worker_shutting_down.connect
def stop_watchdog(sender: Any = None, **kwargs: Any) -> None:
    _watchdog_stop.set()
