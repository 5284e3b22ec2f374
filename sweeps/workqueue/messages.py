"""What the database knows of each task message, and how a lost one is told from a waiting one.

Rules:
- The broker only wakes workers; the database says what is queued. Publishing the message of a
  chunk or an audit unit stamps its row first (`stamp`, called by workqueue/publish.py): `queued`,
  the wall clock's microseconds when its batch left plus the message's place in the batch (one
  publisher's messages keep their order), its `priority`, and `received` cleared. A worker's main
  process sets `received` as it receives the message (leases.leases_renew, workqueue/signals.py's
  task_received hook), and the claim sets it too if that hook could not.
- Every priority's queue is first in, first out (Redis' lists; the filesystem broker's names), and
  a lower priority goes first. So a message still not received when one queued after it, at its
  priority or a later one, was received LOST_MESSAGE_SECONDS ago or more is gone: it died in a
  worker's hands between the worker's taking it and its receipt (no lease names it), or with the
  broker (`overtaken`).
- And once the broker's queue has read empty for LOST_MESSAGE_SECONDS in a row, every message
  queued before it was first seen empty and still not received is gone: the last messages of a
  sweep, a broker that came back with no messages (`LostWork`).
- Only rows with no live lease count (a worker that holds one has the message in hand), of running
  sweeps and audits. The leader queues such rows again ahead of the queue on its next round (the
  lost-message rules of workqueue/watchdog.py), so lost work runs again within
  seconds whatever the moment of the loss. A message only slow past the grace (a publisher paused
  between stamping and publishing) runs its chunk twice: keyed writes store it once.
- Times are the hosts' wall clocks (kept by NTP): a skew well under LOST_MESSAGE_SECONDS.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from django.db import transaction
from django.db.models import F, Max, Q, QuerySet, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from sweeps.limits import LOST_MESSAGE_SECONDS, PRIORITIES
from sweeps.models import Audit, AuditUnit, Chunk, Sweep

GRACE_US = int(LOST_MESSAGE_SECONDS * 1_000_000)


def now_us() -> int:
    """The wall clock in microseconds: the unit of `queued` and `received`."""
    return time.time_ns() // 1000


def stamp(model: type[Chunk] | type[AuditUnit], messages: Sequence[tuple[Sequence[int], int]]) -> None:
    """Stamp the rows of these messages, (row IDs, priority) in the order they are to be published,
    as queued now and not received (see the rules); one transaction."""
    base = now_us()
    with transaction.atomic():
        for place, (ids, priority) in enumerate(messages):
            model.objects.filter(pk__in=list(ids)).update(queued=base + place, priority=priority, received=None)


def receipt() -> Any:
    """The value of `received` in an UPDATE by a worker that has the message in hand: kept if set."""
    return Coalesce(F("received"), Value(now_us()))


def running(model: type[Chunk] | type[AuditUnit]) -> QuerySet[Any]:
    """The rows of running sweeps (chunks) or running audits (units)."""
    if model is Chunk:
        return Chunk.objects.filter(sweep__status=Sweep.Status.RUNNING)
    return AuditUnit.objects.filter(audit__status=Audit.Status.RUNNING)


def marks(cutoff: int) -> dict[int, int]:
    """Per priority, the latest `queued` of the messages received before `cutoff`, of chunks and
    units alike (they share the queue)."""
    best: dict[int, int] = {}
    for model in (Chunk, AuditUnit):
        rows = running(model).filter(received__lt=cutoff, queued__isnull=False).order_by()
        for priority, queued in rows.values("priority").annotate(m=Max("queued")).values_list("priority", "m"):
            best[priority] = max(best.get(priority, queued), queued)
    return best


def overtaken(best: dict[int, int]) -> Q:
    """Rows whose message was queued before one received at its priority or a later one (`marks`)."""
    found = Q(pk__in=[])
    for priority in range(PRIORITIES):
        mark = max((q for p, q in best.items() if p >= priority), default=None)
        if mark is not None:
            found |= Q(priority=priority, queued__lt=mark)
    return found


def waiting(model: type[Chunk] | type[AuditUnit], cutoff: int) -> QuerySet[Any]:
    """Unstored rows whose message was queued before `cutoff`, not received, and no lease is live."""
    return (
        running(model)
        .filter(stored=False, received__isnull=True, queued__lt=cutoff)
        .filter(Q(lease_until__isnull=True) | Q(lease_until__lt=timezone.now()))
    )


class LostWork:
    """The lost-message rules in the process that leads, for chunks and units alike: the overtaken
    rule, and per model since when the broker's queue reads empty (asked only while some waiting
    row is not overtaken)."""

    def __init__(self) -> None:
        self.empty_since: dict[type[Chunk] | type[AuditUnit], int] = {}  # while its waiting rows wait

    def rows(self, model: type[Chunk] | type[AuditUnit], queue_length: Callable[[], int | None]) -> QuerySet[Any]:
        """The rows of `model` whose messages are lost now (see the rules)."""
        now = now_us()
        cutoff = now - GRACE_US
        rows = waiting(model, cutoff)
        lost = overtaken(marks(cutoff))
        if not rows.exclude(lost).exists() or queue_length() != 0:
            self.empty_since.pop(model, None)
            return rows.filter(lost)
        since = self.empty_since.setdefault(model, now)
        if now - since < GRACE_US:
            return rows.filter(lost)
        return rows.filter(lost | Q(queued__lt=since))


# The leading process's rules' state (workqueue/watchdog.py uses it).
LOST = LostWork()
