"""Services, called directly (no worker): validation, idempotency, done from the rows, questions."""

from __future__ import annotations

import dataclasses

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError

import agentcore as agentsweep
from agentcore import CheckpointError, designs, jobs
from sweeps import configs as sweep_configs
from sweeps import limits, schema, selectors, tasks
from sweeps.models import Chunk, Question, Scenario, Sweep
from sweeps.services import chunks, launch, lifecycle, questions, recovery, taskqueue, timelines
from tests.sweeps._web import record_conditions, record_enqueued, sent_chunk_ids

pytestmark = pytest.mark.django_db

TRIAGE = sweep_configs.builtin_job_source("triage")
MARKERS = [{"name": "markers, keyed", "design": "markers", "tracker": "keyed"}]
LOOP = [{"name": "loop, keyed", "design": "loop", "tracker": "keyed"}]


@pytest.fixture
def enqueued(monkeypatch):
    """What the services publish, recorded instead of sent: [(task name, args), ...]."""
    return record_enqueued(monkeypatch)


@pytest.fixture
def user():
    return get_user_model().objects.create_user("ann", password="pw-for-tests")


def create(**kw):
    args = {"user": None, "job_source": TRIAGE, "configs": LOOP, "depth": 1}
    args.update(kw)
    return launch.sweep_create(**args)


def run_all(sweep):
    for pk in Chunk.objects.filter(sweep=sweep).values_list("pk", flat=True):
        chunks.chunk_run(chunk_id=pk)
    sweep.refresh_from_db()
    return sweep


def chunk_ids(sweep):
    return list(Chunk.objects.filter(sweep=sweep).order_by("pk").values_list("pk", flat=True))


sent_chunks = sent_chunk_ids


def waiting_sweep():
    """A queue-person sweep with its chunks stored: some scenarios wait on questions."""
    return run_all(create(configs=MARKERS, person="queue"))


def test_create_rejects_a_bad_job_and_stores_nothing():
    with pytest.raises(ValidationError, match="uploaded job: turns"):
        create(job_source='{"name": "x", "tools": {"s": {"op": "search", "read_only": true}}, "turns": []}')
    assert Sweep.objects.count() == 0 and Chunk.objects.count() == 0


@pytest.mark.parametrize("bad", [
    {"configs": []},
    {"configs": [{"name": "x", "design": "nope", "tracker": "keyed"}]},
    {"configs": [{"name": "x", "design": "loop", "tracker": "sometimes"}]},
    {"configs": [{"name": "x", "design": "loop"}]},
    {"configs": LOOP + LOOP},
    {"depth": 4},
    {"depth": 3, "person": "queue"},
    {"runs": 0},
    {"runs": 11},
    {"person": "robot"},
])
def test_create_rejects_bad_settings_and_stores_nothing(bad, enqueued, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True), pytest.raises(ValidationError):
        create(**bad)
    assert Sweep.objects.count() == 0 and Chunk.objects.count() == 0 and enqueued == []


# --- the conditions: crash model, fsync, tracker fault ---------------------------------------------

POWER_CUT = {"crash_model": "power-cut", "fsync": False, "tracker_fault": "crash"}
WORLD = {"tracker_fault": "ttl:5", "tool_faults": "k:2", "person_faults": "deny:0.5", "model": "fickle", "seed": 7}


def test_create_stores_the_conditions():
    sweep = create(**POWER_CUT)
    sweep.refresh_from_db()
    assert (sweep.crash_model, sweep.fsync, sweep.tracker_fault) == ("power-cut", False, "crash")


def test_create_stores_the_world_as_written():
    sweep = create(**WORLD)
    sweep.refresh_from_db()
    assert sweep_configs.conditions_of(sweep) == sweep_configs.Conditions(**WORLD)
    assert sweep.conditions == ("panic, fsync on, tracker fault: ttl:5, tool faults: k:2, person: deny:0.5, "
                                "model: fickle, seed: 7")


@pytest.mark.parametrize("world", [{"tracker_fault": "strict-params"}, {"tracker_fault": "ttl:10000"},
                                   {"tool_faults": "always"}, {"tool_faults": "k:0"}, {"person_faults": "adversarial"},
                                   {"person_faults": "wrong:1"}, {"model": "fresh-ids"}, {"seed": 2**31 - 1}])
def test_create_takes_every_spelling_agentcore_takes(world):
    sweep = create(**world)
    sweep.refresh_from_db()
    assert sweep_configs.conditions_of(sweep) == sweep_configs.Conditions(**world)


def test_create_without_conditions_stores_agentcore_s_defaults():
    sweep = create()
    sweep.refresh_from_db()
    assert (sweep.crash_model, sweep.fsync, sweep.tracker_fault) == ("panic", True, "none")


@pytest.mark.parametrize(("bad", "message"), [
    ({"crash_model": "earthquake"}, "crash model must be one of panic, power-cut, kill, not 'earthquake'"),
    ({"crash_model": None}, "crash model must be one of panic, power-cut, kill, not None"),
    ({"fsync": "off"}, "fsync must be on or off (True or False), not 'off'"),
    ({"fsync": 0}, "fsync must be on or off (True or False), not 0"),
    ({"tracker_fault": "flaky"}, "unknown tracker fault 'flaky' (choose from none, crash, ttl:N, strict-params)"),
    ({"tracker_fault": ["crash"]}, "unknown tracker fault ['crash'] (choose from none, crash, ttl:N, strict-params)"),
    ({"tracker_fault": "ttl:0"}, "tracker fault 'ttl:0': N must be a whole number from 1 to 10000"),
    ({"tracker_fault": "ttl:"}, "tracker fault 'ttl:': N must be a whole number from 1 to 10000"),
    ({"tracker_fault": "ttl:\u0665"}, "tracker fault 'ttl:\u0665': write it in plain ASCII without spaces, as one of "
                                      "none, crash, ttl:N, strict-params"),
    ({"tool_faults": "sometimes"}, "unknown tool faults 'sometimes' (choose from first, k:N, always)"),
    ({"tool_faults": "k:101"}, "tool faults 'k:101': N must be a whole number from 0 to 100"),
    ({"tool_faults": 2}, "unknown tool faults 2 (choose from first, k:N, always)"),
    ({"person_faults": "liar"}, "unknown person 'liar' (choose from truthful, deny:P, wrong:P, adversarial)"),
    ({"person_faults": "deny:2"}, "person faults 'deny:2': P must be a probability from 0 to 1"),
    ({"person_faults": "wrong:0.123456789012345"}, "person faults 'wrong:0.123456789012345': at most 20 characters"),
    ({"model": "random"}, "unknown model 'random' (choose from fixed, fresh-ids, fickle)"),
    ({"model": None}, "unknown model None (choose from fixed, fresh-ids, fickle)"),
    ({"seed": -1}, "seed must be a whole number from 0 to 2147483647, not -1"),
    ({"seed": "7"}, "seed must be a whole number from 0 to 2147483647, not '7'"),
    ({"seed": True}, "seed must be a whole number from 0 to 2147483647, not True"),
    ({"seed": 2**31}, "seed must be a whole number from 0 to 2147483647, not 2147483648"),
])
def test_create_rejects_bad_conditions_with_a_clear_message_and_stores_nothing(
        bad, message, enqueued, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True), pytest.raises(ValidationError) as e:
        create(**bad)
    assert e.value.messages == [message]
    assert Sweep.objects.count() == 0 and Chunk.objects.count() == 0 and enqueued == []


def test_sweep_check_rejects_bad_conditions_as_create_does():
    with pytest.raises(ValidationError, match="crash model must be one of"):
        sweep_configs.sweep_check(job_source=TRIAGE, configs=LOOP, depth=1, crash_model="earthquake")


@pytest.mark.parametrize("bad", [{"tracker_fault": "ttl:0"}, {"tool_faults": "k:x"}, {"person_faults": "deny:-1"},
                                 {"model": "fickle "}, {"seed": -3}])
def test_sweep_check_rejects_a_bad_world_as_create_does(bad):
    with pytest.raises(ValidationError) as checked:
        sweep_configs.sweep_check(job_source=TRIAGE, configs=LOOP, depth=1, **bad)
    with pytest.raises(ValidationError) as created:
        create(**bad)
    assert checked.value.messages == created.value.messages and Sweep.objects.count() == 0


def test_an_unknown_condition_is_a_type_error_as_any_unknown_argument():
    with pytest.raises(TypeError, match="unknown conditions: tracker_faults"):
        create(tracker_faults="crash")


def test_the_chunk_plan_plays_every_configuration_under_the_conditions():
    conditions = sweep_configs.Conditions("kill", False, "crash", "k:3", "wrong:0.25", "fresh-ids", 11)
    planned = sweep_configs.chunk_plan(TRIAGE, LOOP + MARKERS, 1, 1, "scripted", "t", conditions)
    assert {tuple(getattr(c, f) for f in conditions._fields) for c in planned.agent_configs} == {conditions}


def test_every_agentcore_config_of_a_sweep_carries_its_conditions():
    sweep = create(configs=LOOP + MARKERS, **POWER_CUT)
    cfgs = sweep_configs.agent_configs(sweep)
    assert [(c.crash_model, c.fsync, c.tracker_fault) for c in cfgs] == [("power-cut", False, "crash")] * 2
    assert cfgs[0].conditions == "power-cut, fsync off, tracker fault: crash"


def test_the_cached_configs_of_two_sweeps_that_differ_only_in_conditions_differ():
    panic, power_cut = create(), create(**POWER_CUT)
    assert sweep_configs.agent_config(panic, 0).crash_model == "panic"
    assert sweep_configs.agent_config(power_cut, 0).crash_model == "power-cut"


def test_chunks_are_played_under_the_sweep_s_conditions(monkeypatch):
    sweep = create(**POWER_CUT)
    played = record_conditions(monkeypatch, "run_chunk")
    chunks.chunks_run(chunk_ids=chunk_ids(sweep)[:2])
    assert played == [sweep_configs.Conditions(**POWER_CUT)] * 2


def test_chunks_are_played_in_the_sweep_s_world(monkeypatch):
    sweep = create(**WORLD)
    played = record_conditions(monkeypatch, "run_chunk")
    chunks.chunks_run(chunk_ids=chunk_ids(sweep)[:2])
    assert played == [sweep_configs.Conditions(**WORLD)] * 2


@pytest.mark.parametrize(("said", "stored"), [({"avoidable": True}, True), ({"avoidable": False}, False),
                                             ({}, False), ({"avoidable": "yes"}, False)])
def test_a_question_is_stored_avoidable_only_when_agentcore_says_so(said, stored):
    question = {"id": "0:call_1#1", "run": 0, "call": {"id": "call_1", "tool": "create_issue", "args": {}},
                "key": "k", "tried": "lookup: not found", "truth": False, **said}
    assert chunks.new_question(1, 2, question, {"tracker": {"effects": []}}).avoidable is stored


def test_create_plans_one_chunk_per_first_point_and_enqueues_them_on_commit(
        enqueued, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        sweep = create(configs=sweep_configs.table_configs_for(), depth=2)
    assert enqueued == []  # nothing is published before the commit
    for cb in callbacks:
        cb()
    expected = agentsweep.plan_chunks(agentsweep.table_configs(jobs.load("triage")))
    assert sweep.total_chunks == len(expected) == Chunk.objects.filter(sweep=sweep).count()
    assert sorted(sent_chunks(enqueued)) == chunk_ids(sweep)


def test_a_custom_configuration_is_named_as_the_table_names_it():
    """The same design and tracker mode, the same name, in a custom sweep and in the table."""
    table = {(c["design"], c["tracker"]): c["name"] for c in sweep_configs.table_configs_for()}
    custom = sweep_configs.configs_for(["loop", "keys"], ["keyed", "keyless", "lookup"])
    assert [c["name"] for c in custom] == ["real loop, keyed tracker", "real loop, keyless tracker",
                                           "loop, lookup tracker", "+ idempotency keys", "keys, keyless tracker",
                                           "keys, lookup tracker"]
    assert all(c["name"] == table[c["design"], c["tracker"]] for c in custom if (c["design"], c["tracker"]) in table)


def test_double_submit_with_one_token_makes_one_sweep(user):
    first = create(user=user, request_token="tok-1")
    second = create(user=user, request_token="tok-1")
    assert first.pk == second.pk and Sweep.objects.count() == 1
    assert Chunk.objects.filter(sweep=first).count() == first.total_chunks


def test_chunk_run_twice_stores_once():
    sweep = create(depth=2)
    pk = chunk_ids(sweep)[0]
    assert chunks.chunk_run(chunk_id=pk) is True
    rows = Scenario.objects.filter(sweep=sweep).count()
    assert chunks.chunk_run(chunk_id=pk) is False
    chunk = Chunk.objects.get(pk=pk)
    assert Scenario.objects.filter(sweep=sweep).count() == rows == chunk.scenarios > 1
    assert chunk.stored and chunk.attempts == 1


def _scenario_inserts(queries):
    return [q for q in queries if f'INSERT INTO "{Scenario._meta.db_table}"' in q["sql"]]


def test_a_task_s_chunks_are_stored_together():
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    sweep = create(depth=2)
    ids = chunk_ids(sweep)[:3]
    with CaptureQueriesContext(connection) as ctx:
        assert chunks.chunks_run(chunk_ids=ids) == 3
    assert len(_scenario_inserts(ctx.captured_queries)) == 1  # one INSERT of all three chunks' rows
    rows = Chunk.objects.filter(pk__in=ids)
    assert all(c.stored and c.attempts == 1 for c in rows)
    assert Scenario.objects.filter(sweep=sweep).count() == sum(c.scenarios for c in rows) > 3


def test_a_redelivered_task_runs_its_chunks_one_at_a_time():
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    sweep = create(depth=2)
    ids = chunk_ids(sweep)[:3]
    Chunk.objects.filter(pk=ids[1]).update(attempts=1)  # started before by a worker that died
    with CaptureQueriesContext(connection) as ctx:
        assert chunks.chunks_run(chunk_ids=ids) == 3
    assert len(_scenario_inserts(ctx.captured_queries)) == 3
    # only the chunk started before counts a second attempt
    assert dict(Chunk.objects.filter(pk__in=ids).values_list("pk", "attempts")) == {ids[0]: 1, ids[1]: 2, ids[2]: 1}


def test_a_chunk_that_raises_keeps_the_chunks_before_it_and_is_the_one_named(monkeypatch):
    sweep = create(depth=2)
    ids = chunk_ids(sweep)[:3]
    bad = Chunk.objects.get(pk=ids[1])
    real = agentsweep.run_chunk

    def run_chunk(cfg, chunk, *args, **kw):
        if chunk.first == bad.first_point:
            raise RuntimeError("poisoned")
        return real(cfg, chunk, *args, **kw)

    monkeypatch.setattr(agentsweep, "run_chunk", run_chunk)
    with pytest.raises(RuntimeError, match="poisoned"):
        chunks.chunks_run(chunk_ids=ids)
    assert list(Chunk.objects.filter(pk__in=ids).order_by("pk").values_list("stored", flat=True)) == [
        True, False, False]
    chunks.chunks_failed(chunk_ids=ids, error="RuntimeError: poisoned")  # what the task's failure handler does
    sweep.refresh_from_db()
    assert sweep.status == Sweep.Status.FAILED and f"chunk {bad.pk} " in sweep.error


def sent_messages(enqueued):
    """The chunk IDs of each message published, in the order published."""
    return [[args[0]] if name == tasks.chunk_run.name else list(args[0]) for name, args in enqueued
            if name in (tasks.chunk_run.name, tasks.chunks_run.name)]


# Worker speeds: four alike, one of four at half speed (a busy host), four unlike; and 2, 3, 5 and 8 alike.
SPEEDS = [(1, 1, 1, 1), (1, 1, 1, 0.5), (1, 0.9, 0.8, 0.7), (1, 1), (1, 1, 1), (1,) * 5, (1,) * 8]


def finish_spread(messages, work, speeds):
    """How far apart workers of these speeds finish, as a share of the sweep's time, when each takes
    the next published message as soon as it is free (`work` by chunk ID: time = work / speed)."""
    busy = [0.0] * len(speeds)
    for m in messages:
        w = busy.index(min(busy))
        busy[w] += sum(work[pk] for pk in m) / speeds[w]
    return (max(busy) - min(busy)) / max(busy)


def test_messages_are_dealt_heaviest_first_and_shrink_toward_the_end(enqueued, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        sweep = create(configs=sweep_configs.table_configs_for(), depth=2)
    messages = sent_messages(enqueued)
    assert sorted(pk for m in messages for pk in m) == chunk_ids(sweep)
    assert all(m == sorted(m) and len(m) <= limits.MAX_CHUNKS_PER_TASK for m in messages)
    run_all(sweep)
    work = dict(Chunk.objects.filter(sweep=sweep).values_list("pk", "scenarios"))
    sizes = [sum(work[pk] for pk in m) for m in messages]
    total = sum(sizes)
    # A message holds about 1/MESSAGE_SHARE of the work left (closed by the chunk that takes it past
    # that, or at MAX_CHUNKS_PER_TASK chunks): the first are the largest, the last few 1% or less.
    assert max(sizes[:5]) == max(sizes) <= total / limits.MESSAGE_SHARE + max(work.values())
    assert max(sizes[-4:]) <= 0.01 * total, sizes
    spreads = [finish_spread(messages, work, speeds) for speeds in SPEEDS]
    assert max(spreads) <= 0.04, spreads  # equal messages (before): up to 14%


def test_the_estimated_shares_of_a_16_pair_job_end_together(enqueued, django_capture_on_commit_callbacks):
    """One configuration, 420 first points: early ones have restarts 100 times as long as late ones."""
    with django_capture_on_commit_callbacks(execute=True):
        sweep = create(job_source=jobs.turn_pairs_source(16), depth=2)
    messages = sent_messages(enqueued)
    work = dict(taskqueue.chunk_costs(sweep, chunk_ids(sweep)))
    assert len(work) == 420 and max(work.values()) >= 100 * min(work.values())
    assert (max(sum(work[pk] for pk in m) for m in messages)
            <= sum(work.values()) / limits.MESSAGE_SHARE + max(work.values()))
    # The tail's floor: no message but the last below TAIL_SHARE of the whole, unless full of chunks.
    assert all(sum(work[pk] for pk in m) >= limits.TAIL_SHARE * sum(work.values())
               or len(m) == limits.MAX_CHUNKS_PER_TASK for m in messages[:-1])
    spreads = [finish_spread(messages, work, speeds) for speeds in SPEEDS]
    assert max(spreads) <= 0.03, spreads  # equal messages (before): up to 14%


def test_four_workers_get_like_shares_of_a_big_job_and_store_agentcore_s_rows(
        enqueued, django_capture_on_commit_callbacks):
    """The 8-pair generated job (one configuration, 212 chunks of 5 to 213 scenarios): its messages,
    run as workers run them, store agentcore's rows, and workers taking them in turn finish together."""
    job = jobs.turn_pairs(8)
    with django_capture_on_commit_callbacks(execute=True):
        sweep = create(job_source=jobs.turn_pairs_source(8), depth=2)
    messages = sent_messages(enqueued)
    for m in messages:
        chunks.chunks_run(chunk_ids=m)
    sweep.refresh_from_db()
    assert sweep.status == Sweep.Status.DONE
    expected = agentsweep.sweep([agentsweep.Config(job, designs.get("loop"), "keyed")], depth=2).records[0]
    stored = Scenario.objects.filter(sweep=sweep).order_by("first_point", "second_point").values(*schema.RECORD_FIELDS)
    assert [schema.row_fields(r) for r in stored] == [
        {f: getattr(r, f) for f in schema.RECORD_FIELDS} for r in expected]
    work = dict(Chunk.objects.filter(sweep=sweep).values_list("pk", "scenarios"))
    assert sum(work.values()) == len(expected) == 23_564
    spreads = [finish_spread(messages, work, speeds) for speeds in SPEEDS]
    assert max(spreads) <= 0.05, spreads  # equal messages (before): up to 20%


def test_chunks_are_stored_as_agentcore_records():
    sweep = run_all(create(depth=2))
    cfg = agentsweep.table_configs(jobs.load("triage"))[5]  # real loop, keyed tracker
    result = agentsweep.sweep([cfg], depth=2)
    stored = Scenario.objects.filter(sweep=sweep).order_by("first_point", "second_point")
    fields = schema.RECORD_FIELDS
    # A once scenario's second point, kind and label are stored as 0, "" and "" (not NULL), as are
    # the third point's of every scenario below depth 3.
    blank = {"second_point": 0, "second_kind": "", "second_label": "", "third_point": 0, "third_kind": "",
             "third_label": ""}
    assert [tuple(getattr(s, f) for f in fields) for s in stored] == [
        tuple(blank[f] if f in blank and getattr(r, f) is None else getattr(r, f) for f in fields)
        for r in result.records[0]]


def test_the_insert_writes_every_column_of_a_scenario():
    columns = {f.attname for f in Scenario._meta.concrete_fields if not f.primary_key}
    assert sorted(schema.SCENARIO_COLUMNS) == sorted(columns)


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


def test_a_chunk_started_too_often_fails_its_sweep():
    sweep = create()
    pk = chunk_ids(sweep)[0]
    Chunk.objects.filter(pk=pk).update(attempts=limits.MAX_CHUNK_ATTEMPTS)
    assert chunks.chunk_run(chunk_id=pk) is False
    sweep.refresh_from_db()
    assert sweep.status == Sweep.Status.FAILED and f"chunk {pk}" in sweep.error
    assert not Chunk.objects.get(pk=pk).stored


def test_a_broker_that_cannot_be_reached_fails_the_launch_with_a_message(monkeypatch,
                                                                          django_capture_on_commit_callbacks):
    def down(*args, **kw):
        raise ConnectionRefusedError("connection refused")

    monkeypatch.setattr(taskqueue, "publish", down)
    with pytest.raises(ConnectionRefusedError), django_capture_on_commit_callbacks(execute=True):
        create()
    sweep = Sweep.objects.get()
    assert sweep.status == Sweep.Status.FAILED and "broker" in sweep.error


def test_waiting_scenarios_get_questions_with_the_truth():
    sweep = waiting_sweep()
    assert sweep.status == Sweep.Status.WAITING
    questions = list(Question.objects.filter(sweep=sweep))
    assert questions and all(q.status == Question.Status.OPEN for q in questions)
    assert {q.scenario_id for q in questions} == set(
        Scenario.objects.filter(sweep=sweep, status=Scenario.Status.WAITING).values_list("pk", flat=True))
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


LOOP_KEYLESS = [{"name": "real loop, keyless tracker", "design": "loop", "tracker": "keyless"}]


def run_stored_chunks(sweep):
    """Run every chunk not stored yet, including those made meanwhile (no worker here)."""
    while ids := chunk_ids_unstored(sweep):
        for pk in ids:
            chunks.chunk_run(chunk_id=pk)


def chunk_ids_unstored(sweep):
    return list(Chunk.objects.filter(sweep=sweep, stored=False).order_by("pk").values_list("pk", flat=True))


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
    swept = Scenario.objects.filter(sweep=sweep, config=0, first_point=q.scenario.first_point,
                                    second_point__gt=0).count()
    assert (later.first_point, later.second_from, later.stored) == (q.scenario.first_point, swept + 1, False)
    sweep.refresh_from_db()
    assert sweep.total_chunks == planned + 1 == Chunk.objects.filter(sweep=sweep).count()
    assert sweep.status == Sweep.Status.RUNNING  # not done, nor waiting, while the chunk is not stored
    chunks.chunk_run(chunk_id=later.pk)
    assert list(Scenario.objects.filter(sweep=sweep, first_point=later.first_point, second_point__gt=swept)
                .values_list("second_point", flat=True)) == list(range(later.second_from, later.second_to + 1))


def test_a_twice_scenario_past_an_answer_replays_its_timeline_through_the_answered_restart(user):
    sweep = create(configs=LOOP_KEYLESS, depth=2, person="queue")
    run_stored_chunks(sweep)
    q = Question.objects.filter(sweep=sweep, scenario__second_point=0).order_by("pk").first()
    questions.question_answer(question_id=q.pk, user=user, happened=q.truth)
    questions.question_resume(question_id=q.pk)
    later = Chunk.objects.get(sweep=sweep, second_from__gt=0)
    chunks.chunk_run(chunk_id=later.pk)
    sc = Scenario.objects.get(sweep=sweep, first_point=later.first_point, second_point=later.second_to)
    assert sc.status == Scenario.Status.DONE and sc.timeline is None  # replayed on demand
    timeline = timelines.scenario_timeline(scenario_id=sc.pk)
    scripted = agentsweep.play(dataclasses.replace(sweep_configs.agent_config(sweep, 0), person="scripted"),
                               (sc.first_point, sc.second_point), agentsweep.Options(timeline=True))
    assert [e for e in timeline if e["kind"] not in ("question", "answer")] == scripted.timeline
    sc.refresh_from_db()
    assert sc.effects == scripted.effects


def test_a_queue_sweep_answered_truthfully_stores_the_scripted_sweep_s_records(user):
    sweep = create(configs=LOOP_KEYLESS, depth=2, person="queue")
    run_stored_chunks(sweep)
    while answer_and_resume_all(sweep, user):
        run_stored_chunks(sweep)
    sweep.refresh_from_db()
    assert sweep.status == Sweep.Status.DONE
    cfg = sweep_configs.agent_config(sweep, 0)
    scripted = agentsweep.sweep([dataclasses.replace(cfg, person="scripted")], depth=2)
    fields = ("first_point", "second_point", "duplicates", "missing", "asks", "approvals", "model_calls",
              "calls_plus", "status")
    assert list(Scenario.objects.filter(sweep=sweep).order_by("first_point", "second_point").values_list(*fields)) == [
        (r.first_point, r.second_point or 0, r.duplicates, r.missing, r.asks, r.approvals, r.model_calls, r.calls_plus,
         r.status) for r in scripted.records[0]]
    assert sweep.table == [r.to_dict() for r in scripted.rows]


def test_timeline_is_replayed_and_stored_on_demand():
    sweep = run_all(create(depth=2))
    sc = Scenario.objects.filter(sweep=sweep, second_point__gt=0).first()
    assert sc.timeline is None
    timeline = timelines.scenario_timeline(scenario_id=sc.pk)
    assert any(e["kind"] == "crash" for e in timeline)
    sc.refresh_from_db()
    assert sc.timeline == timeline and sc.effects is not None


def test_a_corrupt_stored_checkpoint_is_a_clear_error(user):
    q = Question.objects.filter(sweep=waiting_sweep()).first()
    name = next(iter(q.durable["files"]))
    q.durable["files"][name] = '{"run_id": "run-1", "turns": [tru'
    Question.objects.filter(pk=q.pk).update(durable=q.durable)
    with pytest.raises(CheckpointError, match=f"question {q.pk}.*{name}.*corrupt"):
        timelines.scenario_timeline(scenario_id=q.scenario_id)
    questions.question_answer(question_id=q.pk, user=user, happened=True)
    with pytest.raises(CheckpointError):
        questions.question_resume(question_id=q.pk)
    assert "corrupt" in Sweep.objects.get(pk=q.sweep_id).error


@pytest.mark.django_db
def test_a_sweep_too_big_to_plan_is_refused_and_nothing_stored():
    import json as _json

    calls = [{"id": f"c{i}", "tool": "create_issue", "args": {}} for i in range(100)]
    job = _json.dumps({"name": "big", "tools": {"create_issue": {"op": "create_issue"}},
                       "turns": [{"calls": calls}, {"final": "x"}]})
    configs = sweep_configs.configs_for(list(designs.DESIGNS)[:8], ["keyed", "keyless", "lookup"])
    with pytest.raises(ValidationError, match="first crash points"):
        launch.sweep_create(user=None, job_source=job, configs=configs)
    assert Sweep.objects.count() == 0


ONCE_PER_TURN = [{"name": "save once per turn", "design": "once-per-turn", "tracker": "keyed"}]


def stored_records(sweep):
    """The sweep's rows as agentcore records (their fields as stored, read back), in the CLI's order."""
    return [schema.row_record(schema.instance_values(s))
            for s in Scenario.objects.filter(sweep=sweep).order_by(*schema.SCENARIO_ORDER)]


def agentcore_records(configs, depth):
    cfgs = [agentsweep.Config(jobs.load("triage"), designs.get(c["design"]), c["tracker"], name=c["name"])
            for c in configs]
    return agentsweep.sweep(cfgs, depth=depth)


def test_a_depth_3_sweep_stores_agentcore_s_records_with_their_third_points():
    sweep = run_all(create(configs=ONCE_PER_TURN, depth=3))
    result = agentcore_records(ONCE_PER_TURN, 3)
    assert sweep.status == Sweep.Status.DONE
    assert [r.to_dict() for r in stored_records(sweep)] == [
        dataclasses.replace(r, timeline=None, effects=None).to_dict() for r in result.records[0]]
    assert sweep.table == [r.to_dict() for r in result.rows] and sweep.table[0]["thrice"] > 0


def test_storing_a_depth_3_chunk_twice_stores_its_thrice_scenarios_once():
    sweep = create(configs=ONCE_PER_TURN, depth=3)
    pk = chunk_ids(sweep)[0]
    chunks.chunk_run(chunk_id=pk)
    n = Scenario.objects.filter(sweep=sweep).count()
    assert n > Scenario.objects.filter(sweep=sweep, third_point=0).count() > 0
    Chunk.objects.filter(pk=pk).update(stored=False)  # as if the first store's message were redelivered
    chunks.chunk_run(chunk_id=pk)
    assert Scenario.objects.filter(sweep=sweep).count() == n


def test_a_thrice_scenario_s_timeline_is_replayed_as_agentcore_keeps_it():
    sweep = run_all(create(configs=ONCE_PER_TURN, depth=3))
    sc = Scenario.objects.filter(sweep=sweep, third_point__gt=0, duplicates__gt=0).order_by("pk").first()
    cfg = agentsweep.Config(jobs.load("triage"), designs.get("once-per-turn"), "keyed")
    chunk = agentsweep.Chunk(0, sc.first_point, sc.first_kind, sc.first_label)
    kept = [r for r in agentsweep.run_chunk(cfg, chunk, 3, collect=True, merge=False).records
            if (r.second_point, r.third_point) == (sc.second_point, sc.third_point)]
    assert timelines.scenario_timeline(scenario_id=sc.pk) == kept[0].timeline
    assert sum(e["kind"] == "crash" for e in kept[0].timeline) == 3


def test_a_depth_3_sweep_too_big_to_store_is_refused_and_nothing_is_stored(enqueued):
    with pytest.raises(ValidationError, match=r"at depth 3, more than the 1,000,000") as e:
        create(configs=sweep_configs.table_configs_for(), depth=3, runs=2)
    assert "about 1,0" in e.value.messages[0] and "depth 2" in e.value.messages[0]
    assert Sweep.objects.count() == 0 and Chunk.objects.count() == 0 and enqueued == []


def test_depth_3_needs_the_scripted_person(enqueued):
    with pytest.raises(ValidationError, match="depth 3 needs the scripted person"):
        create(configs=ONCE_PER_TURN, depth=3, person="queue")
    assert Sweep.objects.count() == 0 and enqueued == []
