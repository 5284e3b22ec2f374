"""services/launch.py: a sweep's creation, its settings and conditions checked, nothing stored when refused."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

import agentcore as agentsweep
from agentcore import designs, jobs
from sweeps import configs as sweep_configs
from sweeps.models import Chunk, Sweep
from sweeps.services import launch
from sweeps.workqueue import publish
from tests.sweeps._web import LOOP, ONCE_PER_TURN, POWER_CUT, WORLD, chunk_ids, create
from tests.sweeps._web import sent_chunk_ids as sent_chunks

pytestmark = pytest.mark.django_db


def test_create_rejects_a_bad_job_and_stores_nothing():
    with pytest.raises(ValidationError, match="uploaded job: turns"):
        create(job_source='{"name": "x", "tools": {"s": {"op": "search", "read_only": true}}, "turns": []}')
    assert Sweep.objects.count() == 0 and Chunk.objects.count() == 0


@pytest.mark.parametrize(
    "bad",
    [
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
    ],
)
def test_create_rejects_bad_settings_and_stores_nothing(bad, enqueued, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True), pytest.raises(ValidationError):
        create(**bad)
    assert Sweep.objects.count() == 0 and Chunk.objects.count() == 0 and enqueued == []


def test_create_stores_the_conditions():
    sweep = create(**POWER_CUT)
    sweep.refresh_from_db()
    assert (sweep.crash_model, sweep.fsync, sweep.tracker_fault) == ("power-cut", False, "crash")


def test_create_stores_the_world_as_written():
    sweep = create(**WORLD)
    sweep.refresh_from_db()
    assert sweep_configs.conditions_of(sweep) == sweep_configs.Conditions(**WORLD)
    assert sweep.conditions == (
        "panic, fsync on, tracker fault: ttl:5, tool faults: k:2, person: deny:0.5, model: fickle, seed: 7"
    )


@pytest.mark.parametrize(
    "world",
    [
        {"tracker_fault": "strict-params"},
        {"tracker_fault": "ttl:10000"},
        {"tool_faults": "always"},
        {"tool_faults": "k:0"},
        {"person_faults": "adversarial"},
        {"person_faults": "wrong:1"},
        {"model": "fresh-ids"},
        {"seed": 2**31 - 1},
    ],
)
def test_create_takes_every_spelling_agentcore_takes(world):
    sweep = create(**world)
    sweep.refresh_from_db()
    assert sweep_configs.conditions_of(sweep) == sweep_configs.Conditions(**world)


def test_create_without_conditions_stores_agentcore_s_defaults():
    sweep = create()
    sweep.refresh_from_db()
    assert (sweep.crash_model, sweep.fsync, sweep.tracker_fault) == ("panic", True, "none")


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"crash_model": "earthquake"}, "crash model must be one of panic, power-cut, kill, not 'earthquake'"),
        ({"crash_model": None}, "crash model must be one of panic, power-cut, kill, not None"),
        ({"fsync": "off"}, "fsync must be on or off (True or False), not 'off'"),
        ({"fsync": 0}, "fsync must be on or off (True or False), not 0"),
        ({"tracker_fault": "flaky"}, "unknown tracker fault 'flaky' (choose from none, crash, ttl:N, strict-params)"),
        (
            {"tracker_fault": ["crash"]},
            "unknown tracker fault ['crash'] (choose from none, crash, ttl:N, strict-params)",
        ),
        ({"tracker_fault": "ttl:0"}, "tracker fault 'ttl:0': N must be a whole number from 1 to 10000"),
        ({"tracker_fault": "ttl:"}, "tracker fault 'ttl:': N must be a whole number from 1 to 10000"),
        (
            {"tracker_fault": "ttl:\u0665"},
            "tracker fault 'ttl:\u0665': write it in plain ASCII without spaces, as one of "
            "none, crash, ttl:N, strict-params",
        ),
        ({"tool_faults": "sometimes"}, "unknown tool faults 'sometimes' (choose from first, k:N, always)"),
        ({"tool_faults": "k:101"}, "tool faults 'k:101': N must be a whole number from 0 to 100"),
        ({"tool_faults": 2}, "unknown tool faults 2 (choose from first, k:N, always)"),
        ({"person_faults": "liar"}, "unknown person 'liar' (choose from truthful, deny:P, wrong:P, adversarial)"),
        ({"person_faults": "deny:2"}, "person faults 'deny:2': P must be a probability from 0 to 1"),
        (
            {"person_faults": "wrong:0.123456789012345"},
            "person faults 'wrong:0.123456789012345': at most 20 characters",
        ),
        ({"model": "random"}, "unknown model 'random' (choose from fixed, fresh-ids, fickle)"),
        ({"model": None}, "unknown model None (choose from fixed, fresh-ids, fickle)"),
        ({"seed": -1}, "seed must be a whole number from 0 to 2147483647, not -1"),
        ({"seed": "7"}, "seed must be a whole number from 0 to 2147483647, not '7'"),
        ({"seed": True}, "seed must be a whole number from 0 to 2147483647, not True"),
        ({"seed": 2**31}, "seed must be a whole number from 0 to 2147483647, not 2147483648"),
    ],
)
def test_create_rejects_bad_conditions_with_a_clear_message_and_stores_nothing(
    bad, message, enqueued, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True), pytest.raises(ValidationError) as e:
        create(**bad)
    assert e.value.messages == [message]
    assert Sweep.objects.count() == 0 and Chunk.objects.count() == 0 and enqueued == []


def test_an_unknown_condition_is_a_type_error_as_any_unknown_argument():
    with pytest.raises(TypeError, match="unknown conditions: tracker_faults"):
        create(tracker_faults="crash")


def test_create_plans_one_chunk_per_first_point_and_enqueues_them_on_commit(
    enqueued, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        sweep = create(configs=sweep_configs.table_configs_for(), depth=2)
    assert enqueued == []  # nothing is published before the commit
    for cb in callbacks:
        cb()
    expected = agentsweep.plan_chunks(agentsweep.table_configs(jobs.load("triage")))
    assert sweep.total_chunks == len(expected) == Chunk.objects.filter(sweep=sweep).count()
    assert sorted(sent_chunks(enqueued)) == chunk_ids(sweep)


def test_double_submit_with_one_token_makes_one_sweep(user):
    first = create(user=user, request_token="tok-1")
    second = create(user=user, request_token="tok-1")
    assert first.pk == second.pk and Sweep.objects.count() == 1
    assert Chunk.objects.filter(sweep=first).count() == first.total_chunks


def test_a_broker_that_cannot_be_reached_fails_the_launch_with_a_message(
    monkeypatch, django_capture_on_commit_callbacks
):
    def down(*args, **kw):
        raise ConnectionRefusedError("connection refused")

    monkeypatch.setattr(publish, "send", down)
    with pytest.raises(ConnectionRefusedError), django_capture_on_commit_callbacks(execute=True):
        create()
    sweep = Sweep.objects.get()
    assert sweep.status == Sweep.Status.FAILED and "broker" in sweep.error


@pytest.mark.django_db
def test_a_sweep_too_big_to_plan_is_refused_and_nothing_stored():
    import json as _json

    calls = [{"id": f"c{i}", "tool": "create_issue", "args": {}} for i in range(100)]
    job = _json.dumps(
        {"name": "big", "tools": {"create_issue": {"op": "create_issue"}}, "turns": [{"calls": calls}, {"final": "x"}]}
    )
    configs = sweep_configs.configs_for(list(designs.DESIGNS)[:8], ["keyed", "keyless", "lookup"])
    with pytest.raises(ValidationError, match="first crash points"):
        launch.sweep_create(user=None, job_source=job, configs=configs)
    assert Sweep.objects.count() == 0


def test_a_depth_3_sweep_too_big_to_store_is_refused_and_nothing_is_stored(enqueued):
    with pytest.raises(ValidationError, match=r"at depth 3, more than the 1,000,000") as e:
        create(configs=sweep_configs.table_configs_for(), depth=3, runs=2)
    assert "about 1,0" in e.value.messages[0] and "depth 2" in e.value.messages[0]
    assert Sweep.objects.count() == 0 and Chunk.objects.count() == 0 and enqueued == []


def test_depth_3_needs_the_scripted_person(enqueued):
    with pytest.raises(ValidationError, match="depth 3 needs the scripted person"):
        create(configs=ONCE_PER_TURN, depth=3, person="queue")
    assert Sweep.objects.count() == 0 and enqueued == []
