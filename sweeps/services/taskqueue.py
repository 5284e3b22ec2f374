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
- Two priorities: chunks queued again after their worker died (`first=True`) go ahead of the queue,
  so a chunk interrupted early in a long sweep does not wait for the rest of it; every other message
  waits its turn (NORMAL). Lower runs sooner, as on Redis (kombu checks its priority lists from 0);
  the filesystem broker (sweepsite/broker.py) orders its file names so; a broker without priorities
  (an AMQP queue without x-max-priority) keeps them in order, which is only slower.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Any

from sweeps.limits import MAX_CHUNKS_PER_TASK, MIN_MESSAGES
from sweeps.models import Sweep, take
from sweepsite.celery import app

log = logging.getLogger(__name__)

# One task per service it calls, named after it.
CHUNK_RUN = "sweeps.tasks.chunk_run"
CHUNKS_RUN = "sweeps.tasks.chunks_run"
QUESTION_RESUME = "sweeps.tasks.question_resume"
AUDIT_UNIT_RUN = "sweeps.tasks.audit_unit_run"


# Message priorities (see the rules): recovered chunks, everything else.
FIRST = 0
NORMAL = 5


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


def deal(chunk_ids: Sequence[int]) -> list[list[int]]:
    """Chunks dealt to messages like cards, to and fro (given heaviest first, every message gets a
    like share of the work, so workers finish together), a few per message; each in ID order."""
    per_task = max(1, min(MAX_CHUNKS_PER_TASK, len(chunk_ids) // MIN_MESSAGES))
    messages = math.ceil(len(chunk_ids) / per_task)
    hands: list[list[int]] = [[] for _ in range(messages)]
    for n, pk in enumerate(chunk_ids):
        turn, seat = divmod(n, messages)
        hands[seat if turn % 2 == 0 else messages - 1 - seat].append(pk)
    return [sorted(hand) for hand in hands]


def enqueue(sweep: Sweep, *, chunk_ids: Sequence[int] = (), question_ids: Sequence[int] = (),
            fail_sweep: bool = True, first: bool = False) -> None:
    """Publish the tasks of these chunks (best heaviest first; with `first`, ahead of the queue) and
    question resumes (see the rules)."""
    try:
        with app.producer_or_acquire() as producer:
            priority = FIRST if first else NORMAL
            for batch in deal(chunk_ids):
                if len(batch) == 1:
                    publish(CHUNK_RUN, (batch[0],), producer, priority)
                else:
                    publish(CHUNKS_RUN, (batch,), producer, priority)
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
