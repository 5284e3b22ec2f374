"""Migrations: a sweep stored before issue 12's conditions gets agentcore's defaults."""

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
            "panic", True, "none")
    finally:
        migrate(latest)
