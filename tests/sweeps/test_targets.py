"""sweeps/targets.py: registered agents swept from the dashboard through the port, counted as the
command line counts them."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from agentcore import jobs
from agentcore.port import sweep_target
from agentcore.port.labels import kind_of
from agentcore.records import table_row
from sweeps import selectors, targets
from sweeps.models import Chunk, Scenario, Sweep
from sweeps.services import launch
from tests.sweeps._web import TRIAGE, run_all

pytestmark = pytest.mark.django_db
JOB = jobs.load("triage")


@pytest.fixture(autouse=True)
def _registered(settings):
    settings.SWEEPSITE_TARGETS = (
        "naive=examples.plain_loop:naive; keyed=examples.plain_loop:keyed; "
        "threaded=tests.agentcore.port.targets:threaded; shifting=tests.agentcore.port.targets:shifting"
    )
    targets._plans.clear()


def create(names, **kw):
    return launch.sweep_create(user=None, job_source=TRIAGE, targets=names, depth=kw.pop("depth", 1), **kw)


def test_the_examples_are_registered_when_the_operator_registered_none():
    names = targets.parse_registry(None)
    assert {"plain-naive", "plain-keyed"} <= set(names)
    assert names["plain-naive"].target == "examples.plain_loop:naive"


def test_a_registration_names_its_interpreter_after_an_at():
    reg = targets.parse_registry("mine=my.agent:run@/opt/venv/bin/python")["mine"]
    assert (reg.target, reg.python) == ("my.agent:run", "/opt/venv/bin/python")


def test_a_json_registration_can_fix_the_passes():
    reg = targets.parse_registry('{"mine": {"target": "my.agent:run", "samples": 3}}')["mine"]
    assert reg.samples == 3


@pytest.mark.parametrize("text", ["mine", "mine=nomodule", '{"mine": {"samples": 2}}'])
def test_a_malformed_registration_is_refused_saying_which(text):
    with pytest.raises(ValueError, match="SWEEPSITE_TARGETS"):
        targets.parse_registry(text)


def test_a_malformed_registration_fails_django_s_check_as_make_run_starts(settings):
    settings.SWEEPSITE_TARGETS = "mine=nomodule"
    (error,) = targets.check_registry()
    assert error.id == "sweeps.E001" and "'mine=nomodule'" in error.msg
    settings.SWEEPSITE_TARGETS = "mine=my.agent:run"
    assert targets.check_registry() == []


def test_an_unregistered_name_is_refused_and_nothing_is_stored():
    with pytest.raises(ValidationError, match="no target is registered as 'examples.plain_loop:naive'"):
        create(["examples.plain_loop:naive"])
    assert not Sweep.objects.exists()


def test_a_condition_a_target_does_not_take_is_refused_not_ignored():
    with pytest.raises(ValidationError, match="takes none of: crash model"):
        create(["naive"], crash_model="power-cut")
    assert not Sweep.objects.exists()


def test_a_target_whose_points_shift_is_refused_with_the_difference():
    with pytest.raises(ValidationError, match="two uninterrupted runs met different points"):
        create(["shifting"])
    assert not Sweep.objects.exists()


def test_a_chunk_per_point_of_the_uninterrupted_run():
    sweep = create(["naive"])
    labels = list(Chunk.objects.filter(sweep=sweep).order_by("first_point").values_list("label", flat=True))
    assert labels == sweep_target("examples.plain_loop:naive", JOB, "triage").labels
    assert sweep.model == "fresh-ids"  # a real provider's, unless the launch chose another


@pytest.mark.parametrize("depth", [1, 2])
def test_the_dashboard_s_rows_are_the_command_line_s(depth):
    sweep = run_all(create(["naive", "keyed"], depth=depth))
    assert sweep.status == Sweep.Status.DONE
    rows = selectors.sweep_table(sweep)
    for row, target in zip(rows, ["naive", "keyed"], strict=True):
        cli = table_row(target, sweep_target(f"examples.plain_loop:{target}", JOB, "triage", depth=depth).records)
        assert row.to_dict() | {"name": target} == cli.to_dict()
    assert rows[0].with_dups > 0 and rows[1].with_dups == 0  # the planted bug caught, the keyed loop clean


def test_a_model_that_repeats_its_ids_is_the_launch_s_choice():
    sweep = create(["keyed"], model="fixed")
    assert sweep.model == "fixed"


def test_every_scenario_is_stored_with_its_timeline_its_saves_in_the_checkpoint_lane():
    sweep = run_all(create(["naive"]))
    sc = Scenario.objects.filter(sweep=sweep, first_kind="put").first()
    assert sc is not None and sc.timeline is not None and sc.effects is not None
    kinds = [e["kind"] for e in sc.timeline]
    assert kinds[0] == "start" and "crash" in kinds and "restart" in kinds and "save" in kinds
    assert {kind_of(c) for c in Chunk.objects.filter(sweep=sweep).values_list("label", flat=True)} >= {"put", "reply"}


def test_a_target_whose_order_changes_is_sampled_in_one_row_with_intervals(monkeypatch, tmp_path):
    monkeypatch.setenv("THREADED_FLIP", str(tmp_path / "flip"))  # its two uninterrupted runs differ
    sweep = run_all(create(["threaded"]))
    assert len(sweep.configs) == 5 and {c["name"] for c in sweep.configs} == {"threaded [sampled, k=5]"}
    (row,) = selectors.sweep_table(sweep)
    assert row.once == Scenario.objects.filter(sweep=sweep).count() == Chunk.objects.filter(sweep=sweep).count()
    assert row.once % 5 == 0  # each pass a chunk per point
    (sampled,) = selectors.sampled_rates(sweep)
    assert sampled["samples"] == 5 and sampled["rates"][0].startswith("with duplicates 0/")
    assert "95% CI" in sampled["rates"][0]


@pytest.mark.django_db(transaction=True)
def test_real_workers_sweep_a_registered_agent_as_the_command_line_does(settings, celery_workers, wait_until):
    settings.SWEEPSITE_TARGETS = None  # the workers' registry: the examples, as `make run` has them
    sweep = create(["plain-naive", "plain-keyed"], depth=2)
    wait_until(lambda: Sweep.objects.get(pk=sweep.pk).status == Sweep.Status.DONE, timeout=120, what="the sweep done")
    rows = selectors.sweep_table(Sweep.objects.get(pk=sweep.pk))
    for row, target in zip(rows, ["naive", "keyed"], strict=True):
        cli = table_row(row.name, sweep_target(f"examples.plain_loop:{target}", JOB, "triage", depth=2).records)
        assert row == cli
