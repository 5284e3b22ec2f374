"""sweeps/configs.py: the checks a launch shares, the chunk plan, agentcore's configurations of a
sweep and their names."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from sweeps import configs as sweep_configs
from sweeps.models import Sweep
from tests.sweeps._web import LOOP, MARKERS, POWER_CUT, TRIAGE, create

pytestmark = pytest.mark.django_db


def test_sweep_check_rejects_bad_conditions_as_create_does():
    with pytest.raises(ValidationError, match="crash model must be one of"):
        sweep_configs.sweep_check(job_source=TRIAGE, configs=LOOP, depth=1, crash_model="earthquake")


@pytest.mark.parametrize(
    "bad",
    [
        {"tracker_fault": "ttl:0"},
        {"tool_faults": "k:x"},
        {"person_faults": "deny:-1"},
        {"model": "fickle "},
        {"seed": -3},
    ],
)
def test_sweep_check_rejects_a_bad_world_as_create_does(bad):
    with pytest.raises(ValidationError) as checked:
        sweep_configs.sweep_check(job_source=TRIAGE, configs=LOOP, depth=1, **bad)
    with pytest.raises(ValidationError) as created:
        create(**bad)
    assert checked.value.messages == created.value.messages and Sweep.objects.count() == 0


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


def test_a_custom_configuration_is_named_as_the_table_names_it():
    """The same design and tracker mode, the same name, in a custom sweep and in the table."""
    table = {(c["design"], c["tracker"]): c["name"] for c in sweep_configs.table_configs_for()}
    custom = sweep_configs.configs_for(["loop", "keys"], ["keyed", "keyless", "lookup"])
    assert [c["name"] for c in custom] == [
        "real loop, keyed tracker",
        "real loop, keyless tracker",
        "loop, lookup tracker",
        "+ idempotency keys",
        "keys, keyless tracker",
        "keys, lookup tracker",
    ]
    assert all(c["name"] == table[c["design"], c["tracker"]] for c in custom if (c["design"], c["tracker"]) in table)
