"""services/chunks.py: chunks played under the sweep's conditions, stored once and together, as agentcore's records."""

from __future__ import annotations

import dataclasses

import pytest

import agentcore as agentsweep
from agentcore import designs, jobs
from sweeps import configs as sweep_configs
from sweeps import limits, schema
from sweeps.models import Chunk, Scenario, Sweep
from sweeps.services import chunks
from tests.sweeps._web import ONCE_PER_TURN, POWER_CUT, WORLD, chunk_ids, create, record_conditions, run_all

pytestmark = pytest.mark.django_db


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


@pytest.mark.parametrize(
    ("said", "stored"),
    [({"avoidable": True}, True), ({"avoidable": False}, False), ({}, False), ({"avoidable": "yes"}, False)],
)
def test_a_question_is_stored_avoidable_only_when_agentcore_says_so(said, stored):
    question = {
        "id": "0:call_1#1",
        "run": 0,
        "call": {"id": "call_1", "tool": "create_issue", "args": {}},
        "key": "k",
        "tried": "lookup: not found",
        "truth": False,
        **said,
    }
    assert chunks.new_question(1, 2, question, {"tracker": {"effects": []}}).avoidable is stored


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
        True,
        False,
        False,
    ]
    chunks.chunks_failed(chunk_ids=ids, error="RuntimeError: poisoned")  # what the task's failure handler does
    sweep.refresh_from_db()
    assert sweep.status == Sweep.Status.FAILED and f"chunk {bad.pk} " in sweep.error


def test_chunks_are_stored_as_agentcore_records():
    sweep = run_all(create(depth=2))
    cfg = agentsweep.table_configs(jobs.load("triage"))[5]  # real loop, keyed tracker
    result = agentsweep.sweep([cfg], depth=2)
    stored = Scenario.objects.filter(sweep=sweep).order_by("first_point", "second_point")
    fields = schema.RECORD_FIELDS
    # A once scenario's second point, kind and label are stored as 0, "" and "" (not NULL), as are
    # the third point's of every scenario below depth 3.
    blank = {
        "second_point": 0,
        "second_kind": "",
        "second_label": "",
        "third_point": 0,
        "third_kind": "",
        "third_label": "",
    }
    assert [tuple(getattr(s, f) for f in fields) for s in stored] == [
        tuple(blank[f] if f in blank and getattr(r, f) is None else getattr(r, f) for f in fields)
        for r in result.records[0]
    ]


def test_the_insert_writes_every_column_of_a_scenario():
    columns = {f.attname for f in Scenario._meta.concrete_fields if not f.primary_key}
    assert sorted(schema.SCENARIO_COLUMNS) == sorted(columns)


def test_a_chunk_started_too_often_fails_its_sweep():
    sweep = create()
    pk = chunk_ids(sweep)[0]
    Chunk.objects.filter(pk=pk).update(attempts=limits.MAX_CHUNK_ATTEMPTS)
    assert chunks.chunk_run(chunk_id=pk) is False
    sweep.refresh_from_db()
    assert sweep.status == Sweep.Status.FAILED and f"chunk {pk}" in sweep.error
    assert not Chunk.objects.get(pk=pk).stored


def stored_records(sweep):
    """The sweep's rows as agentcore records (their fields as stored, read back), in the CLI's order."""
    return [
        schema.row_record(schema.instance_values(s))
        for s in Scenario.objects.filter(sweep=sweep).order_by(*schema.SCENARIO_ORDER)
    ]


def agentcore_records(configs, depth):
    cfgs = [
        agentsweep.Config(jobs.load("triage"), designs.get(c["design"]), c["tracker"], name=c["name"]) for c in configs
    ]
    return agentsweep.sweep(cfgs, depth=depth)


def test_a_depth_3_sweep_stores_agentcore_s_records_with_their_third_points():
    sweep = run_all(create(configs=ONCE_PER_TURN, depth=3))
    result = agentcore_records(ONCE_PER_TURN, 3)
    assert sweep.status == Sweep.Status.DONE
    assert [r.to_dict() for r in stored_records(sweep)] == [
        dataclasses.replace(r, timeline=None, effects=None).to_dict() for r in result.records[0]
    ]
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
