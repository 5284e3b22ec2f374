"""services/questions.py: questions with their truth, answered once, resumed once, a queue sweep
finished as the scripted one."""

from __future__ import annotations

import dataclasses

import pytest
from django.contrib.auth import get_user_model

import agentcore as agentsweep
from sweeps import configs as sweep_configs
from sweeps import tasks
from sweeps.models import Chunk, Question, Scenario, Sweep
from sweeps.services import chunks, questions
from tests.sweeps._web import LOOP_KEYLESS, create, run_stored_chunks, waiting_sweep

pytestmark = pytest.mark.django_db


def test_waiting_scenarios_get_questions_with_the_truth():
    sweep = waiting_sweep()
    assert sweep.status == Sweep.Status.WAITING
    questions = list(Question.objects.filter(sweep=sweep))
    assert questions and all(q.status == Question.Status.OPEN for q in questions)
    assert {q.scenario_id for q in questions} == set(
        Scenario.objects.filter(sweep=sweep, status=Scenario.Status.WAITING).values_list("pk", flat=True)
    )
    for q in questions:
        origins = [e["origin"] for e in q.scenario.effects]  # the tracker's records when it asked
        assert q.truth == ([int(q.qid.split(":")[0]), q.call["id"]] in origins)
        # Kept while it waits, as JSON (a list of events ending with the question, not its text).
        assert q.scenario.timeline[-1]["kind"] == "question" and isinstance(q.scenario.effects, list)


def test_a_question_answered_twice_keeps_the_first_answer(user, enqueued, django_capture_on_commit_callbacks):
    q = Question.objects.filter(sweep=waiting_sweep()).first()
    other = get_user_model().objects.create_user("bob", password="pw-for-tests")
    with django_capture_on_commit_callbacks(execute=True):
        first, changed = questions.question_answer(question_id=q.pk, user=user, happened=True)
        second, changed_again = questions.question_answer(question_id=q.pk, user=other, happened=False)
    assert changed is True and changed_again is False
    assert second.answer is True and second.answered_by == user and second.status == Question.Status.ANSWERED
    assert enqueued == [(tasks.question_resume.name, (q.pk,))]


def test_answer_all_truthfully_answers_each_open_question_with_its_truth(user):
    sweep = waiting_sweep()
    n_open = Question.objects.filter(sweep=sweep, status=Question.Status.OPEN).count()
    assert questions.questions_answer_truthfully(sweep_id=sweep.pk, user=user) == n_open
    answered = Question.objects.filter(sweep=sweep)
    assert all(q.status == Question.Status.ANSWERED and q.answer == q.truth for q in answered)
    assert questions.questions_answer_truthfully(sweep_id=sweep.pk, user=user) == 0


def test_resuming_an_answered_question_stores_the_outcome_once(user):
    q = Question.objects.filter(sweep=waiting_sweep()).first()
    assert questions.question_resume(question_id=q.pk) is False  # not answered yet
    questions.question_answer(question_id=q.pk, user=user, happened=q.truth)
    assert questions.question_resume(question_id=q.pk) is True
    assert questions.question_resume(question_id=q.pk) is False
    q.refresh_from_db()
    scenario = q.scenario
    assert q.status == Question.Status.RESUMED
    assert scenario.status == Scenario.Status.DONE or scenario.questions.filter(status=Question.Status.OPEN).exists()
    assert scenario.timeline[-1]["kind"] != "question" or scenario.status == Scenario.Status.WAITING


def test_truthful_answers_finish_the_sweep_with_nothing_lost_or_doubled(user):
    sweep = waiting_sweep()
    for _ in range(20):  # a resumed scenario may ask again
        if not questions.questions_answer_truthfully(sweep_id=sweep.pk, user=user):
            break
        for pk in Question.objects.filter(sweep=sweep, status=Question.Status.ANSWERED).values_list("pk", flat=True):
            questions.question_resume(question_id=pk)
    sweep.refresh_from_db()
    assert sweep.status == Sweep.Status.DONE
    rows = Scenario.objects.filter(sweep=sweep)
    assert not rows.filter(status=Scenario.Status.WAITING).exists()
    assert sum(r.duplicates + r.missing for r in rows) == 0


def answer_and_resume_all(sweep, user):
    n = questions.questions_answer_truthfully(sweep_id=sweep.pk, user=user)
    for pk in Question.objects.filter(sweep=sweep, status=Question.Status.ANSWERED).values_list("pk", flat=True):
        questions.question_resume(question_id=pk)
    return n


def test_a_resume_makes_the_chunk_of_the_restart_points_it_reached_once(user):
    sweep = create(configs=LOOP_KEYLESS, depth=2, person="queue")
    run_stored_chunks(sweep)
    planned = Chunk.objects.filter(sweep=sweep).count()
    q = Question.objects.filter(sweep=sweep, scenario__second_point=0).order_by("pk").first()
    questions.question_answer(question_id=q.pk, user=user, happened=q.truth)
    assert questions.question_resume(question_id=q.pk) is True
    assert questions.question_resume(question_id=q.pk) is False  # a redelivered resume makes nothing
    later = Chunk.objects.get(sweep=sweep, second_from__gt=0)
    swept = Scenario.objects.filter(
        sweep=sweep, config=0, first_point=q.scenario.first_point, second_point__gt=0
    ).count()
    assert (later.first_point, later.second_from, later.stored) == (q.scenario.first_point, swept + 1, False)
    sweep.refresh_from_db()
    assert sweep.total_chunks == planned + 1 == Chunk.objects.filter(sweep=sweep).count()
    assert sweep.status == Sweep.Status.RUNNING  # not done, nor waiting, while the chunk is not stored
    chunks.chunk_run(chunk_id=later.pk)
    assert list(
        Scenario.objects.filter(sweep=sweep, first_point=later.first_point, second_point__gt=swept).values_list(
            "second_point", flat=True
        )
    ) == list(range(later.second_from, later.second_to + 1))


def test_a_queue_sweep_answered_truthfully_stores_the_scripted_sweep_s_records(user):
    sweep = create(configs=LOOP_KEYLESS, depth=2, person="queue")
    run_stored_chunks(sweep)
    while answer_and_resume_all(sweep, user):
        run_stored_chunks(sweep)
    sweep.refresh_from_db()
    assert sweep.status == Sweep.Status.DONE
    cfg = sweep_configs.agent_config(sweep, 0)
    scripted = agentsweep.sweep([dataclasses.replace(cfg, person="scripted")], depth=2)
    fields = (
        "first_point",
        "second_point",
        "duplicates",
        "missing",
        "asks",
        "approvals",
        "model_calls",
        "calls_plus",
        "status",
    )
    assert list(Scenario.objects.filter(sweep=sweep).order_by("first_point", "second_point").values_list(*fields)) == [
        (
            r.first_point,
            r.second_point or 0,
            r.duplicates,
            r.missing,
            r.asks,
            r.approvals,
            r.model_calls,
            r.calls_plus,
            r.status,
        )
        for r in scripted.records[0]
    ]
    assert sweep.table == [r.to_dict() for r in scripted.rows]
