"""The Celery app: configuration comes from Django settings (CELERY_* names), tasks from the apps.

Every worker also runs the lease keeper (a thread of its main process, started when the worker is
ready): every LEASE_RENEW_SECONDS it renews the leases of the chunks whose messages it has received
and not finished (Celery's own record of them, celery.worker.state), then asks for the watchdog's
leader lease (services/leases.py). The one worker that leads runs the watchdog that round: the chunks
of a dead worker (leases run out) queued again ahead of the queue, and, every quarter of
settings.SWEEPSITE_STALL_SECONDS, the stall rules for lost messages no worker held (a broker
restarted empty), services.recovery.sweeps_resume_stalled and audits.audits_resume_stalled.
SWEEPSITE_STALL_SECONDS=0 keeps a worker from leading (it still renews its leases).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Any

from celery import Celery
from celery.signals import worker_ready, worker_shutting_down

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sweepsite.settings")

app = Celery("sweepsite")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

log = logging.getLogger("sweepsite.watchdog")
_watchdog_stop = threading.Event()


def watchdog_round(stalled_for: float) -> int:
    """One round of the stall rules, with fresh database connections; never raises."""
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


def held_chunk_ids() -> list[int]:
    """The chunks of the task messages this worker has received and not finished (reserved or
    running, in its main process's record: the solo pool's own tasks, a prefork pool's too)."""
    from celery.worker import state

    from sweeps.services import taskqueue

    for _ in range(3):
        try:
            requests = list(state.reserved_requests) + list(state.active_requests)
            break
        except RuntimeError:  # the consumer added one while we read: read again
            continue
    else:
        return []
    return sorted({pk for r in requests for pk in taskqueue.chunk_ids_of(r.task_name, r.args or (), r.kwargs or {})})


class Keeper:
    """The lease keeper's rounds (see the module's docstring); `leading` says whether the last round led."""

    def __init__(self, stalled_for: float) -> None:
        self.stalled_for = stalled_for
        self.leading = False
        self.next_stall = 0.0  # the stall rules at once when this worker comes to lead

    def round(self) -> int:
        """Renew, then lead if this worker may and can; how many tasks the watchdog queued. Never raises."""
        from django.db import DatabaseError, close_old_connections

        from sweeps.services import leases, recovery

        close_old_connections()
        try:
            leases.leases_renew(chunk_ids=held_chunk_ids())
            leading = self.stalled_for > 0 and leases.lead()
            if leading != self.leading:
                log.warning("%s %s the watchdog", leases.HOLDER, "leads" if leading else "no longer leads")
                self.leading, self.next_stall = leading, 0.0
            if not leading:
                return 0
            n = recovery.chunks_requeue_lapsed()
        except DatabaseError as e:  # a database that is down now: the next round tries again
            log.warning("the lease keeper cannot reach the database (%s: %s)", type(e).__name__, e)
            return 0
        except Exception:  # noqa: BLE001 - never let the thread die
            log.exception("the lease keeper failed this round")
            return 0
        finally:
            close_old_connections()
        if time.monotonic() >= self.next_stall:
            self.next_stall = time.monotonic() + min(max(self.stalled_for / 4, 0.25), 15.0)
            n += watchdog_round(self.stalled_for)
        return n


def _keep(stalled_for: float) -> None:
    from sweeps.limits import LEASE_RENEW_SECONDS

    keeper = Keeper(stalled_for)
    while not _watchdog_stop.wait(LEASE_RENEW_SECONDS):
        keeper.round()


@worker_ready.connect
def start_watchdog(sender: Any = None, **kwargs: Any) -> None:
    from django.conf import settings

    stalled_for = float(getattr(settings, "SWEEPSITE_STALL_SECONDS", 0) or 0)
    _watchdog_stop.clear()
    threading.Thread(target=_keep, args=(stalled_for,), name="sweepsite-lease-keeper", daemon=True).start()


@worker_shutting_down.connect
def stop_watchdog(sender: Any = None, **kwargs: Any) -> None:
    _watchdog_stop.set()
