"""Tasks run by real Celery worker processes (never eager) on the session's broker and test database."""

from __future__ import annotations

import dataclasses

import pytest
from django.db import connection

from agentcore import designs, jobs, report
from agentcore import sweep as agentsweep
from sweeps import configs as sweep_configs
from sweeps import schema, selectors, tasks
from sweeps.models import Chunk, Question, Scenario, Sweep
from sweeps.services import chunks, launch, questions, taskqueue
from sweepsite.celery import app

pytestmark = pytest.mark.django_db(transaction=True)

MARKERS = [{"name": "markers, keyed", "design": "markers", "tracker": "keyed"}]


@pytest.fixture(scope="module")
def agentcore_table():
    """The chapter's table as agentcore computes it in process: the reference."""
    return [r.to_dict() for r in agentsweep.sweep(agentsweep.table_configs(jobs.load("triage")), workers=2).rows]


def status_is(sweep, *wanted):
    return lambda: Sweep.objects.filter(pk=sweep.pk, status__in=wanted).exists()


def sweep_table_through_workers(wait_until):
    sweep = launch.sweep_create(user=None, job_source=sweep_configs.builtin_job_source("triage"),
                                  configs=sweep_configs.table_configs_for(), depth=2)
    wait_until(status_is(sweep, Sweep.Status.DONE, Sweep.Status.FAILED), timeout=300, what="the sweep to finish")
    sweep.refresh_from_db()
    assert sweep.status == Sweep.Status.DONE, sweep.error
    assert Chunk.objects.filter(sweep=sweep, stored=True).count() == sweep.total_chunks
    return sweep


def test_the_tasks_are_late_acked_and_requeued_when_a_worker_dies():
    for task in (tasks.chunk_run, tasks.chunks_run, tasks.question_resume):
        assert task.acks_late is True and task.reject_on_worker_lost is True
        assert 0 < task.max_retries <= 5


def test_a_table_sweep_by_real_workers_gives_agentcore_s_table(celery_workers, wait_until, agentcore_table):
    sweep = sweep_table_through_workers(wait_until)
    assert [r.to_dict() for r in selectors.sweep_table(sweep)] == agentcore_table
    assert sweep.table == agentcore_table
    assert Scenario.objects.filter(sweep=sweep).count() == sum(r["once"] + r["twice"] for r in agentcore_table)


@pytest.mark.services
def test_a_table_sweep_on_postgresql_and_redis_gives_agentcore_s_table(celery_workers, wait_until, agentcore_table):
    assert connection.vendor == "postgresql" and str(app.conf.broker_url).startswith("redis")
    sweep = sweep_table_through_workers(wait_until)
    assert [r.to_dict() for r in selectors.sweep_table(sweep)] == agentcore_table


def test_an_answered_question_resumes_its_scenario_on_a_worker(celery_workers, wait_until):
    sweep = launch.sweep_create(user=None, job_source=sweep_configs.builtin_job_source("triage"), configs=MARKERS,
                                  depth=1, person="queue")
    wait_until(status_is(sweep, Sweep.Status.WAITING), what="the chunks to be stored")
    question = Question.objects.filter(sweep=sweep, status=Question.Status.OPEN).first()
    scenario = question.scenario
    for _ in range(10):  # a resumed scenario may stop at another question: answer it too
        questions.question_answer(question_id=question.pk, user=None, happened=question.truth)
        wait_until(lambda q=question: Question.objects.get(pk=q.pk).status == Question.Status.RESUMED,
                   what="the worker to resume the scenario")
        scenario.refresh_from_db()
        if scenario.status != Scenario.Status.WAITING:
            break
        question = scenario.questions.get(status=Question.Status.OPEN)
    assert scenario.status == Scenario.Status.DONE
    assert scenario.duplicates == 0 and scenario.missing == 0
    assert any(e["kind"] == "question" for e in scenario.timeline)


def test_answering_every_question_truthfully_finishes_the_sweep_on_workers(celery_workers, wait_until):
    sweep = launch.sweep_create(user=None, job_source=sweep_configs.builtin_job_source("triage"), configs=MARKERS,
                                  depth=1, person="queue")
    wait_until(status_is(sweep, Sweep.Status.WAITING), what="the chunks to be stored")

    def answered_all():
        questions.questions_answer_truthfully(sweep_id=sweep.pk, user=None)
        return Sweep.objects.get(pk=sweep.pk).status == Sweep.Status.DONE

    wait_until(answered_all, interval=0.2, what="the sweep to be done")
    rows = Scenario.objects.filter(sweep=sweep)
    assert rows.count() == sweep.total_chunks and not rows.filter(status=Scenario.Status.WAITING).exists()
    assert sum(r.duplicates + r.missing for r in rows) == 0


def test_a_chunk_task_that_gives_up_fails_its_sweep_naming_the_chunk(monkeypatch):
    monkeypatch.setattr(taskqueue, "enqueue", lambda *a, **kw: None)  # no worker may store these chunks
    sweep = launch.sweep_create(user=None, job_source=sweep_configs.builtin_job_source("triage"), configs=MARKERS,
                                  depth=1)
    first, second = Chunk.objects.filter(sweep=sweep).order_by("pk").values_list("pk", flat=True)[:2]
    chunks.chunk_run(chunk_id=first)
    tasks.chunks_run.on_failure(RuntimeError("boom"), "task-id", ([first, second],), {}, None)
    sweep.refresh_from_db()
    assert sweep.status == Sweep.Status.FAILED
    assert f"chunk {second} " in sweep.error and "RuntimeError: boom" in sweep.error


def test_a_queue_sweep_of_the_table_answered_truthfully_on_workers_gives_the_scripted_table(
        celery_workers, wait_until, agentcore_table):
    sweep = launch.sweep_create(user=None, job_source=sweep_configs.builtin_job_source("triage"),
                                  configs=sweep_configs.table_configs_for(), depth=2, person="queue")

    def settled():
        """Every chunk stored and every answer resumed: only open questions may be left."""
        status = Sweep.objects.values_list("status", flat=True).get(pk=sweep.pk)
        assert status != Sweep.Status.FAILED, Sweep.objects.get(pk=sweep.pk).error
        return not (Chunk.objects.filter(sweep=sweep, stored=False).exists()
                    or Question.objects.filter(sweep=sweep, status=Question.Status.ANSWERED).exists())

    rounds = 0
    while True:  # an answer can lead to more questions, and to more chunks
        wait_until(settled, timeout=300, interval=0.2, what="the workers to store every chunk and resume")
        if not questions.questions_answer_truthfully(sweep_id=sweep.pk, user=None):
            break
        rounds += 1
    wait_until(status_is(sweep, Sweep.Status.DONE), what="the sweep to be done")
    sweep.refresh_from_db()
    assert rounds > 1
    assert Chunk.objects.filter(sweep=sweep, second_from__gt=0).exists()
    assert sweep.total_chunks == Chunk.objects.filter(sweep=sweep, stored=True).count()
    assert [r.to_dict() for r in selectors.sweep_table(sweep)] == agentcore_table
    assert sweep.table == agentcore_table


ONCE_PER_TURN = [{"name": "save once per turn", "design": "once-per-turn", "tracker": "keyed"},
                 {"name": "markers, keyless", "design": "markers", "tracker": "keyless"}]


def depth3_through_workers(wait_until):
    """A depth-3 sweep of two configurations by the workers, and agentcore's sweep of them in process."""
    sweep = launch.sweep_create(user=None, job_source=sweep_configs.builtin_job_source("triage"),
                                configs=ONCE_PER_TURN, depth=3)
    wait_until(status_is(sweep, Sweep.Status.DONE, Sweep.Status.FAILED), timeout=300, what="the sweep to finish")
    sweep.refresh_from_db()
    assert sweep.status == Sweep.Status.DONE, sweep.error
    cfgs = [agentsweep.Config(jobs.load("triage"), designs.get(c["design"]), c["tracker"], name=c["name"])
            for c in ONCE_PER_TURN]
    return sweep, agentsweep.sweep(cfgs, depth=3, workers=2)


def test_a_depth_3_sweep_by_real_workers_stores_agentcore_s_records_and_table(celery_workers, wait_until):
    sweep, result = depth3_through_workers(wait_until)
    stored = [schema.row_record(schema.instance_values(s)).to_dict()
              for s in Scenario.objects.filter(sweep=sweep).order_by(*schema.SCENARIO_ORDER)]
    assert stored == [dataclasses.replace(r, timeline=None, effects=None).to_dict() for recs in result.records
                      for r in recs]
    assert sum(r.third_point is not None for recs in result.records for r in recs) > 2000
    rows = selectors.sweep_table(sweep)
    assert [r.to_dict() for r in rows] == [r.to_dict() for r in result.rows] == sweep.table
    assert report.render(rows, "text") == report.render(result.rows, "text")  # with its thrice column
    assert "thrice" in report.render(rows, "text").splitlines()[0]


@pytest.mark.services
def test_a_depth_3_sweep_on_postgresql_and_redis_stores_agentcore_s_table(celery_workers, wait_until):
    assert connection.vendor == "postgresql" and str(app.conf.broker_url).startswith("redis")
    sweep, result = depth3_through_workers(wait_until)
    assert sweep.table == [r.to_dict() for r in result.rows]
    assert Scenario.objects.filter(sweep=sweep).count() == result.scenarios
