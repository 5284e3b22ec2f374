"""The Celery app: configuration comes from Django settings (CELERY_* names), tasks from the apps.

Leases (services/leases.py): a worker's main process takes the leases of a message's chunks (or its
audit unit: the same for units throughout) when it receives the message (task_received), and every
process that runs tasks (a solo worker's main process, each process of a prefork pool) renews the
leases of the chunks it plays every LEASE_RENEW_SECONDS, from the task's start to its end
(task_prerun, task_postrun), in a thread of its own; a process that dies stops renewing, and its
chunks' leases run out. Celery's record of the requests a worker holds is not used: a prefork
worker whose pool process was SIGKILLed can keep the lost task's request for good (seen in the
fault tests), and its leases would never run out.

The same thread of a worker's main process renews the worker's own lease and asks for the
watchdog's leader lease each round. The one worker that leads runs the watchdog that round: the
chunks and audit units of a dead worker (their leases and its own run out) queued again ahead of
the queue, and those whose message was lost before any lease named it (services/messages.py: a
worker killed as it took the message, a broker that came back empty); and, every quarter of
settings.SWEEPSITE_STALL_SECONDS, the stall rules for anything else lost (an answer's resume),
services.recovery.sweeps_resume_stalled and
audits.audits_resume_stalled, and the forgetting of long-dead workers' leases.
SWEEPSITE_STALL_SECONDS=0 keeps a worker from leading (it still keeps its leases).

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
import time
from collections.abc import Callable
from typing import Any

from celery import Celery
from celery.signals import (
    task_postrun,
    task_prerun,
    task_received,
    worker_init,
    worker_process_init,
    worker_ready,
    worker_shutting_down,
)

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


def _guarded(what: str, round_: Callable[[], int]) -> int:
    """Run a round with fresh database connections; never raises (the next round tries again)."""
    from django.db import DatabaseError, close_old_connections

    close_old_connections()
    try:
        return round_()
    except DatabaseError as e:  # a database that is down now
        log.warning("%s cannot reach the database (%s: %s)", what, type(e).__name__, e)
        return 0
    except Exception:  # noqa: BLE001 - never let the thread die
        log.exception("%s failed this round", what)
        return 0
    finally:
        close_old_connections()


def watchdog_round(stalled_for: float) -> int:
    """One round of the stall rules; never raises."""
    from sweeps.services import audits, recovery

    return _guarded("the stall watchdog", lambda: recovery.sweeps_resume_stalled(stalled_for=stalled_for)
                    + audits.audits_resume_stalled(stalled_for=stalled_for))


# The chunks and audit units of the tasks this process is running now, by task ID (several with
# threads or a pool of one process's own; one at a time in a solo worker or a prefork pool process).
_playing: dict[str, tuple[list[int], list[int]]] = {}


def _leased(name: str, args: Any, kwargs: Any) -> tuple[list[int], list[int]]:
    from sweeps.services import taskqueue

    return taskqueue.chunk_ids_of(name, args or (), kwargs or {}), taskqueue.audit_unit_ids_of(name, args or (),
                                                                                               kwargs or {})


@task_received.connect
def _received(request: Any = None, **_: Any) -> None:
    """A worker's main process takes the leases of a message's chunks (or audit unit) as it receives
    it: should the worker die before the task claims them, they run out with it (and are queued again)."""
    from sweeps.services import leases

    chunk_ids, unit_ids = _leased(getattr(request, "task_name", ""), getattr(request, "args", None),
                                  getattr(request, "kwargs", None))
    if chunk_ids or unit_ids:
        _guarded("taking the leases of a message",
                 lambda: leases.leases_renew(chunk_ids=chunk_ids, unit_ids=unit_ids, receipt=True))


@task_prerun.connect
def _play(task_id: str = "", task: Any = None, args: Any = None, kwargs: Any = None, **_: Any) -> None:
    chunk_ids, unit_ids = _leased(getattr(task, "name", ""), args, kwargs)
    if chunk_ids or unit_ids:
        _playing[task_id] = chunk_ids, unit_ids


@task_postrun.connect
def _played(task_id: str = "", **_: Any) -> None:
    _playing.pop(task_id, None)


def playing_chunk_ids() -> list[int]:
    """The chunks of the tasks this process is running now (their leases are renewed)."""
    return sorted({pk for ids, _ in list(_playing.values()) for pk in ids})


def playing_unit_ids() -> list[int]:
    """The audit units of the tasks this process is running now (their leases are renewed)."""
    return sorted({pk for _, ids in list(_playing.values()) for pk in ids})


class Keeper:
    """The lease keeper's rounds (see the module's docstring); `leading` says whether the last round led."""

    def __init__(self, stalled_for: float, *, main: bool = True) -> None:
        self.stalled_for, self.main = stalled_for, main  # main: a worker's main process (not a pool's)
        self.leading = False
        self.next_stall = 0.0  # the stall rules at once when this worker comes to lead

    def round(self) -> int:
        """Renew, then lead if this worker may and can; how many tasks the watchdog queued. Never raises."""
        n = _guarded("the lease keeper", self._renew_and_lead)
        if self.leading and time.monotonic() >= self.next_stall:
            self.next_stall = time.monotonic() + min(max(self.stalled_for / 4, 0.25), 15.0)
            _guarded("forgetting dead workers' leases", _forget)  # not every 0.25 s, as the keeper renews
            n += watchdog_round(self.stalled_for)
        return n

    def _renew_and_lead(self) -> int:
        from sweeps.services import audits, leases, recovery

        leases.leases_renew(chunk_ids=playing_chunk_ids(), unit_ids=playing_unit_ids())
        if not self.main:
            return 0
        leases.alive()
        leading = self.stalled_for > 0 and leases.lead()
        if leading != self.leading:
            log.warning("%s %s the watchdog", leases.HOLDER, "leads" if leading else "no longer leads")
            self.leading, self.next_stall = leading, 0.0
        if not leading:
            return 0
        return (recovery.chunks_requeue_lapsed() + audits.audit_units_requeue_lapsed()
                + recovery.chunks_requeue_lost() + audits.audit_units_requeue_lost())


def _forget() -> int:
    from sweeps.services import leases

    leases.leases_forget()
    return 0


def _keep(stalled_for: float, main: bool) -> None:
    from sweeps.limits import LEASE_RENEW_SECONDS

    keeper = Keeper(stalled_for, main=main)
    while not _watchdog_stop.wait(LEASE_RENEW_SECONDS):
        keeper.round()


@worker_ready.connect
def start_watchdog(sender: Any = None, **kwargs: Any) -> None:
    from django.conf import settings

    stalled_for = float(getattr(settings, "SWEEPSITE_STALL_SECONDS", 0) or 0)
    _watchdog_stop.clear()
    threading.Thread(target=_keep, args=(stalled_for, True), name="sweepsite-lease-keeper", daemon=True).start()


@worker_process_init.connect
def start_pool_keeper(**kwargs: Any) -> None:
    """A prefork pool process renews the leases of what it plays (it never leads)."""
    _watchdog_stop.clear()
    threading.Thread(target=_keep, args=(0.0, False), name="sweepsite-lease-keeper", daemon=True).start()


@worker_shutting_down.connect
def stop_watchdog(sender: Any = None, **kwargs: Any) -> None:
    _watchdog_stop.set()
