"""Celery tasks: thin, one service call each, taking IDs only, each named as the service it calls
(the names are sweeps.workqueue.publish's, which publishes them).

Rules:
- acks_late + reject_on_worker_lost: a message is acknowledged after its task ran, and a task
  whose pool process died goes back to the queue. The services are idempotent, so a redelivery
  stores nothing twice.
- Database trouble (a locked SQLite file, a dropped connection) is retried a bounded number of
  times with backoff; a chunk that still fails (or keeps killing its process, counted in
  Chunk.attempts by the service) fails its sweep with a message, and the sweep can be resumed.
- A message lost with its worker (SIGKILL) or its broker (restarted empty) is not redelivered by
  these settings alone: the watchdog's leader (sweeps/workqueue/keeper.py, watchdog.py) queues
  again the chunks whose lease ran out with their worker, and the missing chunks of a sweep whose
  messages the broker lost.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from celery import Task, shared_task
from django.db import InterfaceError, OperationalError

from sweeps.services import audits, chunks, export_files, questions
from sweeps.workqueue import publish

log = logging.getLogger(__name__)

RETRY = {
    "autoretry_for": (OperationalError, InterfaceError),
    "max_retries": 3,
    "retry_backoff": 1,
    "retry_backoff_max": 20,
    "retry_jitter": True,
}
DELIVERY = {"acks_late": True, "reject_on_worker_lost": True, "ignore_result": True}


class ChunkTask(Task):
    def on_failure(self, exc: BaseException, task_id: str, args: Any, kwargs: Any, einfo: Any) -> None:
        # chunk_run(chunk_id) or chunks_run(chunk_ids): chunks run in order, so the first one not
        # stored is the one that failed (chunk_failed ignores stored chunks).
        ids = publish.chunk_ids_of(self.name, args or (), kwargs or {})
        try:
            chunks.chunks_failed(chunk_ids=ids, error=f"{type(exc).__name__}: {exc}")
        except Exception:  # noqa: BLE001 - the database itself may be what failed; the sweep stays resumable
            log.exception("chunks %s: cannot record the failure", ids)


@shared_task(name=publish.CHUNK_RUN, base=ChunkTask, **DELIVERY, **RETRY)
def chunk_run(chunk_id: int) -> bool:
    """Run and store one chunk of a sweep (no-op if it is stored already)."""
    return chunks.chunk_run(chunk_id=chunk_id)


@shared_task(name=publish.CHUNKS_RUN, base=ChunkTask, **DELIVERY, **RETRY)
def chunks_run(chunk_ids: list[int]) -> int:
    """Run and store a few chunks, each in its own transaction (stored ones are skipped)."""
    return chunks.chunks_run(chunk_ids=chunk_ids)


@shared_task(name=publish.QUESTION_RESUME, **DELIVERY, **RETRY)
def question_resume(question_id: int) -> bool:
    """Resume the scenario of an answered question (no-op unless it is answered and not resumed)."""
    return questions.question_resume(question_id=question_id)


def _failing_records(key: str, failed: Callable[..., Any], what: str) -> type[Task]:
    """A task base for tasks of one ID (`key`): a failure past its retries is recorded by `failed`
    (the audit or the export says it and can be asked for again)."""

    class RecordsFailure(Task):
        def on_failure(self, exc: BaseException, task_id: str, args: Any, kwargs: Any, einfo: Any) -> None:
            pk = kwargs.get(key, args[0] if args else None)
            try:
                failed(**{key: pk}, error=f"{type(exc).__name__}: {exc}")
            except Exception:  # noqa: BLE001 - the database itself may be what failed; it stays resumable
                log.exception("%s %s: cannot record the failure", what, pk)

    return RecordsFailure


AuditUnitTask = _failing_records("unit_id", audits.audit_unit_failed, "audit unit")
ExportTask = _failing_records("export_id", export_files.export_failed, "export")


@shared_task(name=publish.AUDIT_UNIT_RUN, base=AuditUnitTask, **DELIVERY, **RETRY)
def audit_unit_run(unit_id: int) -> bool:
    """Sweep and store one unit of an audit (no-op if it is stored already)."""
    return audits.audit_unit_run(unit_id=unit_id)


@shared_task(name=publish.EXPORT_BUILD, base=ExportTask, **DELIVERY, **RETRY)
def export_build(export_id: int) -> bool:
    """Write one export's file (no-op if it is ready, or another build holds it and makes progress)."""
    return export_files.export_build(export_id=export_id)
