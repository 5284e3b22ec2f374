"""Migrations: a sweep stored before issue 12's conditions, or issue 13's world, gets agentcore's defaults;
a question stored before issue 13 is necessary."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("sweeps", "0005_chunk_after_answer")]
AFTER = [("sweeps", "0006_sweep_conditions_scenario_corrupt")]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()  # what the last migration left
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.mark.django_db(transaction=True)
def test_a_sweep_stored_before_the_conditions_gets_the_defaults():
    latest = [key for key in MigrationExecutor(connection).loader.graph.leaf_nodes() if key[0] == "sweeps"]
    try:
        old = migrate(BEFORE).get_model("sweeps", "Sweep")
        pk = old.objects.create(job_name="triage", job_source="{}", configs=[]).pk
        new = migrate(AFTER).get_model("sweeps", "Sweep")
        assert new.objects.filter(pk=pk).values_list("crash_model", "fsync", "tracker_fault").get() == (
            "panic",
            True,
            "none",
        )
    finally:
        migrate(latest)


@pytest.mark.django_db(transaction=True)
def test_a_sweep_and_a_question_stored_before_the_world_get_the_defaults():
    latest = [key for key in MigrationExecutor(connection).loader.graph.leaf_nodes() if key[0] == "sweeps"]
    try:
        old = migrate([("sweeps", "0008_scenario_metrics_world_outcomes")])
        sweep = old.get_model("sweeps", "Sweep").objects.create(
            job_name="triage", job_source="{}", configs=[], tracker_fault="crash"
        )
        scenario = old.get_model("sweeps", "Scenario").objects.create(
            sweep=sweep,
            config=0,
            design="loop",
            tracker="keyed",
            job="triage",
            first_point=1,
            first_kind="k",
            first_label="k",
        )
        question = old.get_model("sweeps", "Question").objects.create(
            sweep=sweep, scenario=scenario, qid="0:call_1", call={}, durable={}
        )
        new = migrate([("sweeps", "0009_sweep_world_question_avoidable")])
        fields = ("tracker_fault", "tool_faults", "person_faults", "model", "seed")
        assert new.get_model("sweeps", "Sweep").objects.filter(pk=sweep.pk).values_list(*fields).get() == (
            "crash",
            "first",
            "truthful",
            "fixed",
            0,
        )
        assert new.get_model("sweeps", "Question").objects.get(pk=question.pk).avoidable is False
    finally:
        migrate(latest)
