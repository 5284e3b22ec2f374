"""Leases: which worker has a chunk in its hands, and which worker leads the watchdog.

Rules:
- A chunk's lease (Chunk.holder, Chunk.lease_until) says that a live worker has its message in hand.
  The worker's main process takes it when it receives the message, the claim that counts an attempt
  takes it again (services/chunks.py, the same UPDATE), and the process playing it renews it every
  LEASE_RENEW_SECONDS until its task ends (`leases_renew`, called by workqueue/signals.py and
  workqueue/keeper.py); storing
  the chunk ends it.
- A worker's lease (a Lease row `worker:<holder>`, renewed by its main process, `alive`) says that
  the worker lives. A chunk whose lease ran out unstored, in a running sweep, whose worker's lease
  ran out too, was lost with a whole worker (SIGKILLed, its host gone): the leader queues it again
  (watchdog.chunks_requeue_lapsed). One whose worker lives lost only a prefork pool process: Celery
  gives its message back (`reject_on_worker_lost`), so it is not queued a second time.
- The holder is this host and the worker's main process ID (a prefork pool's processes inherit it,
  as they are forked from the main process), so a restarted worker never renews a dead one's leases
  by name; a renewal names the chunks it plays anyway.
- One leader at a time: the `watchdog` Lease row, taken and renewed by a conditional UPDATE
  (`... WHERE holder = me OR expires_at < now`), the same statement on SQLite and PostgreSQL. Only
  the leader runs the watchdog's rules, so workers started together never queue one sweep's work
  twice; should two ever act at once (a leader paused past its lease), a lapsed row is taken under
  a row lock that the other skips (`requeue_lapsed`), so one of them queues it.
- An audit's unit (AuditUnit.holder, lease_until) is leased as a chunk is, by the same worker
  hooks and keeper: its claim takes the lease, its store or a resume ends it, and the leader queues
  again a dead worker's units (watchdog.audit_units_requeue_lapsed).
- A renewal never waits for a row lock: it skips a chunk or unit another transaction holds (being
  stored or claimed, which ends or takes its lease anyway), so it can close no cycle of waiters.
- Times are the workers' clocks (kept by NTP across hosts): a skew well under LEASE_SECONDS.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from django.db import connection, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from sweeps.limits import LEASE_HOLDER_CHARS, LEASE_SECONDS
from sweeps.models import Audit, AuditUnit, Chunk, Lease, Sweep
from sweeps.workqueue import messages

log = logging.getLogger(__name__)

# Set when this module is first imported: a Celery worker imports its tasks (hence this) in its main
# process before it forks a prefork pool, so its pool processes name the same holder.
HOLDER = f"{socket.gethostname()}:{os.getpid()}"[-LEASE_HOLDER_CHARS:]
LEADER = "watchdog"
WORKER = "worker:"  # a worker's lease is named so, with its holder
# A worker's lease this long run out is deleted by the leader (a worker that stopped, long ago).
FORGET_SECONDS = 600


def lease_until(now: datetime | None = None) -> datetime:
    """When a lease taken or renewed now runs out."""
    return (now or timezone.now()) + timedelta(seconds=LEASE_SECONDS)


def leases_renew(
    *, chunk_ids: Sequence[int] = (), unit_ids: Sequence[int] = (), holder: str = HOLDER, receipt: bool = False
) -> int:
    """Renew (or take) the leases of the chunks and audit units whose messages `holder` has in hand;
    how many; with `receipt` (a worker receiving their message), their message is marked received
    too (workqueue/messages.py). Stored ones are left alone (their lease ended with the store), and
    so is the work of a sweep or audit that is not running (a cancelled sweep's messages still
    arrive: a lease taken then would never be ended, and the leader's every round would read it)."""
    n = 0
    also = {"received": messages.receipt()} if receipt else {}
    if chunk_ids:
        n += _renew(
            Chunk.objects.filter(pk__in=list(chunk_ids), stored=False, sweep__status=Sweep.Status.RUNNING), holder, also
        )
    if unit_ids:
        n += _renew(
            AuditUnit.objects.filter(pk__in=list(unit_ids), stored=False, audit__status=Audit.Status.RUNNING),
            holder,
            also,
        )
    return n


def _renew(rows: QuerySet[Any], holder: str, also: dict[str, Any]) -> int:
    """Lease the rows no other transaction has locked (SKIP LOCKED on PostgreSQL; SQLite has one
    writer), never waiting for one. A locked row is being stored (its lease ends with the store)
    or claimed (the claim takes the lease): a renewal that waited for it could close a cycle with the
    task storing it, which locks its chunks one by one (a PostgreSQL deadlock: the task then waited
    the 1 s deadlock_timeout before the database broke it, seen as 1.1 s messages among 0.06 s ones)."""
    if not connection.features.has_select_for_update_skip_locked:  # SQLite: one writer, nothing to skip
        return rows.update(holder=holder, lease_until=lease_until(), **also)
    with transaction.atomic():  # one UPDATE, of the rows its subquery locked in ID order
        locked = rows.select_for_update(skip_locked=True, no_key=True, of=("self",)).order_by("pk").values("pk")
        return rows.model.objects.filter(pk__in=locked).update(holder=holder, lease_until=lease_until(), **also)


def end(rows: QuerySet[Any], **also: Any) -> int:
    """End the leases of these chunks or units (queued again, stored: no lease to run out), setting
    `also` in the same UPDATE."""
    return rows.update(holder="", lease_until=None, **also)


# Why the watchdog queues rows again, in its log line: their lease ran out with their worker's (the
# lease rule), or their message was lost before any lease named it (workqueue/messages.py).
LAPSED = "the lease of {holders} ran out"
LOST = "their message was lost before any lease named it (a worker died as it took it, or the broker lost it)"


def requeue_lapsed(
    lapsed: QuerySet[Any],
    parent: tuple[str, ...],
    publish: Callable[[tuple[Any, ...], list[int]], None],
    what: tuple[str, str],
    why: str = LAPSED,
) -> int:
    """The watchdog's lease and lost-message rules, for chunks and audit units alike: per parent (a sweep, an audit:
    `parent` names its ID field first, then what `publish` needs of it), take the `lapsed` rows no
    other watchdog holds (row locks, SKIP LOCKED on PostgreSQL; SQLite has one writer), end their
    leases and publish them, in one transaction: published before the commit, so a worker that gets
    a message first waits for these rows' locks in its claim, and a publish that fails leaves the
    leases lapsed (the next round tries again). `what` names them in the log: ("sweep", "chunk(s)"),
    ("audit", "unit(s)"); `why` says why in it (LAPSED, LOST). Returns how many rows were queued."""
    n = 0
    for key in sorted(lapsed.values_list(*parent).order_by().distinct()):
        try:
            with transaction.atomic():
                taken = list(
                    lapsed.filter(**{parent[0]: key[0]})
                    .select_for_update(skip_locked=True, of=("self",))
                    .order_by("pk")
                    .values_list("pk", "holder")
                )
                ids = [pk for pk, _ in taken]
                if not ids:
                    continue
                end(lapsed.model.objects.filter(pk__in=ids))
                publish(key, ids)
        except Exception as e:  # noqa: BLE001 - the broker or the database went away: the next round tries again
            # One line: a publish that failed has logged its traceback already.
            log.warning(
                "%s %s: the watchdog could not queue again the %s of a dead worker (%s: %s)",
                what[0],
                key[0],
                what[1],
                type(e).__name__,
                e,
            )
            continue
        holders = ", ".join(sorted({h for _, h in taken}))
        log.warning(
            "%s %s: %s: %d %s queued again ahead of the queue: %s",
            what[0],
            key[0],
            why.format(holders=holders or "a worker"),
            len(ids),
            what[1],
            " ".join(map(str, ids)),
        )
        n += len(ids)
    return n


def alive(*, holder: str = HOLDER) -> None:
    """Renew (or take) this worker's lease: it lives for LEASE_SECONDS more."""
    name, until = WORKER + holder, lease_until()
    if not Lease.objects.filter(name=name).update(holder=holder, expires_at=until):
        Lease.objects.bulk_create([Lease(name=name, holder=holder, expires_at=until)], ignore_conflicts=True)


def live_workers() -> QuerySet[Lease]:
    """The holders whose worker lives (a subquery)."""
    return Lease.objects.filter(name__startswith=WORKER, expires_at__gte=timezone.now()).values("holder")


def leases_forget() -> int:
    """Delete the leases of workers that stopped FORGET_SECONDS ago or more; how many."""
    before = timezone.now() - timedelta(seconds=FORGET_SECONDS)
    return Lease.objects.filter(name__startswith=WORKER, expires_at__lt=before).delete()[0]


def lead(*, holder: str = HOLDER) -> bool:
    """Take or keep the leader lease for LEASE_SECONDS; whether `holder` leads now. The row is made
    on first use (a fresh database, a test's flushed one)."""
    now = timezone.now()
    mine = Q(holder=holder) | Q(expires_at__lt=now)
    if Lease.objects.filter(mine, name=LEADER).update(holder=holder, expires_at=lease_until(now)):
        return True
    if Lease.objects.filter(name=LEADER).exists():
        return False
    Lease.objects.bulk_create(
        [Lease(name=LEADER, holder=holder, expires_at=lease_until(now))], ignore_conflicts=True
    )  # of two first workers, one row: the second UPDATE says whose
    return bool(Lease.objects.filter(mine, name=LEADER).update(holder=holder, expires_at=lease_until(now)))


def leader() -> str | None:
    """Who leads the watchdog now (None: nobody, or the last leader's lease ran out)."""
    return Lease.objects.filter(name=LEADER, expires_at__gte=timezone.now()).values_list("holder", flat=True).first()
