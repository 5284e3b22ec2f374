"""Exports of scenario rows as files: asked for by a request, made by a worker, served once ready.

Rules:
- One Export row per sweep, format, filters and rows' version, unique (models.Export): a request
  (`export_request`) finds or makes it, and queues its build on commit only when it made it, or
  when it was lost (not ready, its progress still for EXPORT_STALL_SECONDS: a worker or a message
  gone) or failed. A second click is a no-op that returns the same row.
- The version is the sweep's rows as they are asked for: its stored chunks and resumed questions
  (the only writes that add or change scenario rows; each is one transaction with them). A done
  sweep's version never moves, so its file is reused by every later request; a running sweep's
  moves with each chunk, so a request after one is stored makes a new file, never serving an older
  one. A file made while the sweep runs holds at least the rows of its version (rows stored during
  the build after the place reached are in it too, each row once: selectors.scenario_export_rows).
- A build (`export_build`, the task's one call) claims the row (pending, or running with its
  progress still for EXPORT_STALL_SECONDS) under a token of its own, writes a temporary file under
  settings.VAR_DIR/exports by streaming the rows (exports.rows_csv / rows_jsonl: never the whole
  file in memory), stores its progress every EXPORT_PROGRESS_ROWS rows (an UPDATE that also says
  whether the claim is still its own: a build another took over stops), then renames the file into
  place and marks the row ready under its token. A redelivered message of a ready export is a
  no-op; one of a lost build starts it again from nothing (the rename makes a half-written file
  invisible). Work happens outside transactions.
- The bytes are those the synchronous export wrote: the same selector and the same writers.
- A newly made export of a sweep's same rows and filters removes the older ready or failed ones
  with their files; a deleted export (its sweep deleted) removes its file after the commit.
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from collections.abc import Iterator, Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

from celery import current_app
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from sweeps import exports, selectors
from sweeps.configs import conditions_of
from sweeps.limits import ERROR_CHARS, EXPORT_PAGE_ROWS, EXPORT_PROGRESS_ROWS, EXPORT_STALL_SECONDS
from sweeps.models import Chunk, Export, Question, Sweep, take
from sweeps.workqueue import publish

log = logging.getLogger(__name__)

SCENARIOS = "scenarios"
FOLDER = "exports"


class _TakenOver(Exception):
    """The build's claim is no longer its own (another build took the export over)."""


def folder() -> Path:
    """Where export files live: settings.VAR_DIR/exports (made when missing)."""
    path = Path(settings.VAR_DIR) / FOLDER
    path.mkdir(parents=True, exist_ok=True)
    return path


def file_path(export: Export) -> Path:
    """The ready file of an export."""
    return Path(settings.VAR_DIR) / export.path


def rows_version(sweep_id: int) -> str:
    """The sweep's rows as they are now (see the rules): "<stored chunks>.<resumed questions>"."""
    stored = Chunk.objects.filter(sweep_id=sweep_id, stored=True).count()
    resumed = Question.objects.filter(sweep_id=sweep_id, status=Question.Status.RESUMED).count()
    return f"{stored}.{resumed}"


def query_text(filters: Mapping[str, Any]) -> str:
    """The filters (ScenarioFilterForm.filters()) as canonical JSON: sorted keys, no spaces."""
    return json.dumps(dict(filters), sort_keys=True, separators=(",", ":"))


def export_find(*, sweep_id: int, fmt: str, filters: Mapping[str, Any]) -> Export | None:
    """The export of these rows as they are now, if it was asked for (a read: nothing is queued)."""
    return Export.objects.filter(
        sweep_id=sweep_id, what=SCENARIOS, fmt=fmt, query=query_text(filters), version=rows_version(sweep_id)
    ).first()


def export_request(*, user: Any, sweep_id: int, fmt: str, filters: Mapping[str, Any]) -> Export:
    """The export of the sweep's scenario rows (these filters, this format of exports.ROW_FORMATS)
    as they are now: found or made, and queued when made, lost or failed (see the rules)."""
    if fmt not in exports.ROW_FORMATS:
        raise ValueError(f"no scenario format {fmt!r}")
    identity = {
        "sweep_id": sweep_id,
        "what": SCENARIOS,
        "fmt": fmt,
        "query": query_text(filters),
        "version": rows_version(sweep_id),
    }
    now = timezone.now()
    made = False
    try:
        with transaction.atomic():
            export = Export.objects.create(
                **identity, beat_at=now, created_by=user if getattr(user, "is_authenticated", False) else None
            )
            made = True
            transaction.on_commit(lambda: _enqueue(export.pk))
    except IntegrityError:  # asked for already (a second click, or two at once): that one
        export = Export.objects.get(**identity)
    if made:
        _forget_older(export)
        return export
    with transaction.atomic():
        lost = Q(beat_at__lt=now - timedelta(seconds=EXPORT_STALL_SECONDS)) | Q(beat_at__isnull=True)
        again = take(
            Export, export.pk, Export.Status.PENDING, sources=[Export.Status.FAILED], error="", beat_at=now, holder=""
        ) or take(
            Export,
            export.pk,
            Export.Status.PENDING,
            sources=[Export.Status.PENDING, Export.Status.RUNNING],
            where=lost,
            beat_at=now,
            holder="",
        )
        if again:
            transaction.on_commit(lambda: _enqueue(export.pk))
    export.refresh_from_db()
    return export


def _enqueue(export_id: int) -> None:
    """Publish the build (on commit); a broker out of reach fails the export with the reason, which
    its page shows with the button that asks again."""
    try:
        with current_app.producer_or_acquire() as producer:
            publish.send(publish.EXPORT_BUILD, (export_id,), producer)
    except Exception as e:  # noqa: BLE001 - whatever the broker raised, the page says it and offers a retry
        log.exception("export %s: cannot enqueue its build", export_id)
        export_failed(
            export_id=export_id,
            error=f"could not reach the task broker ({type(e).__name__}: {e}); ask again once it is back",
        )


def _forget_older(export: Export) -> None:
    """Remove the older ready or failed exports of the same sweep, rows and filters, with their files."""
    older = Export.objects.filter(
        sweep_id=export.sweep_id,
        what=export.what,
        fmt=export.fmt,
        query=export.query,
        status__in=[Export.Status.READY, Export.Status.FAILED],
    ).exclude(pk=export.pk)
    for old in older:
        old.delete()  # its file goes after the commit (file_removed)


def file_removed(sender: Any, instance: Export, **_: Any) -> None:
    """post_delete of an Export: its file and any temporary file of it, once the deletion is committed."""
    pk, path = instance.pk, instance.path

    def remove() -> None:
        paths = [Path(settings.VAR_DIR) / path] if path else []
        paths += list(folder().glob(f"{pk}.*.tmp"))
        for p in paths:
            try:
                p.unlink()
            except FileNotFoundError:
                pass

    transaction.on_commit(remove)


def export_failed(*, export_id: int, error: str) -> bool:
    """An export whose build failed (past its retries) or could not be queued: failed, with the reason."""
    return take(Export, export_id, Export.Status.FAILED, error=error[:ERROR_CHARS], holder="")


def export_build(*, export_id: int) -> bool:
    """Make the export's file (see the rules); False (a no-op) if it is ready, gone, or another
    build holds it and is making progress."""
    token = uuid.uuid4().hex
    now = timezone.now()
    live = Q(status=Export.Status.PENDING) | Q(beat_at__lt=now - timedelta(seconds=EXPORT_STALL_SECONDS))
    if not take(
        Export,
        export_id,
        Export.Status.RUNNING,
        where=live,
        holder=token,
        attempts=F("attempts") + 1,
        started_at=now,
        beat_at=now,
        rows_written=0,
        error="",
    ):
        return False
    export = Export.objects.select_related("sweep").get(pk=export_id)
    sweep = export.sweep
    for stale in folder().glob(f"{export_id}.*.tmp"):  # a lost build's: the claim is ours now
        stale.unlink(missing_ok=True)
    filters = json.loads(export.query or "{}")
    total = selectors.scenario_filter(sweep, filters).count()
    Export.objects.filter(pk=export_id, holder=token).update(rows_total=total)
    temp = folder() / f"{export_id}.{token}.tmp"
    final = folder() / f"{export_id}.{export.fmt}"
    try:
        written = _write(temp, export_id, token, sweep, export.fmt, filters)
        size = temp.stat().st_size
        os.replace(temp, final)
    except _TakenOver:
        temp.unlink(missing_ok=True)
        return False
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    ready = take(
        Export,
        export_id,
        Export.Status.READY,
        sources=[Export.Status.RUNNING],
        where=Q(holder=token),
        rows_written=written,
        rows_total=written,
        size=size,
        path=f"{FOLDER}/{final.name}",
        finished_at=timezone.now(),
        beat_at=timezone.now(),
        holder="",
    )
    if not ready and not Export.objects.filter(pk=export_id).exists():  # deleted meanwhile (with its sweep)
        final.unlink(missing_ok=True)
    return ready


def _write(temp: Path, export_id: int, token: str, sweep: Sweep, fmt: str, filters: Mapping[str, Any]) -> int:
    """Stream the rows into `temp`, storing the progress as it goes; the rows written."""
    count = 0

    def counted() -> Iterator[dict[str, Any]]:
        nonlocal count
        for row in selectors.scenario_export_rows(sweep, filters, EXPORT_PAGE_ROWS):
            count += 1
            yield row

    rows_text = exports.rows_csv if fmt == "csv" else exports.rows_jsonl
    told = 0
    with temp.open("w", encoding="utf-8", newline="") as out:
        for piece in rows_text(counted(), conditions_of(sweep), sweep.depth):
            out.write(piece)
            if count - told >= EXPORT_PROGRESS_ROWS:
                told = count
                if not Export.objects.filter(pk=export_id, holder=token).update(
                    rows_written=count, beat_at=timezone.now()
                ):
                    raise _TakenOver
        out.flush()
        os.fsync(out.fileno())
    return count
