"""Launching a sweep: store a checked launch request and its chunks, enqueue them on commit. (The
request, checked and planned once, is sweeps.request's; the checks are sweeps.configs' and
sweeps.plan's.)

Rules:
- Bad input (BadRequest), and a sweep too big to launch (PlanTooBig), store nothing (sweeps.errors).
- The broker's and the database's errors are raised as they are (sweeps.errors.reaching turns them
  into ServiceUnreachable where a page or a command calls).
- A full disk while the sweep is stored rolls it back: nothing stored, the error as raised. A full
  disk while its tasks are queued, after the commit, leaves the sweep and its chunks stored with
  some tasks queued: StoredUnqueued says so, with what is stored, and the sweep is failed with that
  reason where the database can still write it, to be resumed once space is freed (else it stays
  running and the stall watchdog queues its missing chunks again once it can).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import DatabaseError, IntegrityError, transaction

from sweeps import diskfull, selectors
from sweeps.configs import check
from sweeps.errors import SweepsiteError
from sweeps.limits import KIND_CHARS, LABEL_CHARS, REQUEST_TOKEN_CHARS
from sweeps.models import Chunk, Sweep, take
from sweeps.request import LaunchRequest, launch_request
from sweeps.services import lifecycle
from sweeps.workqueue import publish


class StoredUnqueued(SweepsiteError):
    """The disk filled while a launch queued the stored sweep's tasks (see the rules); the message
    says what is stored and that it can be resumed."""

    def __init__(self, sweep_id: int, message: str) -> None:
        super().__init__(message)
        self.sweep_id = sweep_id


def sweep_create(
    *, user: Any, request_token: str | None = None, asked: LaunchRequest | None = None, **settings: Any
) -> Sweep:
    """Store the launch `asked` (sweeps.request.launch_request: checked and planned once) and its
    chunks, and enqueue their messages on commit (publish.deal). Without `asked`, the launch of
    `settings` (launch_request's keyword arguments: job_source, configs, depth, runs, person,
    source_name, name, notes and the conditions), checked after the request token.

    Bad input raises ValidationError and stores nothing, and so does a sweep too big to launch
    (a depth-3 sweep of too many scenarios, a job too big for its sweep: sweeps.plan.checked_plan).
    The same `request_token` twice gives the first sweep back (a double submit is one sweep). A `user`
    at the limit of unfinished sweeps (settings.SWEEPSITE_MAX_RUNNING) is refused (ValidationError);
    commands pass no user and have no limit.
    """
    if asked is not None and settings:
        raise TypeError(f"sweep_create takes a launch request or its settings, not both: {', '.join(settings)}")
    if request_token is not None:
        check(isinstance(request_token, str) and 0 < len(request_token) <= REQUEST_TOKEN_CHARS, "bad request token")
        existing = Sweep.objects.filter(request_token=request_token).first()
        if existing is not None:
            return existing
    if asked is None:
        asked = launch_request(**settings)
    owner_id = getattr(user, "pk", None)
    try:
        with transaction.atomic():
            lifecycle.check_running_limit(owner_id)
            sweep = Sweep.objects.create(
                job_name=asked.job.name,
                job_source=asked.job_source,
                configs=[dict(c) for c in asked.configs],
                depth=asked.depth,
                runs=asked.runs,
                person=asked.person,
                created_by_id=owner_id,
                request_token=request_token,
                total_chunks=len(asked.chunks),
                name=asked.name,
                notes=asked.notes,
                **asked.conditions._asdict(),
            )
            ids = _store_chunks(sweep, asked.chunks)
            transaction.on_commit(lambda: _enqueue(sweep, ids))
    except IntegrityError:
        if request_token is not None:  # two submits raced: the other one stored it
            existing = Sweep.objects.filter(request_token=request_token).first()
            if existing is not None:
                return existing
        raise
    return sweep


def _enqueue(sweep: Sweep, ids: list[int]) -> None:
    try:
        publish.enqueue(sweep, chunk_ids=ids)
    except Exception as e:
        if not diskfull.full(e):
            raise
        raise _stored_unqueued(sweep, e) from e


def _stored_unqueued(sweep: Sweep, e: BaseException) -> StoredUnqueued:
    """Fail the sweep with the disk's reason if the database can write it; what is stored, said."""
    why = diskfull.reason(e)
    error = (
        f"the disk filled while its tasks were queued ({why}); {diskfull.ADVICE}, then resume it: "
        "what is stored is kept"
    )
    try:
        if not take(Sweep, sweep.pk, Sweep.Status.FAILED, sources=[Sweep.Status.RUNNING], error=error):
            Sweep.objects.filter(pk=sweep.pk, status=Sweep.Status.FAILED).update(error=error)
        failed = True
    except DatabaseError:  # its disk is full too
        failed = False
    try:
        progress = selectors.sweep_progress(sweep)
        stored = (
            f"{progress['chunks_stored']:,} of its {progress['total_chunks']:,} chunks done so far "
            f"({progress['scenarios']:,} scenario rows)"
        )
    except DatabaseError:
        stored = f"its {sweep.total_chunks:,} chunks"
    state = (
        "and failed, as not all of its tasks could be queued"
        if failed
        else "but not all of its tasks could be queued (nor could it be marked failed: the stall watchdog "
        "queues the missing chunks again once it can)"
    )
    return StoredUnqueued(
        sweep.pk,
        f"the disk is full ({why}): sweep {sweep.pk} is stored with {stored}, {state}; "
        f"{diskfull.ADVICE}, then resume it from its page (what is stored is kept)",
    )


def _store_chunks(sweep: Sweep, plan: Sequence[Any]) -> list[int]:
    """Store the planned chunks; their IDs (publish.chunk_costs weighs them, publish.deal deals them)."""
    chunks = Chunk.objects.bulk_create(
        [
            Chunk(
                sweep=sweep, config=c.config, first_point=c.first, kind=c.kind[:KIND_CHARS], label=c.label[:LABEL_CHARS]
            )
            for c in plan
        ]
    )
    ids = [c.pk for c in chunks]
    if None in ids:  # a backend that does not return keys from bulk inserts: read them
        ids = list(Chunk.objects.filter(sweep=sweep).values_list("pk", flat=True))
    return ids
