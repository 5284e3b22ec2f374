"""A sweep's status from its rows (finalize), and what people do to a sweep: cancel, delete, name
and notes."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from sweeps import selectors
from sweeps.configs import clean_name_notes
from sweeps.errors import BadRequest
from sweeps.models import Chunk, Question, Scenario, Sweep, take


def sweep_finalize(*, sweep_id: int) -> Sweep | None:
    """Derive the sweep's status from its rows; cache the table once it is done. Idempotent.

    A cancelled sweep becomes done only when everything is there: every chunk stored and no
    question left unresolved (the cancel came after the last chunk was stored); otherwise it stays
    cancelled, with its stored rows, until its resume button. None if the sweep was deleted."""
    sweep = Sweep.objects.filter(pk=sweep_id).first()
    if sweep is None or sweep.status == Sweep.Status.DONE:
        return sweep
    if Chunk.objects.filter(sweep_id=sweep_id, stored=False).exists():
        return sweep
    if Question.objects.filter(sweep_id=sweep_id).exclude(status=Question.Status.RESUMED).exists():
        if sweep.status == Sweep.Status.RUNNING:
            take(Sweep, sweep_id, Sweep.Status.WAITING, sources=[Sweep.Status.RUNNING])
        sweep.refresh_from_db()
        return sweep
    table = [r.to_dict() for r in selectors.sweep_table(sweep)]
    take(Sweep, sweep_id, Sweep.Status.DONE, finished_at=timezone.now(), table=table, error="")
    sweep.refresh_from_db()
    return sweep


def sweep_cancel(*, sweep_id: int) -> bool:
    """Cancel a running or waiting sweep; True if this call cancelled it (False: it is done, failed
    or cancelled already; a second click changes nothing).

    Its queued chunks are skipped by the workers (not stored, not counted as failed: chunks._claim),
    a chunk playing at that moment is not stored (chunks._mark_stored), answered questions wait, and
    the stall watchdog leaves it alone; the rows stored before stay. `sweep_resume` goes on from
    there."""
    return take(
        Sweep,
        sweep_id,
        Sweep.Status.CANCELLED,
        sources=[Sweep.Status.RUNNING, Sweep.Status.WAITING],
        finished_at=timezone.now(),
    )


def sweep_delete(*, sweep_id: int) -> dict[str, int]:
    """Delete a sweep with its chunks, scenarios and questions; how many of each were removed
    (all zero if it was gone already). Its tasks still queued find no chunk and do nothing.

    Scenarios go in one DELETE statement: Django's cascade would read every row's ID first (a
    10-run table has 814,560)."""
    with transaction.atomic():
        # Its chunks first, in ID order as every writer of several chunks locks them (services/chunks.py),
        # then the row: a store in progress holds its chunk and INSERTs rows referencing the sweep,
        # which the sweep's FOR UPDATE (a delete needs it) would block: a deadlock on PostgreSQL.
        list(Chunk.objects.filter(sweep_id=sweep_id).select_for_update().order_by("pk").values_list("pk", flat=True))
        if not Sweep.objects.select_for_update().filter(pk=sweep_id).exists():
            return {"sweeps": 0, "chunks": 0, "scenarios": 0, "questions": 0}
        questions = Question.objects.filter(sweep_id=sweep_id).delete()[0]
        conn = transaction.get_connection()
        with conn.cursor() as cur:
            cur.execute(f"DELETE FROM {conn.ops.quote_name(Scenario._meta.db_table)} WHERE sweep_id = %s", [sweep_id])
            scenarios = cur.rowcount
        chunks = Chunk.objects.filter(sweep_id=sweep_id).delete()[0]
        Sweep.objects.filter(pk=sweep_id).delete()
    return {"sweeps": 1, "chunks": chunks, "scenarios": scenarios, "questions": questions}


def sweep_update_notes(*, sweep_id: int, name: str, notes: str) -> bool:
    """Set a sweep's name and notes (the person's words; the sweep itself is unchanged); False if
    the sweep is gone. Bad values raise ValidationError."""
    name, notes = clean_name_notes(name, notes)
    return bool(Sweep.objects.filter(pk=sweep_id).update(name=name, notes=notes))


UNFINISHED = (Sweep.Status.RUNNING, Sweep.Status.WAITING)


def check_running_limit(owner_id: int | None) -> None:
    """Refuse (BadRequest) one more unfinished sweep for its owner when the owner has
    settings.SWEEPSITE_MAX_RUNNING unfinished (running or waiting for answers) already; a sweep
    with no owner, or a limit of 0, is never refused. Call it inside the transaction that makes
    the sweep unfinished: it locks the owner's row first, so two launches at once count each other
    (SQLite's write transactions are serial already)."""
    limit = settings.SWEEPSITE_MAX_RUNNING
    if not limit or owner_id is None:
        return
    owner = get_user_model().objects.select_for_update().filter(pk=owner_id).first()
    if owner is None:
        return
    n = Sweep.objects.filter(created_by_id=owner_id, status__in=UNFINISHED).count()
    if n >= limit:
        raise BadRequest(
            f"{owner.get_username()} has {n} unfinished sweep{'s' * (n != 1)} (running or waiting for answers), "
            f"the most one user may have at once ({limit}): wait for one to finish or cancel one, then try again"
        )
