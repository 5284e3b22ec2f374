"""Publishing the dashboard's tasks, by name: the queue never imports sweeps.tasks (which imports
the services, which import this), so there is no import cycle.

Rules:
- The task names are declared here and sweeps/tasks.py registers each under its name; `send` is
  the one place a message leaves (tests replace it to record what is published). Messages go
  through the current Celery app (celery.current_app: the project's, sweepsite/celery.py), to its
  default queue.
- `enqueue` (a sweep's chunks and question resumes) and `audit_units_enqueue` (an audit's units)
  are called on commit (transaction.on_commit) by the services: a worker never sees an ID before
  its row exists.
- A broker that cannot be reached leaves no sweep or audit "running" forever: a launch or resume
  fails it with a message saying so (its resume button enqueues again once the broker is back), an
  answer notes it on the sweep; then the error is raised for the caller to report. The watchdog
  passes `fail_sweep=False` (`fail=False`): its sweep or audit stays running and its next round
  tries again. Failing a sweep or audit here is a status edge (models.take), not a service call.
- Priorities 0 to PRIORITIES - 1, lower sooner, as on Redis (kombu checks its priority lists from 0;
  settings gives it one list per priority); the filesystem broker (sweepsite/broker.py) orders its
  file names so; a broker without priorities (an AMQP queue without x-max-priority) keeps them in
  order, which is only less fair. Chunks and audit units queued again after their message was lost
  (`first=True`) go ahead of everything (FIRST), so lost work does not wait for the rest of a long
  sweep. Every other message gets its owner's fair share (`priority_for`): its level rises with the
  owner's work queued ahead of it, so one owner's big sweep does not starve another's small one.
- Every chunk and unit message is stamped in the database before it leaves (workqueue/messages.py):
  the database knows what is queued, the broker only wakes workers.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Any

from celery import current_app
from django.db.models import Max

from sweeps.limits import AUDIT_UNIT_ROWS, MAX_CHUNKS_PER_TASK, MESSAGE_SHARE, PRIORITIES, SHARE_ROWS, TAIL_SHARE
from sweeps.models import Audit, AuditUnit, Chunk, Sweep, take
from sweeps.workqueue import messages as stamps

log = logging.getLogger(__name__)

# One task per service it calls, named after it.
CHUNK_RUN = "sweeps.tasks.chunk_run"
CHUNKS_RUN = "sweeps.tasks.chunks_run"
QUESTION_RESUME = "sweeps.tasks.question_resume"
AUDIT_UNIT_RUN = "sweeps.tasks.audit_unit_run"
EXPORT_BUILD = "sweeps.tasks.export_build"


# Message priorities (see the rules): lost work queued again; the first level of a fair share,
# which messages with nothing of their owner's queued ahead get (and question resumes).
FIRST = 0
NORMAL = 1


def priority_for(ahead: float) -> int:
    """A fair share's priority for a message with `ahead` estimated rows of its owner's work queued
    before it: NORMAL up to SHARE_ROWS, one level later each time that doubles, at most the last."""
    return min(NORMAL + int(math.log2(1 + max(ahead, 0) / SHARE_ROWS)), PRIORITIES - 1)


def owner_backlog(user_id: int | None, *, but_sweep: int | None = None, but_audit: int | None = None) -> float:
    """The estimated rows of an owner's work queued and not stored (their running sweeps' chunks,
    their running audits' units), leaving out one sweep or audit (the one being queued). A user of
    None is the command line's, one owner."""
    ahead = 0.0
    sweeps = Sweep.objects.filter(created_by_id=user_id, status=Sweep.Status.RUNNING).exclude(pk=but_sweep)
    for sweep in sweeps.only("pk", "depth"):
        ids = list(
            Chunk.objects.filter(sweep_id=sweep.pk, stored=False, queued__isnull=False).values_list("pk", flat=True)
        )
        ahead += sum(cost for _, cost in chunk_costs(sweep, ids))
    units = AuditUnit.objects.filter(
        audit__created_by_id=user_id, audit__status=Audit.Status.RUNNING, stored=False, queued__isnull=False
    ).exclude(audit_id=but_audit)
    return ahead + units.count() * AUDIT_UNIT_ROWS


def priorities(costs: Sequence[float], ahead: float) -> list[int]:
    """The fair-share priority of each message of a batch, whose estimated rows are `costs` in
    publishing order, with `ahead` rows of its owner's queued before the first."""
    levels = []
    for cost in costs:
        levels.append(priority_for(ahead))
        ahead += cost
    return levels


def priority(first: bool) -> int:
    """The priority of a message that is not part of a fair share: FIRST (lost work queued again) or NORMAL."""
    return FIRST if first else NORMAL


def send(name: str, args: tuple[Any, ...], producer: Any, priority: int = NORMAL) -> None:
    """Send one task message (the queue is the app's default queue)."""
    current_app.send_task(name, args, producer=producer, priority=priority)


def chunk_ids_of(name: str, args: Sequence[Any], kwargs: dict[str, Any]) -> list[int]:
    """The chunk IDs a task message carries (CHUNK_RUN's one, CHUNKS_RUN's list); [] for other tasks."""
    if name == CHUNK_RUN:
        ids = kwargs.get("chunk_id", args[0] if args else None)
    elif name == CHUNKS_RUN:
        ids = kwargs.get("chunk_ids", args[0] if args else None)
    else:
        return []
    ids = ids if isinstance(ids, list) else [ids]
    return [i for i in ids if isinstance(i, int)]


def audit_unit_ids_of(name: str, args: Sequence[Any], kwargs: dict[str, Any]) -> list[int]:
    """The audit unit ID an AUDIT_UNIT_RUN message carries, in a list; [] for other tasks."""
    if name != AUDIT_UNIT_RUN:
        return []
    pk = kwargs.get("unit_id", args[0] if args else None)
    return [pk] if isinstance(pk, int) else []


def chunk_cost(depth: int, npoints: int, first: int, second_from: int = 0, second_to: int = 0) -> int:
    """A chunk's estimated work: the rows it stores (storing them is most of a worker's time; with
    agentcore.harness.merge, playing is mostly each worker's first chunks). At depth 2, a twice scenario per
    point of its restart, which reaches about the points from `first` on of the uninterrupted run's
    `npoints` (the weight the sweep page's ETA gives a chunk, selectors.progress._eta); at depth 3, as many
    thrice scenarios for each of those, about its square; at depth 1, its once scenario. A later
    chunk (made after an answer) stores the twice scenarios second_from..second_to."""
    if second_from:
        return second_to - second_from + 1
    restart = npoints - first + 1
    return restart * restart if depth >= 3 else restart if depth == 2 else 1


def deal(weighed: Sequence[tuple[int, int]]) -> list[list[int]]:
    """Chunks, as (ID, estimated cost), dealt to messages in the order they are to be published.

    Guided self-scheduling: heaviest chunks first, each message about 1/MESSAGE_SHARE of the work
    not dealt yet, but at least TAIL_SHARE of all of it and at most MAX_CHUNKS_PER_TASK chunks. The
    messages shrink toward the end: workers, each taking the next message when it is free, finish
    within a small message of each other, however many they are (on one host or several) and
    however fast. Each message in ID order."""
    order = sorted(weighed, key=lambda c: (-c[1], c[0]))
    total = left = sum(cost for _, cost in order)
    messages: list[list[int]] = []
    hand: list[int] = []
    held = 0
    for pk, cost in order:
        hand.append(pk)
        held += cost
        if held >= max(left / MESSAGE_SHARE, total * TAIL_SHARE) or len(hand) == MAX_CHUNKS_PER_TASK:
            messages.append(sorted(hand))
            left -= held
            hand, held = [], 0
    if hand:
        messages.append(sorted(hand))
    return messages


def chunk_costs(sweep: Sweep, chunk_ids: Sequence[int]) -> list[tuple[int, int]]:
    """These chunks with their estimated costs (chunk_cost): their rows, and each configuration's
    last first point (its uninterrupted run's points), in two reads (a chunk gone since, say with
    its deleted sweep, weighs 1: its task finds nothing to do)."""
    if len(chunk_ids) < 2:
        return [(pk, 1) for pk in chunk_ids]
    chunks = Chunk.objects.filter(sweep_id=sweep.pk)
    npoints = dict(
        chunks.filter(second_from=0)
        .order_by()
        .values("config")
        .annotate(n=Max("first_point"))
        .values_list("config", "n")
    )
    cost = {
        pk: chunk_cost(sweep.depth, npoints.get(config, first), first, second_from, second_to)
        for pk, config, first, second_from, second_to in chunks.filter(pk__in=list(chunk_ids)).values_list(
            "pk", "config", "first_point", "second_from", "second_to"
        )
    }
    return [(pk, cost.get(pk, 1)) for pk in chunk_ids]


def enqueue(
    sweep: Sweep,
    *,
    chunk_ids: Sequence[int] = (),
    question_ids: Sequence[int] = (),
    fail_sweep: bool = True,
    first: bool = False,
) -> None:
    """Stamp and publish the tasks of these chunks (dealt by `deal`; with `first`, ahead of the
    queue, else at their owner's fair share) and question resumes (see the rules)."""
    weighed = chunk_costs(sweep, chunk_ids)
    messages = deal(weighed)
    if first or not messages:
        levels = [FIRST if first else NORMAL] * len(messages)
    else:
        cost = dict(weighed)
        levels = priorities(
            [sum(cost[pk] for pk in batch) for batch in messages],
            owner_backlog(sweep.created_by_id, but_sweep=sweep.pk),
        )
    stamps.stamp(Chunk, list(zip(messages, levels, strict=True)))
    try:
        with current_app.producer_or_acquire() as producer:
            for batch, level in zip(messages, levels, strict=True):
                if len(batch) == 1:
                    send(CHUNK_RUN, (batch[0],), producer, level)
                else:
                    send(CHUNKS_RUN, (batch,), producer, level)
            for qid in question_ids:
                send(QUESTION_RESUME, (qid,), producer)
    except Exception as e:
        log.exception("sweep %s: cannot enqueue tasks", sweep.pk)
        msg = f"could not reach the task broker ({type(e).__name__}: {e}); resume the sweep once it is back"
        if fail_sweep and chunk_ids:
            if take(Sweep, sweep.pk, Sweep.Status.FAILED, error=msg):
                sweep.status, sweep.error = Sweep.Status.FAILED, msg
        elif fail_sweep:
            Sweep.objects.filter(pk=sweep.pk).update(error=msg)
        raise


def audit_units_enqueue(a: Audit, unit_ids: list[int], *, fail: bool = True, first: bool = False) -> None:
    """Stamp and publish a message per unit: ahead of the queue with `first` (lost units queued
    again), else at their owner's fair share; with `fail`, a broker that cannot be reached fails the
    audit (see the rules)."""
    if first:
        levels = [FIRST] * len(unit_ids)
    else:
        levels = priorities([AUDIT_UNIT_ROWS] * len(unit_ids), owner_backlog(a.created_by_id, but_audit=a.pk))
    stamps.stamp(AuditUnit, [([pk], level) for pk, level in zip(unit_ids, levels, strict=True)])
    try:
        with current_app.producer_or_acquire() as producer:
            for pk, level in zip(unit_ids, levels, strict=True):
                send(AUDIT_UNIT_RUN, (pk,), producer, level)
    except Exception as e:
        log.exception("audit %s: cannot enqueue its units", a.pk)
        if fail:
            take(
                Audit,
                a.pk,
                Audit.Status.FAILED,
                error=f"could not reach the task broker ({type(e).__name__}: {e}); resume the audit once it is back",
            )
        raise
