"""Tasks run by real Celery worker processes (never eager) on the session's broker and test database."""

from __future__ import annotations

import dataclasses
import re
import time
from datetime import datetime

import pytest
import redis
from django.db import connection

import agentcore as agentsweep
from agentcore import designs, jobs, report
from sweeps import configs as sweep_configs
from sweeps import schema, selectors, tasks
from sweeps.models import Chunk, Question, Scenario, Sweep
from sweeps.services import chunks, launch, questions
from sweeps.workqueue import publish
from sweeps.workqueue import workers as sweepworkers
from sweepsite.celery import app
from tests.sweeps._faults import Workers

pytestmark = pytest.mark.django_db(transaction=True)

MARKERS = [{"name": "markers, keyed", "design": "markers", "tracker": "keyed"}]


@pytest.fixture(scope="module")
def agentcore_table():
    """The chapter's table as agentcore computes it in process: the reference."""
    return [r.to_dict() for r in agentsweep.sweep(agentsweep.table_configs(jobs.load("triage")), workers=2).rows]


def status_is(sweep, *wanted):
    return lambda: Sweep.objects.filter(pk=sweep.pk, status__in=wanted).exists()


def sweep_table_through_workers(wait_until):
    sweep = launch.sweep_create(
        user=None,
        job_source=sweep_configs.builtin_job_source("triage"),
        configs=sweep_configs.table_configs_for(),
        depth=2,
    )
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
    sweep = launch.sweep_create(
        user=None, job_source=sweep_configs.builtin_job_source("triage"), configs=MARKERS, depth=1, person="queue"
    )
    wait_until(status_is(sweep, Sweep.Status.WAITING), what="the chunks to be stored")
    question = Question.objects.filter(sweep=sweep, status=Question.Status.OPEN).first()
    scenario = question.scenario
    for _ in range(10):  # a resumed scenario may stop at another question: answer it too
        questions.question_answer(question_id=question.pk, user=None, happened=question.truth)
        wait_until(
            lambda q=question: Question.objects.get(pk=q.pk).status == Question.Status.RESUMED,
            what="the worker to resume the scenario",
        )
        scenario.refresh_from_db()
        if scenario.status != Scenario.Status.WAITING:
            break
        question = scenario.questions.get(status=Question.Status.OPEN)
    assert scenario.status == Scenario.Status.DONE
    assert scenario.duplicates == 0 and scenario.missing == 0
    assert any(e["kind"] == "question" for e in scenario.timeline)


def test_answering_every_question_truthfully_finishes_the_sweep_on_workers(celery_workers, wait_until):
    sweep = launch.sweep_create(
        user=None, job_source=sweep_configs.builtin_job_source("triage"), configs=MARKERS, depth=1, person="queue"
    )
    wait_until(status_is(sweep, Sweep.Status.WAITING), what="the chunks to be stored")

    def answered_all():
        questions.questions_answer_truthfully(sweep_id=sweep.pk, user=None)
        return Sweep.objects.get(pk=sweep.pk).status == Sweep.Status.DONE

    wait_until(answered_all, interval=0.2, what="the sweep to be done")
    rows = Scenario.objects.filter(sweep=sweep)
    assert rows.count() == sweep.total_chunks and not rows.filter(status=Scenario.Status.WAITING).exists()
    assert sum(r.duplicates + r.missing for r in rows) == 0


def test_a_chunk_task_that_gives_up_fails_its_sweep_naming_the_chunk(monkeypatch):
    monkeypatch.setattr(publish, "enqueue", lambda *a, **kw: None)  # no worker may store these chunks
    sweep = launch.sweep_create(
        user=None, job_source=sweep_configs.builtin_job_source("triage"), configs=MARKERS, depth=1
    )
    first, second = Chunk.objects.filter(sweep=sweep).order_by("pk").values_list("pk", flat=True)[:2]
    chunks.chunk_run(chunk_id=first)
    tasks.chunks_run.on_failure(RuntimeError("boom"), "task-id", ([first, second],), {}, None)
    sweep.refresh_from_db()
    assert sweep.status == Sweep.Status.FAILED
    assert f"chunk {second} " in sweep.error and "RuntimeError: boom" in sweep.error


def test_a_queue_sweep_of_the_table_answered_truthfully_on_workers_gives_the_scripted_table(
    celery_workers, wait_until, agentcore_table
):
    sweep = launch.sweep_create(
        user=None,
        job_source=sweep_configs.builtin_job_source("triage"),
        configs=sweep_configs.table_configs_for(),
        depth=2,
        person="queue",
    )

    def settled():
        """Every chunk stored and every answer resumed: only open questions may be left."""
        status = Sweep.objects.values_list("status", flat=True).get(pk=sweep.pk)
        assert status != Sweep.Status.FAILED, Sweep.objects.get(pk=sweep.pk).error
        return not (
            Chunk.objects.filter(sweep=sweep, stored=False).exists()
            or Question.objects.filter(sweep=sweep, status=Question.Status.ANSWERED).exists()
        )

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


# --- a big sweep on four workers -----------------------------------------------------------------

FOUR = 4
PAIRS = 8  # agentcore.jobs.turn_pairs: 212 first points, 23,564 scenarios at depth 2
LOOP_KEYED = [{"name": "real loop, keyed tracker", "design": "loop", "tracker": "keyed"}]
_SUCCEEDED = re.compile(r"^\[([0-9-]+ [0-9:,]+): .*Task (\S+)\[([0-9a-f-]+)\] succeeded in ([0-9.e-]+)s", re.M)


@pytest.fixture
def four_workers(transactional_db, tmp_path, monkeypatch):
    """Four solo-pool workers (as `make run` starts them) on a queue of the test's own on the shared
    Redis (the session's workers never take its messages); the launch publishes there, noting each
    message's chunks by task ID. Yields (workers, {task id: chunk IDs})."""
    queue = f"{sweepworkers.queue_name()}-four"
    env = {**sweepworkers.worker_environ(), "SWEEPSITE_QUEUE": queue, "SWEEPSITE_STALL_SECONDS": "0"}
    sent: dict[str, list[int]] = {}

    def send(name, args, producer, priority=publish.NORMAL):
        chunk_ids = list(args[0]) if name == tasks.chunks_run.name else [args[0]]
        sent[app.send_task(name, args, producer=producer, queue=queue, priority=priority).id] = chunk_ids

    workers = Workers(tmp_path, env, pool="solo", concurrency=1, queue=queue)
    try:
        workers.start(FOUR)
        monkeypatch.setattr(publish, "send", send)
        yield workers, sent
    finally:
        workers.stop()
        client = redis.Redis.from_url(str(app.conf.broker_url))
        for key in client.scan_iter(match=f"*{queue}*"):
            client.delete(key)
        client.close()


def worker_shares(workers, sent, launched):
    """Per worker (its log): the messages, chunks and scenarios it stored, its busy seconds, and
    when its last task ended (seconds after `launched`, a datetime)."""
    scenarios = dict(
        Chunk.objects.filter(pk__in=[c for ids in sent.values() for c in ids]).values_list("pk", "scenarios")
    )
    shares = []
    for log in workers.logs:
        done = _SUCCEEDED.findall(log.read_text())
        ids = [c for _, _, task_id, _ in done for c in sent[task_id]]
        last = max((datetime.strptime(at, "%Y-%m-%d %H:%M:%S,%f") for at, *_ in done), default=launched)
        shares.append(
            {
                "messages": len(done),
                "chunks": len(ids),
                "scenarios": sum(scenarios[c] for c in ids),
                "busy": sum(float(s) for *_, s in done),
                "last": (last - launched).total_seconds(),
            }
        )
    return shares


@pytest.mark.services
@pytest.mark.slow
def test_a_big_sweep_on_four_workers_stores_agentcore_s_rows_in_like_shares(four_workers, wait_until):
    workers, sent = four_workers
    assert connection.vendor == "postgresql" and str(app.conf.broker_url).startswith("redis")
    job = jobs.turn_pairs(PAIRS)
    launched, started = datetime.now(), time.monotonic()
    sweep = launch.sweep_create(user=None, job_source=jobs.turn_pairs_source(PAIRS), configs=LOOP_KEYED, depth=2)
    wait_until(status_is(sweep, Sweep.Status.DONE, Sweep.Status.FAILED), timeout=240, what="the sweep to finish")
    took = time.monotonic() - started
    sweep.refresh_from_db()
    assert sweep.status == Sweep.Status.DONE, sweep.error

    expected = agentsweep.sweep([agentsweep.Config(job, designs.get("loop"), "keyed")], depth=2).records[0]
    stored = Scenario.objects.filter(sweep=sweep).order_by("first_point", "second_point").values(*schema.RECORD_FIELDS)
    assert [schema.row_fields(r) for r in stored] == [
        {f: getattr(r, f) for f in schema.RECORD_FIELDS} for r in expected
    ]

    shares = worker_shares(workers, sent, launched)
    print(
        f"\n{len(expected):,} scenarios in {sweep.total_chunks} chunks, {len(sent)} messages, {took:.1f} s "
        f"on {FOUR} workers:"
    )
    for i, s in enumerate(shares, 1):
        print(
            f"  worker {i}: {s['messages']} messages, {s['chunks']} chunks, {s['scenarios']:,} scenarios "
            f"({s['scenarios'] / len(expected):.0%}), busy {s['busy']:.2f} s, last one done at {s['last']:.2f} s"
        )
    assert sum(s["messages"] for s in shares) == len(sent)  # each message ran once, on one of the four
    assert sum(s["scenarios"] for s in shares) == len(expected)
    # How evenly the split deals the work is test_services' (worker finish spreads, computed); real
    # workers on a loaded machine differ in speed, so here: every one of the four took a real part and
    # none worked on long after the others. A worker's lease keeper and its own store once waited for
    # each other (a PostgreSQL deadlock, broken after deadlock_timeout), which skewed the shares.
    assert all(s["scenarios"] >= len(expected) / (3 * FOUR) for s in shares), shares
    last = [s["last"] for s in shares]
    assert max(last) - min(last) < 1.0, shares
    assert not [log.name for log in workers.logs if "deadlock" in log.read_text()]


ONCE_PER_TURN = [
    {"name": "save once per turn", "design": "once-per-turn", "tracker": "keyed"},
    {"name": "markers, keyless", "design": "markers", "tracker": "keyless"},
]


def depth3_through_workers(wait_until):
    """A depth-3 sweep of two configurations by the workers, and agentcore's sweep of them in process."""
    sweep = launch.sweep_create(
        user=None, job_source=sweep_configs.builtin_job_source("triage"), configs=ONCE_PER_TURN, depth=3
    )
    wait_until(status_is(sweep, Sweep.Status.DONE, Sweep.Status.FAILED), timeout=300, what="the sweep to finish")
    sweep.refresh_from_db()
    assert sweep.status == Sweep.Status.DONE, sweep.error
    cfgs = [
        agentsweep.Config(jobs.load("triage"), designs.get(c["design"]), c["tracker"], name=c["name"])
        for c in ONCE_PER_TURN
    ]
    return sweep, agentsweep.sweep(cfgs, depth=3, workers=2)


def test_a_depth_3_sweep_by_real_workers_stores_agentcore_s_records_and_table(celery_workers, wait_until):
    sweep, result = depth3_through_workers(wait_until)
    stored = [
        schema.row_record(schema.instance_values(s)).to_dict()
        for s in Scenario.objects.filter(sweep=sweep).order_by(*schema.SCENARIO_ORDER)
    ]
    assert stored == [
        dataclasses.replace(r, timeline=None, effects=None).to_dict() for recs in result.records for r in recs
    ]
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


def test_another_owners_small_sweep_is_not_starved_by_a_big_one(celery_workers, django_user_model, wait_until):
    # The big sweep's messages are all queued first; the small one's go ahead of its tail
    # (publish.priority_for), so it is done while most of the big one is still to come.
    big_owner = django_user_model.objects.create_user("big-owner", password="pw-big-123456")
    small_owner = django_user_model.objects.create_user("small-owner", password="pw-small-123456")
    table = sweep_configs.table_configs_for()
    job = sweep_configs.builtin_job_source("triage")
    keyless = [{"name": f"{c['name']}, keyless", "design": c["design"], "tracker": "keyless"} for c in table[:5]]
    big = launch.sweep_create(user=big_owner, job_source=job, configs=table + keyless, depth=2)
    small = launch.sweep_create(user=small_owner, job_source=job, configs=MARKERS, depth=2)
    wait_until(status_is(small, Sweep.Status.DONE), what="the small sweep done")
    left = Chunk.objects.filter(sweep=big, stored=False).count()
    wait_until(status_is(big, Sweep.Status.DONE), what="the big sweep done")
    assert left > big.total_chunks / 2, (left, big.total_chunks)
