"""services/timelines.py: a scenario's timeline replayed on demand, as agentcore keeps it; a corrupt
checkpoint a clear error."""

from __future__ import annotations

import dataclasses

import pytest

import agentcore as agentsweep
from agentcore import CheckpointError, designs, jobs
from sweeps import configs as sweep_configs
from sweeps.models import Chunk, Question, Scenario, Sweep
from sweeps.services import chunks, questions, timelines
from tests.sweeps._web import LOOP_KEYLESS, ONCE_PER_TURN, create, run_all, run_stored_chunks, waiting_sweep

pytestmark = pytest.mark.django_db


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
    scripted = agentsweep.play(
        dataclasses.replace(sweep_configs.agent_config(sweep, 0), person="scripted"),
        (sc.first_point, sc.second_point),
        agentsweep.Options(timeline=True),
    )
    assert [e for e in timeline if e["kind"] not in ("question", "answer")] == scripted.timeline
    sc.refresh_from_db()
    assert sc.effects == scripted.effects


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


def test_a_thrice_scenario_s_timeline_is_replayed_as_agentcore_keeps_it():
    sweep = run_all(create(configs=ONCE_PER_TURN, depth=3))
    sc = Scenario.objects.filter(sweep=sweep, third_point__gt=0, duplicates__gt=0).order_by("pk").first()
    cfg = agentsweep.Config(jobs.load("triage"), designs.get("once-per-turn"), "keyed")
    chunk = agentsweep.Chunk(0, sc.first_point, sc.first_kind, sc.first_label)
    kept = [
        r
        for r in agentsweep.run_chunk(cfg, chunk, 3, collect=True, merge=False).records
        if (r.second_point, r.third_point) == (sc.second_point, sc.third_point)
    ]
    assert timelines.scenario_timeline(scenario_id=sc.pk) == kept[0].timeline
    assert sum(e["kind"] == "crash" for e in kept[0].timeline) == 3
