"""services/recovery.py: a resume queues only the chunks not stored."""

from __future__ import annotations

import pytest

from sweeps.models import Sweep
from sweeps.services import chunks, recovery
from tests.sweeps._web import chunk_ids, create
from tests.sweeps._web import sent_chunk_ids as sent_chunks

pytestmark = pytest.mark.django_db


def test_resume_enqueues_only_the_missing_chunks(enqueued, django_capture_on_commit_callbacks):
    sweep = create()
    ids = chunk_ids(sweep)
    for pk in ids[::2]:
        chunks.chunk_run(chunk_id=pk)
    with django_capture_on_commit_callbacks(execute=True):
        n = recovery.sweep_resume(sweep_id=sweep.pk)
    assert n == len(ids[1::2])
    assert sorted(sent_chunks(enqueued)) == ids[1::2]


def test_resume_of_a_failed_sweep_runs_again(enqueued, django_capture_on_commit_callbacks):
    sweep = create()
    chunks.chunk_failed(chunk_id=chunk_ids(sweep)[0], error="boom")
    assert Sweep.objects.get(pk=sweep.pk).status == Sweep.Status.FAILED
    with django_capture_on_commit_callbacks(execute=True):
        recovery.sweep_resume(sweep_id=sweep.pk)
    sweep.refresh_from_db()
    assert sweep.status == Sweep.Status.RUNNING and sweep.error == ""
