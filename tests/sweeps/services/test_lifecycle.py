"""services/lifecycle.py: a sweep's end derived from its stored rows."""

from __future__ import annotations

import pytest

from sweeps import selectors
from sweeps.models import Chunk, Sweep
from sweeps.services import chunks, lifecycle
from tests.sweeps._web import chunk_ids, create, run_all

pytestmark = pytest.mark.django_db


def test_finalize_derives_done_from_the_stored_rows():
    sweep = create()
    ids = chunk_ids(sweep)
    for pk in ids[:-1]:
        chunks.chunk_run(chunk_id=pk)
    assert lifecycle.sweep_finalize(sweep_id=sweep.pk).status == Sweep.Status.RUNNING
    chunks.chunk_run(chunk_id=ids[-1])  # the last chunk finalizes
    sweep.refresh_from_db()
    assert sweep.status == Sweep.Status.DONE and sweep.finished_at is not None
    assert sweep.table == [r.to_dict() for r in selectors.sweep_table(sweep)]
    again = lifecycle.sweep_finalize(sweep_id=sweep.pk)
    assert again.status == Sweep.Status.DONE and again.finished_at == sweep.finished_at


def test_finalize_never_regresses_a_done_sweep():
    sweep = run_all(create())
    Chunk.objects.filter(sweep=sweep).update(stored=False)
    assert lifecycle.sweep_finalize(sweep_id=sweep.pk).status == Sweep.Status.DONE
