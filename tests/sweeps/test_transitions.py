"""Status transitions as data (sweeps.models EDGES and take): every edge the services take is in its
model's table, an edge not in it raises, and no status is written any other way."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings

from sweeps import configs as sweep_configs
from sweeps import models
from sweeps.models import Chunk, IllegalTransition, Question, Scenario, Sweep, take
from sweeps.services import chunks, launch, lifecycle, questions, recovery
from sweeps.workqueue import publish
from tests.sweeps._web import record_enqueued

pytestmark = pytest.mark.django_db

TRIAGE = sweep_configs.builtin_job_source("triage")
LOOP = [{"name": "loop", "design": "loop", "tracker": "keyed"}]
MARKERS = [{"name": "markers, keyless", "design": "markers", "tracker": "keyless"}]
# The modules that write a status (each imports take).
WRITERS = (publish, lifecycle, chunks, questions, recovery)


@pytest.fixture
def taken(monkeypatch) -> Iterator[set[tuple[str, str, str]]]:
    """Every edge the services take, as (model, from, to), read around each call of take."""
    edges: set[tuple[str, str, str]] = set()

    def spy(model, pk, to, **kw):
        rows = model.objects.filter(pk__in=pk) if isinstance(pk, list) else model.objects.filter(pk=pk)
        before = rows.values_list("status", flat=True).first()
        moved = take(model, pk, to, **kw)
        if moved:
            edges.add((model.__name__, str(before), str(to)))
        return moved

    for module in WRITERS:
        monkeypatch.setattr(module, "take", spy)
    record_enqueued(monkeypatch)
    yield edges


def run_all(sweep: Sweep) -> None:
    for pk in Chunk.objects.filter(sweep=sweep, stored=False).values_list("pk", flat=True):
        chunks.chunk_run(chunk_id=pk)


def test_every_edge_the_services_take_is_in_its_table(taken, monkeypatch, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        done = launch.sweep_create(user=None, job_source=TRIAGE, configs=LOOP, depth=1)
        run_all(done)  # running -> done
        cancelled = launch.sweep_create(user=None, job_source=TRIAGE, configs=LOOP, depth=1)
        lifecycle.sweep_cancel(sweep_id=cancelled.pk)  # running -> cancelled
        recovery.sweep_resume(sweep_id=cancelled.pk)  # cancelled -> running
        failed = launch.sweep_create(user=None, job_source=TRIAGE, configs=LOOP, depth=1)
        chunks.chunk_failed(chunk_id=Chunk.objects.filter(sweep=failed).first().pk, error="boom")  # -> failed
        recovery.sweep_resume(sweep_id=failed.pk)  # failed -> running
        run_all(failed)
        queue = launch.sweep_create(user=None, job_source=TRIAGE, configs=MARKERS, depth=2, person="queue")
        for _ in range(20):  # answers resume scenarios, which may ask again or add later chunks
            run_all(queue)
            questions.questions_answer_truthfully(sweep_id=queue.pk, user=None)  # open -> answered
            for qid in Question.objects.filter(sweep=queue, status="answered").values_list("pk", flat=True):
                questions.question_resume(question_id=qid)  # answered -> resumed; scenario waiting -> ...
            queue.refresh_from_db()
            if queue.status == Sweep.Status.DONE:
                break

    def down(*args, **kw):
        raise ConnectionRefusedError("connection refused")

    monkeypatch.setattr(publish, "send", down)
    with pytest.raises(ConnectionRefusedError), django_capture_on_commit_callbacks(execute=True):
        launch.sweep_create(user=None, job_source=TRIAGE, configs=LOOP, depth=1)  # running -> failed

    assert queue.status == Sweep.Status.DONE
    tables = {"Sweep": Sweep.EDGES, "Question": Question.EDGES, "Scenario": Scenario.EDGES}
    assert taken and all(to in tables[model][before] for model, before, to in taken), taken
    # The flows above take these edges (at least).
    assert {
        ("Sweep", "running", "done"),
        ("Sweep", "running", "cancelled"),
        ("Sweep", "cancelled", "running"),
        ("Sweep", "running", "failed"),
        ("Sweep", "failed", "running"),
        ("Sweep", "running", "waiting"),
        ("Sweep", "waiting", "done"),
        ("Question", "open", "answered"),
        ("Question", "answered", "resumed"),
        ("Scenario", "waiting", "done"),
    } <= taken


@pytest.mark.parametrize("model", [Sweep, Question, Scenario])
def test_each_table_names_every_status_and_only_statuses(model):
    assert set(model.EDGES) == set(model.Status.values)
    assert all(set(targets) <= set(model.Status.values) for targets in model.EDGES.values())


def test_an_illegal_sweep_edge_raises_and_a_taken_edge_is_taken_once():
    sweep = launch.sweep_create(user=None, job_source=TRIAGE, configs=LOOP, depth=1)
    with pytest.raises(IllegalTransition):
        take(Sweep, sweep.pk, Sweep.Status.RUNNING, sources=[Sweep.Status.DONE])  # done is final
    assert take(Sweep, sweep.pk, Sweep.Status.CANCELLED) is True
    assert take(Sweep, sweep.pk, Sweep.Status.CANCELLED, sources=[Sweep.Status.RUNNING]) is False
    assert Sweep.objects.get(pk=sweep.pk).status == Sweep.Status.CANCELLED


def test_an_illegal_question_or_scenario_edge_raises():
    with pytest.raises(IllegalTransition):
        take(Question, 1, Question.Status.OPEN)  # nothing goes back to open
    with pytest.raises(IllegalTransition):
        take(Question, 1, Question.Status.RESUMED, sources=[Question.Status.OPEN])  # not before an answer
    with pytest.raises(IllegalTransition):
        take(Scenario, 1, Scenario.Status.WAITING, sources=[Scenario.Status.DONE])


def test_no_status_is_written_but_through_take():
    """No `.update(... status=...)`, `.status = ` save or raw `SET status` outside sweeps/models/."""
    pattern = re.compile(r"update\([^)]*\bstatus\s*=|\.status\s*=[^=]|SET\s+status", re.S)
    offenders = [
        str(p)
        for p in Path(settings.BASE_DIR, "sweeps").rglob("*.py")
        if "migrations" not in p.parts and "models" not in p.parts and pattern.search(p.read_text())
    ]
    assert offenders == []
    assert "take" in vars(models)


def test_a_resume_whose_restart_finds_a_corrupt_checkpoint_stores_the_scenario_corrupt(monkeypatch):
    """agentcore's "corrupt" (the restart could not read its checkpoint) is a status a resume may store."""
    from dataclasses import replace

    from tests.sweeps._web import waiting_sweep

    record_enqueued(monkeypatch)
    sweep = waiting_sweep()
    q = Question.objects.filter(sweep=sweep, status=Question.Status.OPEN).first()
    take(Question, q.pk, Question.Status.ANSWERED, answer=True)
    real = questions._resumed

    def corrupt(question):
        resumed = real(question)
        return replace(resumed, record=replace(resumed.record, status="corrupt"))

    monkeypatch.setattr(questions, "_resumed", corrupt)
    assert questions.question_resume(question_id=q.pk) is True
    assert Scenario.objects.get(pk=q.scenario_id).status == Scenario.Status.CORRUPT


def test_a_corrupt_scenario_is_final():
    with pytest.raises(IllegalTransition):
        take(Scenario, 1, Scenario.Status.WAITING, sources=[Scenario.Status.CORRUPT])
