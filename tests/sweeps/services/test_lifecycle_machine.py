"""A sweep's life as a Hypothesis state machine: launch, run a chunk, lose a worker, cancel, resume,
answer a person's question and run its resume, delete, in any order, on the real services.

Rules:
- Each rule calls the service a view, a task or the watchdog calls, in-process (no Celery, no
  eager mode): what is published is recorded instead of sent, and redelivery is a rule like any
  other (a chunk run again, a deleted sweep's chunk run, a question resumed twice).
- The invariants, checked after every step: every status change of a sweep, a scenario and a
  question is an edge of its model's EDGES table (sweeps.models), read from the rows, not from
  `take`; a sweep's rows agree (its chunks as planned, its scenarios those of its stored chunks,
  each stored once; done means every chunk stored and every question resumed); no count of a
  sweep's rows goes down but by its delete, and a deleted sweep leaves no row behind.
- Each example runs in a savepoint rolled back at its end (as tests/sweeps/test_fuzz.py's), so
  examples do not see each other's rows.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Count, F, Sum
from django.utils import timezone
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test

from sweeps import models
from sweeps.models import Chunk, Question, Scenario, Sweep
from sweeps.services import chunks, launch, lifecycle, questions, recovery
from sweeps.workqueue import publish, watchdog
from tests.sweeps._web import MARKERS, create, record_enqueued

pytestmark = [pytest.mark.fuzz, pytest.mark.django_db]

MAX_SWEEPS = 3
LOST_HOLDER = "lost-worker"  # a worker that took a chunk's message and died: no Lease row says it lives
STATUSES = (Sweep, Scenario, Question)
POINT = ("sweep_id", "config", "first_point", "second_point", "third_point")
PICK = st.integers(min_value=0, max_value=1_000)
# The modules that write a status (each imports take): their takes are watched.
WRITERS = (launch, publish, lifecycle, chunks, questions, recovery)
# (model, pk) -> the edges its status took since the last look, as `take` took them.
Taken = dict[tuple[str, int], list[tuple[str, str]]]


def watch_takes(monkeypatch: pytest.MonkeyPatch) -> Taken:
    """Every status edge the services take, read around each call of `take` (its own table check
    aside: a status written any other way is a change no taken edge explains)."""
    taken: Taken = {}

    def spy(model: Any, pk: Any, to: str, **kw: Any) -> bool:
        rows = model.objects.filter(pk__in=pk if isinstance(pk, list) else [pk])
        before = dict(rows.values_list("pk", "status"))
        moved = models.take(model, pk, to, **kw)
        for row, status in rows.values_list("pk", "status") if moved else ():
            if status == to != before.get(row):
                taken.setdefault((model.__name__, row), []).append((before[row], to))
        return moved

    for module in WRITERS:
        monkeypatch.setattr(module, "take", spy)
    return taken


class SweepLife(RuleBasedStateMachine):
    user: Any = None  # the person who answers, made once by the test (outside the examples' savepoints)
    taken: Taken = {}  # watch_takes's record, set by the test

    def __init__(self) -> None:
        super().__init__()
        self.atomic = transaction.atomic()
        self.atomic.__enter__()
        self.live: list[int] = []  # sweeps not deleted, in launch order
        self.deleted: list[int] = []
        self.chunk_ids: list[int] = []  # every chunk ever planned, the deleted sweeps' too
        self.status: dict[tuple[str, int], str] = {}  # (model, pk) -> the status last seen
        self.counts: dict[int, tuple[int, int, int]] = {}  # sweep -> (stored chunks, scenarios, questions)

    def teardown(self) -> None:
        transaction.set_rollback(True)
        self.atomic.__exit__(None, None, None)

    def _pick(self, items: list[int], i: int) -> int:
        return items[i % len(items)]

    # --- rules ------------------------------------------------------------------------------------

    @precondition(lambda self: len(self.live) < MAX_SWEEPS)
    @rule(queue=st.booleans())
    def launch(self, queue: bool) -> None:
        sweep = create(configs=MARKERS, person="queue") if queue else create()
        self.live.append(sweep.pk)
        self.chunk_ids += list(Chunk.objects.filter(sweep=sweep).order_by("pk").values_list("pk", flat=True))

    @precondition(lambda self: self.chunk_ids)
    @rule(i=PICK, times=st.integers(min_value=1, max_value=8))
    def run_chunks(self, i: int, times: int) -> None:
        """A worker's task runs chunks: the next unstored ones of a sweep from the picked one on (a
        stored one, a cancelled or deleted sweep's, is a redelivery: it stores nothing)."""
        first = i % len(self.chunk_ids)
        for pk in self.chunk_ids[first : first + times]:
            chunks.chunk_run(chunk_id=pk)

    @precondition(lambda self: self.live)
    @rule(i=PICK)
    def run_sweep(self, i: int) -> None:
        """Every chunk of a sweep run to completion, as its workers would."""
        for pk in Chunk.objects.filter(sweep_id=self._pick(self.live, i), stored=False).values_list("pk", flat=True):
            chunks.chunk_run(chunk_id=pk)

    @precondition(lambda self: self.live)
    @rule(i=PICK)
    def worker_lost(self, i: int) -> None:
        """A worker took an unstored chunk (an attempt counted, its lease taken) and died; its lease
        lapses and the watchdog's lease rule queues the chunk again, its lease ended."""
        pk = (
            Chunk.objects.filter(sweep_id=self._pick(self.live, i), stored=False)
            .exclude(sweep__status=Sweep.Status.CANCELLED)
            .values_list("pk", flat=True)
            .first()
        )
        if pk is None:
            return
        Chunk.objects.filter(pk=pk).update(
            attempts=F("attempts") + 1, holder=LOST_HOLDER, lease_until=timezone.now() - timedelta(minutes=1)
        )
        watchdog.chunks_requeue_lapsed()
        chunk = Chunk.objects.select_related("sweep").get(pk=pk)
        if chunk.sweep.status == Sweep.Status.RUNNING:
            assert chunk.lease_until is None and chunk.holder == "", chunk

    @precondition(lambda self: self.live)
    @rule(i=PICK)
    def cancel(self, i: int) -> None:
        pk = self._pick(self.live, i)
        before = Sweep.objects.get(pk=pk).status
        cancelled = lifecycle.sweep_cancel(sweep_id=pk)
        after = Sweep.objects.get(pk=pk).status
        assert cancelled == (before in (Sweep.Status.RUNNING, Sweep.Status.WAITING)), (before, cancelled)
        assert after == (Sweep.Status.CANCELLED if cancelled else before), (before, after)

    @precondition(lambda self: self.live)
    @rule(i=PICK)
    def resume(self, i: int) -> None:
        pk = self._pick(self.live, i)
        before = Sweep.objects.get(pk=pk).status
        recovery.sweep_resume(sweep_id=pk)
        after = Sweep.objects.get(pk=pk).status
        if before == Sweep.Status.CANCELLED:
            assert after != Sweep.Status.CANCELLED, after
        unstored = Chunk.objects.filter(sweep_id=pk, stored=False)
        assert not unstored.exclude(attempts=0).exists() and not unstored.exclude(lease_until=None).exists()

    @precondition(lambda self: self.live)
    @rule(i=PICK, happened=st.booleans())
    def answer(self, i: int, happened: bool) -> None:
        """A person answers an open question of a sweep (a queue person's), right or wrong."""
        q = Question.objects.filter(sweep_id__in=self.live, status=Question.Status.OPEN).order_by("pk")
        ids = list(q.values_list("pk", flat=True))
        if ids:
            _, won = questions.question_answer(question_id=self._pick(ids, i), user=self.user, happened=happened)
            assert won

    @precondition(lambda self: self.live)
    @rule(i=PICK)
    def resume_question(self, i: int) -> None:
        """An answered question's task runs (or runs again: a redelivery resumes nothing)."""
        ids = list(
            Question.objects.filter(sweep_id__in=self.live)
            .exclude(status=Question.Status.OPEN)
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        if ids:
            questions.question_resume(question_id=self._pick(ids, i))

    @precondition(lambda self: self.live)
    @rule(i=PICK)
    def delete(self, i: int) -> None:
        pk = self._pick(self.live, i)
        held = {
            "sweeps": 1,
            "chunks": Chunk.objects.filter(sweep_id=pk).count(),
            "scenarios": Scenario.objects.filter(sweep_id=pk).count(),
            "questions": Question.objects.filter(sweep_id=pk).count(),
        }
        assert lifecycle.sweep_delete(sweep_id=pk) == held
        assert lifecycle.sweep_delete(sweep_id=pk) == dict.fromkeys(held, 0)  # a second click removes nothing
        self.live.remove(pk)
        self.deleted.append(pk)
        self.counts.pop(pk, None)

    # --- invariants -------------------------------------------------------------------------------

    @invariant()
    def statuses_follow_their_edges(self) -> None:
        """Each row's change since the last look is a chain of edges of its model's table, from the
        status seen then to the status now, each taken by `take`."""
        for model in STATUSES:
            rows = model.objects.all() if model is Sweep else model.objects.filter(sweep_id__in=self.live)
            for pk, status in rows.values_list("pk", "status"):
                key = (model.__name__, pk)
                seen, chain = self.status.get(key), self.taken.pop(key, [])
                self.status[key] = status
                if seen is None or (seen == status and not chain):
                    continue
                assert chain, f"{model.__name__} {pk}: {seen} -> {status} written without an edge taken"
                steps = [seen] + [to for _, to in chain]
                assert [b for b, _ in chain] == steps[:-1] and steps[-1] == status, (key, seen, chain, status)
                for a, b in chain:
                    assert b in model.EDGES[a], f"{model.__name__} {pk}: {a} -> {b} is no edge"
        self.taken.clear()

    @invariant()
    def a_sweep_s_rows_agree(self) -> None:
        for sweep in Sweep.objects.filter(pk__in=self.live):
            planned = Chunk.objects.filter(sweep=sweep)
            stored = planned.filter(stored=True)
            rows = Scenario.objects.filter(sweep=sweep)
            assert sweep.total_chunks == planned.count()
            assert rows.count() == (stored.aggregate(n=Sum("scenarios"))["n"] or 0)
            assert not rows.values(*POINT).annotate(n=Count("pk")).filter(n__gt=1).exists(), "a scenario stored twice"
            if sweep.status == Sweep.Status.DONE:
                assert not planned.filter(stored=False).exists()
                assert not Question.objects.filter(sweep=sweep).exclude(status=Question.Status.RESUMED).exists()
                assert not rows.filter(status=Scenario.Status.WAITING).exists()
                assert sweep.finished_at is not None and sweep.table is not None

    @invariant()
    def counts_go_down_only_by_delete(self) -> None:
        for pk in self.live:
            now = (
                Chunk.objects.filter(sweep_id=pk, stored=True).count(),
                Scenario.objects.filter(sweep_id=pk).count(),
                Question.objects.filter(sweep_id=pk).count(),
            )
            before = self.counts.get(pk, (0, 0, 0))
            assert all(n >= b for n, b in zip(now, before, strict=True)), (pk, before, now)
            self.counts[pk] = now

    @invariant()
    def a_deleted_sweep_leaves_no_rows(self) -> None:
        gone = self.deleted
        assert not Sweep.objects.filter(pk__in=gone).exists()
        for model in (Chunk, Scenario, Question):
            assert not model.objects.filter(sweep_id__in=gone).exists(), model.__name__


def test_a_sweep_s_life_keeps_its_edges_and_its_rows(monkeypatch):
    record_enqueued(monkeypatch)
    SweepLife.taken = watch_takes(monkeypatch)
    SweepLife.user = get_user_model().objects.create_user("ann", password="pw-for-tests")
    run_state_machine_as_test(
        SweepLife,
        settings=settings(
            max_examples=25,
            stateful_step_count=12,
            deadline=None,
            database=None,
            print_blob=True,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        ),
    )
