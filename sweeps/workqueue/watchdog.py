"""The watchdog's lease and lost-message rules, and asking the broker what waits in the queue.

Rules:
- They run in the one worker that leads (workqueue/leases.py, workqueue/keeper.py), every
  LEASE_RENEW_SECONDS; `manage.py sweep` and `audit` run them while they wait when no worker leads
  (services/recovery.py's wait_for).
- The lease rule (`chunks_requeue_lapsed`, `audit_units_requeue_lapsed`): an unstored chunk or unit
  of a running sweep or audit whose lease ran out with its worker's (the worker died with the
  message) is queued again ahead of the queue, within seconds of the death. A lapsed one whose
  worker lives is Celery's to give back (a prefork pool process died: `reject_on_worker_lost`).
- The lost-message rule (`chunks_requeue_lost`, `audit_units_requeue_lost`): one whose message was
  lost before any lease named it (workqueue/messages.py: a worker killed as it took the message, a
  broker that came back empty) is queued again so.
- Each is queued once however many watchdogs look: its lease is ended in the transaction that
  publishes it (leases.requeue_lapsed); a broker that cannot be reached rolls it back and the next
  round tries again. Keyed writes make an overlap with a late redelivery harmless.
- These rules are queue machinery: they read leases and message stamps and publish, and change no
  status. The stall rules, which decide on a sweep's or an audit's rows (finalize it, resume it),
  are services (services/recovery.py, services/audits.py); they ask `queued_messages` first.
"""

from __future__ import annotations

import logging

from celery import current_app
from django.utils import timezone
from kombu.exceptions import ChannelError

from sweeps.models import Audit, AuditUnit, Chunk, Sweep
from sweeps.workqueue import leases, messages, publish

log = logging.getLogger(__name__)


def chunks_requeue_lapsed() -> int:
    """The lease rule for chunks: queue again, ahead of the queue, the unstored chunks of running
    sweeps whose lease ran out with their worker's (a whole worker SIGKILLed, its host gone: their
    messages died with it). Returns how many chunks were queued."""
    lapsed = Chunk.objects.filter(
        lease_until__lt=timezone.now(), stored=False, sweep__status=Sweep.Status.RUNNING
    ).exclude(holder__in=leases.live_workers())

    return leases.requeue_lapsed(lapsed, ("sweep_id", "sweep__depth"), _publish_chunks_first, ("sweep", "chunk(s)"))


def _publish_chunks_first(sweep: tuple[int, int], ids: list[int]) -> None:
    # The depth weighs the chunks when they are dealt to messages (publish.chunk_cost).
    publish.enqueue(Sweep(pk=sweep[0], depth=sweep[1]), chunk_ids=ids, fail_sweep=False, first=True)


def chunks_requeue_lost() -> int:
    """The lost-message rule for chunks: queue again, ahead of the queue, the unstored chunks of
    running sweeps whose message was lost before any lease named it, within seconds of the loss.
    Returns how many chunks."""
    lost = messages.LOST.rows(Chunk, queued_messages)
    return leases.requeue_lapsed(
        lost, ("sweep_id", "sweep__depth"), _publish_chunks_first, ("sweep", "chunk(s)"), why=leases.LOST
    )


def audit_units_requeue_lapsed() -> int:
    """The lease rule for audits (as chunks_requeue_lapsed for chunks): queue again, ahead of the
    queue, the unstored units of running audits whose lease ran out with their worker's. Returns how many."""
    lapsed = AuditUnit.objects.filter(
        lease_until__lt=timezone.now(), stored=False, audit__status=Audit.Status.RUNNING
    ).exclude(holder__in=leases.live_workers())

    return leases.requeue_lapsed(lapsed, ("audit_id",), _publish_units_first, ("audit", "unit(s)"))


def _publish_units_first(audit: tuple[int], ids: list[int]) -> None:
    publish.audit_units_enqueue(Audit(pk=audit[0]), ids, fail=False, first=True)


def audit_units_requeue_lost() -> int:
    """The lost-message rule for audits (as chunks_requeue_lost for chunks): queue again, ahead of
    the queue, the units of running audits whose message was lost before any lease named it.
    Returns how many."""
    return leases.requeue_lapsed(
        messages.LOST.rows(AuditUnit, queued_messages),
        ("audit_id",),
        _publish_units_first,
        ("audit", "unit(s)"),
        why=leases.LOST,
    )


# Per process: whether the last read of the task queue failed (its warning is logged once).
_broker_away = False


def queued_messages() -> int | None:
    """How many messages wait in the dashboard's task queue; None if the broker cannot be asked."""
    global _broker_away

    try:
        with current_app.connection_for_write() as conn, conn.channel() as channel:
            try:
                ok = channel.queue_declare(queue=str(current_app.conf.task_default_queue), passive=True)
            except (ChannelError, *conn.channel_errors):
                return 0  # no such queue: transports drop an empty queue, or none was declared yet
            _broker_away = False
            return int(ok.message_count)
    except Exception as e:  # noqa: BLE001 - unreachable broker: ask again at the next round
        if not _broker_away:  # once until it answers again: the lost-message rule asks every round
            log.warning("the watchdog cannot read the task queue (%s: %s)", type(e).__name__, e)
        _broker_away = True
        return None
