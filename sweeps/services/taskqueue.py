"""Publishing the dashboard's tasks, by name: the services never import sweeps.tasks (which imports
them), so there is no import cycle.

Rules:
- The task names are declared here and sweeps/tasks.py registers each under its name; `publish` is
  the one place a message leaves (tests replace it to record what is published).
- `enqueue` runs on commit (transaction.on_commit): a worker never sees an ID before its row exists.
- A broker that cannot be reached leaves no sweep "running" forever: a launch or resume fails the
  sweep with a message saying so (its resume button enqueues again once the broker is back), an
  answer notes it on the sweep; then the error is raised for the caller to report. The stall
  watchdog passes `fail_sweep=False`: its sweep stays running and its next round tries again.
- Two priorities: chunks and audit units queued again after their worker died (`first=True`) go ahead of the queue,
  so a chunk interrupted early in a long sweep does not wait for the rest of it; every other message
  waits its turn (NORMAL). Lower runs sooner, as on Redis (kombu checks its priority lists from 0);
  the filesystem broker (sweepsite/broker.py) orders its file names so; a broker without priorities
  (an AMQP queue without x-max-priority) keeps them in order, which is only slower.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from django.db.models import Max

from sweeps.limits import MAX_CHUNKS_PER_TASK, MESSAGE_SHARE, TAIL_SHARE
from sweeps.models import Chunk, Sweep, take
from sweepsite.celery import app

log = logging.getLogger(__name__)

# One task per service it calls, named after it.
CHUNK_RUN = "sweeps.tasks.chunk_run"
CHUNKS_RUN = "sweeps.tasks.chunks_run"
QUESTION_RESUME = "sweeps.tasks.question_resume"
AUDIT_UNIT_RUN = "sweeps.tasks.audit_unit_run"
EXPORT_BUILD = "sweeps.tasks.export_build"


# Message priorities (see the rules): recovered chunks, everything else.
FIRST = 0
NORMAL = 5


def priority(first: bool) -> int:
    """A message's priority: FIRST (work queued again after its worker died) or NORMAL."""
    return FIRST if first else NORMAL


def publish(name: str, args: tuple[Any, ...], producer: Any, priority: int = NORMAL) -> None:
    """Send one task message (the queue is the app's default queue)."""
    app.send_task(name, args, producer=producer, priority=priority)


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
    agentcore.merge, playing is mostly each worker's first chunks). At depth 2, a twice scenario per
    point of its restart, which reaches about the points from `first` on of the uninterrupted run's
    `npoints` (the weight the sweep page's ETA gives a chunk, selectors._eta); at depth 3, as many
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
    npoints = dict(chunks.filter(second_from=0).order_by().values("config").annotate(n=Max("first_point"))
                   .values_list("config", "n"))
    cost = {pk: chunk_cost(sweep.depth, npoints.get(config, first), first, second_from, second_to)
            for pk, config, first, second_from, second_to in chunks.filter(pk__in=list(chunk_ids)).values_list(
                "pk", "config", "first_point", "second_from", "second_to")}
    return [(pk, cost.get(pk, 1)) for pk in chunk_ids]


def enqueue(sweep: Sweep, *, chunk_ids: Sequence[int] = (), question_ids: Sequence[int] = (),
            fail_sweep: bool = True, first: bool = False) -> None:
    """Publish the tasks of these chunks (dealt by `deal`; with `first`, ahead of the queue) and
    question resumes (see the rules)."""
    messages = deal(chunk_costs(sweep, chunk_ids))
    try:
        with app.producer_or_acquire() as producer:
            level = priority(first)
            for batch in messages:
                if len(batch) == 1:
                    publish(CHUNK_RUN, (batch[0],), producer, level)
                else:
                    publish(CHUNKS_RUN, (batch,), producer, level)
            for qid in question_ids:
                publish(QUESTION_RESUME, (qid,), producer)
    except Exception as e:
        log.exception("sweep %s: cannot enqueue tasks", sweep.pk)
        msg = f"could not reach the task broker ({type(e).__name__}: {e}); resume the sweep once it is back"
        if fail_sweep and chunk_ids:
            if take(Sweep, sweep.pk, Sweep.Status.FAILED, error=msg):
                sweep.status, sweep.error = Sweep.Status.FAILED, msg
        elif fail_sweep:
            Sweep.objects.filter(pk=sweep.pk).update(error=msg)
        raise
