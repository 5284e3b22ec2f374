"""Launching a sweep: validate, store the sweep and its chunks, enqueue them on commit. (The planned
size before launching is sweeps.plan's; the checks are sweeps.configs'.)

Rules:
- Bad input, and a sweep too big to launch, store nothing (ValidationError).
- A full disk while the sweep is stored rolls it back: nothing stored, the error as raised. A full
  disk while its tasks are queued, after the commit, leaves the sweep and its chunks stored with
  some tasks queued: StoredUnqueued says so, with what is stored, and the sweep is failed with that
  reason where the database can still write it, to be resumed once space is freed (else it stays
  running and the stall watchdog queues its missing chunks again once it can).
"""

from __future__ import annotations

from typing import Any

from django.db import DatabaseError, IntegrityError, transaction

from sweeps import diskfull, selectors
from sweeps.configs import check, clean_name_notes, conditions_from
from sweeps.limits import KIND_CHARS, LABEL_CHARS, REQUEST_TOKEN_CHARS
from sweeps.models import Chunk, Sweep, take
from sweeps.plan import launch_plan, size_check
from sweeps.services import lifecycle
from sweeps.workqueue import publish


class StoredUnqueued(Exception):
    """The disk filled while a launch queued the stored sweep's tasks (see the rules); the message
    says what is stored and that it can be resumed."""

    def __init__(self, sweep_id: int, message: str) -> None:
        super().__init__(message)
        self.sweep_id = sweep_id


def sweep_create(*, user: Any, job_source: str, configs: list[dict[str, str]], depth: int = 2, runs: int = 1,
                 person: str = "scripted", request_token: str | None = None,
                 source_name: str = "uploaded job", name: str = "", notes: str = "", **conditions: Any) -> Sweep:
    """Validate, store the sweep and its chunks, and enqueue their messages on commit (publish.deal).

    Bad input raises ValidationError and stores nothing, and so does a sweep too big to launch
    (sweeps.plan.size_check: a depth-3 sweep of too many scenarios, a job too big for its sweep).
    The same `request_token` twice gives the first sweep back (a double submit is one sweep). `name`
    and `notes` are the person's own words for the sweep (optional). Every configuration is swept
    under `conditions` (sweeps.configs.Conditions' fields: crash_model, fsync, tracker_fault,
    tool_faults, person_faults, model, seed; agentcore's choices and spellings, its defaults for
    those not given), stored with the sweep. A `user` at
    the limit of unfinished sweeps (settings.SWEEPSITE_MAX_RUNNING) is refused (ValidationError);
    commands pass no user and have no limit.
    """
    if request_token is not None:
        check(isinstance(request_token, str) and 0 < len(request_token) <= REQUEST_TOKEN_CHARS, "bad request token")
        existing = Sweep.objects.filter(request_token=request_token).first()
        if existing is not None:
            return existing
    name, notes = clean_name_notes(name, notes)
    size_check(job_source=job_source, configs=configs, depth=depth, runs=runs, person=person,
               source_name=source_name, **conditions)
    planned = launch_plan(job_source, configs, depth, runs, person, source_name, conditions_from(conditions))
    owner_id = getattr(user, "pk", None)
    try:
        with transaction.atomic():
            lifecycle.check_running_limit(owner_id)
            sweep = Sweep.objects.create(
                job_name=planned.job.name, job_source=job_source, configs=planned.configs, depth=depth, runs=runs,
                person=person, created_by_id=owner_id, request_token=request_token,
                total_chunks=len(planned.chunks), name=name, notes=notes, **planned.conditions._asdict(),
            )
            ids = _store_chunks(sweep, planned.chunks)
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
    error = (f"the disk filled while its tasks were queued ({why}); {diskfull.ADVICE}, then resume it: "
             "what is stored is kept")
    try:
        if not take(Sweep, sweep.pk, Sweep.Status.FAILED, sources=[Sweep.Status.RUNNING], error=error):
            Sweep.objects.filter(pk=sweep.pk, status=Sweep.Status.FAILED).update(error=error)
        failed = True
    except DatabaseError:  # its disk is full too
        failed = False
    try:
        progress = selectors.sweep_progress(sweep)
        stored = (f"{progress['chunks_stored']:,} of its {progress['total_chunks']:,} chunks done so far "
                  f"({progress['scenarios']:,} scenario rows)")
    except DatabaseError:
        stored = f"its {sweep.total_chunks:,} chunks"
    state = ("and failed, as not all of its tasks could be queued" if failed else
             "but not all of its tasks could be queued (nor could it be marked failed: the stall watchdog "
             "queues the missing chunks again once it can)")
    return StoredUnqueued(sweep.pk, f"the disk is full ({why}): sweep {sweep.pk} is stored with {stored}, {state}; "
                                    f"{diskfull.ADVICE}, then resume it from its page (what is stored is kept)")


def _store_chunks(sweep: Sweep, plan: list[Any]) -> list[int]:
    """Store the planned chunks; their IDs (publish.chunk_costs weighs them, publish.deal deals them)."""
    chunks = Chunk.objects.bulk_create(
        [Chunk(sweep=sweep, config=c.config, first_point=c.first, kind=c.kind[:KIND_CHARS],
               label=c.label[:LABEL_CHARS]) for c in plan])
    ids = [c.pk for c in chunks]
    if None in ids:  # a backend that does not return keys from bulk inserts: read them
        ids = list(Chunk.objects.filter(sweep=sweep).values_list("pk", flat=True))
    return ids
