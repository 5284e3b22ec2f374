"""Leases: which worker has a chunk in its hands, and which worker leads the watchdog.

Rules:
- A chunk's lease (Chunk.holder, Chunk.lease_until) says that a live worker holds its message. The
  claim that counts an attempt takes it (services/chunks.py, the same UPDATE); the holder's main
  process renews it every LEASE_RENEW_SECONDS for the chunks of the messages it has received and not
  finished (`leases_renew`, called by sweepsite/celery.py); storing the chunk ends it. A lease that
  ran out on an unstored chunk of a running sweep means its holder died with the message (a whole
  worker SIGKILLed): the leader queues the chunk again (recovery.chunks_requeue_lapsed).
- The holder is this host and the worker's main process ID (a prefork pool's processes inherit it,
  as they are forked from the main process), so a restarted worker never renews a dead one's leases
  by name; a renewal names the chunks it holds anyway.
- One leader at a time: the `watchdog` Lease row, taken and renewed by a conditional UPDATE
  (`... WHERE holder = me OR expires_at < now`), the same statement on SQLite and PostgreSQL. Only
  the leader runs the watchdog's rules, so workers started together never queue one sweep's work
  twice; should two ever act at once (a leader paused past its lease), taking a lapsed chunk is a
  conditional write too (recovery.chunks_requeue_lapsed), so one of them queues it.
- Times are the workers' clocks (kept by NTP across hosts): a skew well under LEASE_SECONDS.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Sequence
from datetime import datetime, timedelta

from django.db.models import Q
from django.utils import timezone

from sweeps.limits import LEASE_HOLDER_CHARS, LEASE_SECONDS
from sweeps.models import Chunk, Lease

# Set when this module is first imported: a Celery worker imports its tasks (hence this) in its main
# process before it forks a prefork pool, so its pool processes name the same holder.
HOLDER = f"{socket.gethostname()}:{os.getpid()}"[-LEASE_HOLDER_CHARS:]
LEADER = "watchdog"


def lease_until(now: datetime | None = None) -> datetime:
    """When a lease taken or renewed now runs out."""
    return (now or timezone.now()) + timedelta(seconds=LEASE_SECONDS)


def leases_renew(*, chunk_ids: Sequence[int], holder: str = HOLDER) -> int:
    """Renew (or take) the leases of the chunks whose messages `holder` has in hand; how many.
    Stored chunks are left alone (their lease ended with the store)."""
    if not chunk_ids:
        return 0
    return Chunk.objects.filter(pk__in=list(chunk_ids), stored=False).update(holder=holder, lease_until=lease_until())


def lead(*, holder: str = HOLDER) -> bool:
    """Take or keep the leader lease for LEASE_SECONDS; whether `holder` leads now. The row is made
    on first use (a fresh database, a test's flushed one)."""
    now = timezone.now()
    mine = Q(holder=holder) | Q(expires_at__lt=now)
    if Lease.objects.filter(mine, name=LEADER).update(holder=holder, expires_at=lease_until(now)):
        return True
    if Lease.objects.filter(name=LEADER).exists():
        return False
    Lease.objects.bulk_create([Lease(name=LEADER, holder=holder, expires_at=lease_until(now))],
                              ignore_conflicts=True)  # of two first workers, one row: the second UPDATE says whose
    return bool(Lease.objects.filter(mine, name=LEADER).update(holder=holder, expires_at=lease_until(now)))


def leader() -> str | None:
    """Who leads the watchdog now (None: nobody, or the last leader's lease ran out)."""
    return Lease.objects.filter(name=LEADER, expires_at__gte=timezone.now()).values_list("holder", flat=True).first()
