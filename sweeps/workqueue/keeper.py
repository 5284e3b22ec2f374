"""The lease keeper: a thread in each process that runs tasks, which renews leases and, in a worker's
main process, takes part in the watchdog's leader election and runs the watchdog when it leads.

Rules:
- Every process that runs tasks (a solo worker's main process, each process of a prefork pool)
  renews the leases of the chunks and audit units it plays (`play` and `played`, told by
  workqueue/signals.py at each task's start and end) every LEASE_RENEW_SECONDS, in a thread of its
  own; a process that dies stops renewing, and its chunks' leases run out. Celery's record of the
  requests a worker holds is not used: a prefork worker whose pool process was SIGKILLed can keep
  the lost task's request for good, and its leases would never run out.
- The same thread of a worker's main process renews the worker's own lease and asks for the
  watchdog's leader lease each round (workqueue/leases.py). The one worker that leads runs the
  watchdog that round: the lease and lost-message rules (workqueue/watchdog.py), and, every quarter
  of settings.SWEEPSITE_STALL_SECONDS (0.25 to 15 s), the stall rules for anything else lost (an
  answer's resume: services.recovery.sweeps_resume_stalled, services.audits.audits_resume_stalled)
  and the forgetting of long-dead workers' leases. SWEEPSITE_STALL_SECONDS=0 keeps a worker from
  leading (it still keeps its leases).
- A round never raises: a database that is down, or any error, is logged and the next round tries
  again, on fresh database connections.
- This is the queue's one module that calls the services (the stall rules decide on a sweep's or an
  audit's rows); the services import only the queue's lower modules (messages, leases, publish,
  watchdog), so no import circle.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence

from django.db import DatabaseError, close_old_connections

from sweeps.limits import LEASE_RENEW_SECONDS
from sweeps.services import audits, recovery
from sweeps.workqueue import leases, watchdog

log = logging.getLogger(__name__)
_stop = threading.Event()


def guarded(what: str, round_: Callable[[], int]) -> int:
    """Run a round with fresh database connections; never raises (the next round tries again)."""
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
    return guarded(
        "the stall watchdog",
        lambda: (
            recovery.sweeps_resume_stalled(stalled_for=stalled_for)
            + audits.audits_resume_stalled(stalled_for=stalled_for)
        ),
    )


# The chunks and audit units of the tasks this process is running now, by task ID (several with
# threads or a pool of one process's own; one at a time in a solo worker or a prefork pool process).
_playing: dict[str, tuple[list[int], list[int]]] = {}


def play(task_id: str, chunk_ids: Sequence[int], unit_ids: Sequence[int]) -> None:
    """A task of this process starts playing these chunks or units: their leases are renewed."""
    _playing[task_id] = list(chunk_ids), list(unit_ids)


def played(task_id: str) -> None:
    """A task of this process ended: its leases are no longer renewed (its store ended them)."""
    _playing.pop(task_id, None)


def playing_chunk_ids() -> list[int]:
    """The chunks of the tasks this process is running now (their leases are renewed)."""
    return sorted({pk for ids, _ in list(_playing.values()) for pk in ids})


def playing_unit_ids() -> list[int]:
    """The audit units of the tasks this process is running now (their leases are renewed)."""
    return sorted({pk for _, ids in list(_playing.values()) for pk in ids})


class Keeper:
    """The lease keeper's rounds (see the rules); `leading` says whether the last round led."""

    def __init__(self, stalled_for: float, *, main: bool = True) -> None:
        self.stalled_for, self.main = stalled_for, main  # main: a worker's main process (not a pool's)
        self.leading = False
        self.next_stall = 0.0  # the stall rules at once when this worker comes to lead

    def round(self) -> int:
        """Renew, then lead if this worker may and can; how many tasks the watchdog queued. Never raises."""
        n = guarded("the lease keeper", self._renew_and_lead)
        if self.leading and time.monotonic() >= self.next_stall:
            self.next_stall = time.monotonic() + min(max(self.stalled_for / 4, 0.25), 15.0)
            guarded("forgetting dead workers' leases", _forget)  # not every 0.25 s, as the keeper renews
            n += watchdog_round(self.stalled_for)
        return n

    def _renew_and_lead(self) -> int:
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
        return (
            watchdog.chunks_requeue_lapsed()
            + watchdog.audit_units_requeue_lapsed()
            + watchdog.chunks_requeue_lost()
            + watchdog.audit_units_requeue_lost()
        )


def _forget() -> int:
    leases.leases_forget()
    return 0


def _keep(stalled_for: float, main: bool) -> None:
    keeper = Keeper(stalled_for, main=main)
    while not _stop.wait(LEASE_RENEW_SECONDS):
        keeper.round()


def start(stalled_for: float, *, main: bool) -> None:
    """Start this process's keeper thread: a worker's main process (`main`, leading when
    `stalled_for` > 0) or a prefork pool process (never leads)."""
    _stop.clear()
    threading.Thread(target=_keep, args=(stalled_for, main), name="sweepsite-lease-keeper", daemon=True).start()


def stop() -> None:
    """Stop this process's keeper thread (at its next wait)."""
    _stop.set()
