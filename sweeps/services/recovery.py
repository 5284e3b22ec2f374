"""Recovering lost work over a sweep's rows: the resume button, the stall rule, and the command's wait.

Rules:
- What stays here is a service over a sweep's rows (it takes status edges, finalizes, checks the
  owner's limit); the queue's own rules, which only read leases and message stamps and publish,
  are sweeps/workqueue/watchdog.py's (the lease rule `chunks_requeue_lapsed`, the lost-message
  rule `chunks_requeue_lost`, `queued_messages`).
- The watchdog runs in the one worker that leads (workqueue/leases.py, workqueue/keeper.py). Besides
  the queue's rules it runs the stall rule `sweeps_resume_stalled` (every quarter of the stall
  period, 0.25 to 15 s): a running sweep that for a while stored nothing and had no chunk under a
  lease, with nothing left in the queue, lost messages no worker held (a broker restarted empty);
  its missing chunks are queued again. `manage.py sweep` runs the three while it waits
  (`sweep_wait`) when no worker leads. The sweep page's resume button (`sweep_resume`) does it by
  hand, also for a failed or cancelled sweep. A chunk that keeps failing (or killing its worker) is
  bounded by MAX_CHUNK_ATTEMPTS either way.
- Queuing a chunk again ends its lease, in the transaction that decides it: a lapsed lease is taken
  once (row locks, SKIP LOCKED on PostgreSQL; SQLite has one writer), and a chunk resumed by hand or
  by the stall rule is not queued a second time by the lease rule.
- Keyed writes make an overlap with a late redelivery harmless.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any, TypeVar

from django.db import transaction
from django.db.models import Count, Max, Q
from django.utils import timezone

from sweeps import selectors
from sweeps.configs import check
from sweeps.limits import POLL_SECONDS
from sweeps.models import Chunk, Question, Sweep, take
from sweeps.services import lifecycle
from sweeps.workqueue import leases, publish, watchdog

T = TypeVar("T")

log = logging.getLogger(__name__)


def sweep_resume(*, sweep_id: int, limit: bool = False) -> int:
    """Enqueue again every chunk not stored and every answered question not resumed (a stalled
    sweep: killed workers, a lost message, a broker that was down). Returns how many tasks.

    The sweep page's resume button: a failed sweep runs again, and each missing chunk gets a fresh
    bound of MAX_CHUNK_ATTEMPTS. A cancelled sweep runs again (status running; finalize then
    derives waiting or done if nothing is missing). A broker that cannot be reached fails the sweep
    with a message and raises (kombu's OperationalError) for the page to report. With `limit` (a
    person's resume: the sweep page), a failed or cancelled sweep whose owner is at the limit of
    unfinished sweeps is refused (ValidationError) and nothing changes."""
    return sum(map(len, _requeue(sweep_id, manual=True, limit=limit)))


def _requeue(
    sweep_id: int, *, manual: bool, answered_before: Any = None, limit: bool = False
) -> tuple[list[int], list[int]]:
    """Queue again a sweep's unstored chunks and its answered questions; (chunk IDs, question IDs)."""
    with transaction.atomic():
        # FOR NO KEY UPDATE: a status change's lock. A store in progress INSERTs rows that reference
        # the sweep (a foreign key's KEY SHARE lock) while holding its chunks, which this then
        # updates: FOR UPDATE made the two wait for each other (a deadlock on PostgreSQL).
        sweep = Sweep.objects.select_for_update(no_key=True).get(pk=sweep_id)
        if limit and sweep.status in (Sweep.Status.FAILED, Sweep.Status.CANCELLED):
            lifecycle.check_running_limit(sweep.created_by_id)
        if not manual and sweep.status not in (Sweep.Status.RUNNING, Sweep.Status.WAITING):
            return [], []  # failed (a chunk that keeps failing) or done since the watchdog looked
        # Locked in ID order, as a store locks its chunks: an UPDATE goes in the planner's order,
        # which crossed a store's (a deadlock on PostgreSQL). A chunk stored meanwhile drops out.
        chunk_ids = list(
            Chunk.objects.filter(sweep_id=sweep_id, stored=False)
            .select_for_update(no_key=True)
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        questions = Question.objects.filter(sweep_id=sweep_id, status=Question.Status.ANSWERED)
        if answered_before is not None:
            questions = questions.filter(answered_at__lt=answered_before)
        question_ids = list(questions.values_list("pk", flat=True))
        if chunk_ids:  # queued now: no lease to run out (a worker holding one renews it)
            leases.end(Chunk.objects.filter(pk__in=chunk_ids), **({"attempts": 0} if manual else {}))  # a fresh bound
        if (chunk_ids or question_ids) and sweep.status == Sweep.Status.FAILED:
            take(Sweep, sweep_id, Sweep.Status.RUNNING, sources=[Sweep.Status.FAILED], error="")
        if manual and sweep.status == Sweep.Status.CANCELLED:
            take(Sweep, sweep_id, Sweep.Status.RUNNING, sources=[Sweep.Status.CANCELLED], error="", finished_at=None)
        if chunk_ids or question_ids:
            transaction.on_commit(
                lambda: publish.enqueue(sweep, chunk_ids=chunk_ids, question_ids=question_ids, fail_sweep=manual)
            )
    if not chunk_ids and not question_ids:
        lifecycle.sweep_finalize(sweep_id=sweep_id)
    return chunk_ids, question_ids


# Per process: when the watchdog last queued a sweep's missing work (monotonic seconds), so that
# one process queues a stalled sweep at most once per `stalled_for` while its rows do not come.
_AUTO_RESUMED: dict[int, float] = {}


def _stalled(stalled_for: float, sweep_id: int | None, now: Any, mono: float) -> list[int]:
    """The sweeps whose work looks lost (see sweeps_resume_stalled); finalizes a running sweep
    that has every chunk stored (its last worker died between storing and finalizing)."""
    cutoff = now - timedelta(seconds=stalled_for)
    sweeps = Sweep.objects.filter(status__in=[Sweep.Status.RUNNING, Sweep.Status.WAITING], created_at__lt=cutoff)
    if sweep_id is not None:
        sweeps = sweeps.filter(pk=sweep_id)
    candidates = sweeps.annotate(
        last=Max("chunks__stored_at"),
        unstored=Count("chunks", filter=Q(chunks__stored=False)),
        leased=Max("chunks__lease_until", filter=Q(chunks__stored=False)),
    ).values_list("pk", "status", "last", "unstored", "leased")
    stalled = []
    for pk, status, last, unstored, leased in candidates:
        if mono - _AUTO_RESUMED.get(pk, -math.inf) < stalled_for:
            continue
        # A lease live or ended within the period: a worker plays one of its chunks (a long one stores
        # nothing for a while), or a prefork worker gives back the message of a pool process that died.
        quiet = (last is None or last < cutoff) and (leased is None or leased < cutoff)
        if not unstored and status == Sweep.Status.RUNNING and quiet:
            # Every chunk stored, still "running": a redelivered chunk finds itself stored and stops.
            lifecycle.sweep_finalize(sweep_id=pk)
        elif unstored and status == Sweep.Status.RUNNING and quiet:
            stalled.append(pk)
        elif Question.objects.filter(sweep_id=pk, status=Question.Status.ANSWERED, answered_at__lt=cutoff).exists():
            stalled.append(pk)
    return stalled


def sweeps_resume_stalled(*, stalled_for: float, sweep_id: int | None = None) -> int:
    """The stall watchdog: queue again the missing work of sweeps whose workers lost it.

    A running sweep that stored no chunk for `stalled_for` seconds (since its launch, its last
    stored chunk, or this process's last resume of it) and had no chunk under a lease in that time
    gets its unstored chunks enqueued again;
    a running or waiting sweep gets the resume of every question answered more than `stalled_for`
    seconds ago and not resumed yet. Only when the task queue is empty: messages still queued
    will reach a worker (or no worker runs, and queueing more would not help). So it recovers the
    messages of a broker that restarted empty, and any a worker died with before its claim took a
    lease (watchdog.chunks_requeue_lapsed recovers the others within seconds).
    A running sweep with every chunk stored (its worker died before finalizing) is finalized. A
    failed sweep is left alone (its resume button is for people), and attempts are not reset: a
    chunk that keeps killing its worker still fails its sweep after MAX_CHUNK_ATTEMPTS. `sweep_id`
    limits it to one sweep. Returns how many tasks were enqueued; a broker or database that cannot
    be reached gives 0 (logged), never a failed sweep: the next round tries again."""
    check(isinstance(stalled_for, int | float) and stalled_for > 0, "stalled_for must be a positive number")
    now, mono = timezone.now(), time.monotonic()
    cutoff = now - timedelta(seconds=stalled_for)
    stalled = _stalled(stalled_for, sweep_id, now, mono)
    if not stalled:
        return 0
    queued = watchdog.queued_messages()
    if queued is None or queued > 0:
        return 0
    n = 0
    for pk in stalled:
        try:
            chunk_ids, question_ids = _requeue(pk, manual=False, answered_before=cutoff)
        except Exception:  # noqa: BLE001 - the broker went away meanwhile: the next round tries again
            log.exception("sweep %s: the stall watchdog could not queue its missing work", pk)
            continue
        _AUTO_RESUMED[pk] = mono
        k = len(chunk_ids) + len(question_ids)
        if k:  # named, as the lease rule names what it queues: which work a lost message held
            log.warning(
                "sweep %s: nothing stored for %g s and the queue is empty: %d missing chunk(s) and "
                "answer(s) queued again: chunks %s; answers %s",
                pk,
                stalled_for,
                k,
                " ".join(map(str, chunk_ids)) or "none",
                " ".join(map(str, question_ids)) or "none",
            )
        n += k
    return n


def sweep_wait(
    sweep_id: int,
    *,
    stalled_for: float,
    timeout: float | None,
    on_progress: Callable[[int], None],
    check_alive: Callable[[], None],
) -> selectors.SweepState:
    """Wait until the sweep is done, failed or waiting for answers, or `timeout` seconds have passed
    (`manage.py sweep`): its state, read from the database every POLL_SECONDS and given to
    `on_progress` (chunks stored); `check_alive` raises if the workers it relies on are gone. While
    it waits it runs the stall watchdog for this sweep every quarter of `stalled_for` (the workers
    run one too; `make run`'s may have it off): chunks whose messages were lost are queued again.
    Only when no worker leads the watchdog: this command then takes the leader lease for the round."""

    def read() -> selectors.SweepState:
        state = selectors.sweep_state(sweep_id)
        on_progress(state.chunks_stored)
        return state

    return wait_for(
        read,
        lambda s: s.status in (Sweep.Status.DONE, Sweep.Status.FAILED, Sweep.Status.WAITING),
        lambda: (
            watchdog.chunks_requeue_lapsed()
            + watchdog.chunks_requeue_lost()
            + sweeps_resume_stalled(stalled_for=stalled_for, sweep_id=sweep_id)
        ),
        stalled_for=stalled_for,
        timeout=timeout,
        check_alive=check_alive,
    )


def wait_for(
    read: Callable[[], T],
    finished: Callable[[T], bool],
    watch: Callable[[], Any],
    *,
    stalled_for: float,
    timeout: float | None,
    check_alive: Callable[[], None],
) -> T:
    """`read()` every POLL_SECONDS until `finished` says so or `timeout` seconds have passed (the last
    value read); `check_alive` raises if the workers are gone; `watch` (the watchdog's lease and stall
    rules) runs after `stalled_for` seconds, then every quarter of it, only when no worker leads the
    watchdog (this command then takes the leader lease for the round: a worker that leads has this
    work in hand, and two watchdogs would queue it twice). The wait of `manage.py sweep` and `audit`."""
    start = time.monotonic()
    next_watch = start + stalled_for
    while True:
        value = read()
        if finished(value):
            return value
        check_alive()
        if time.monotonic() >= next_watch:
            next_watch = time.monotonic() + max(stalled_for / 4, 0.25)
            if leases.lead():
                watch()
        if timeout is not None and time.monotonic() - start > timeout:
            return value
        time.sleep(POLL_SECONDS)
