"""The models' fields for issue 12: a sweep's conditions (crash model, fsync, tracker fault) and the
scenario status "corrupt". (Status edges: test_transitions.py.)"""

from __future__ import annotations

from dataclasses import fields

import pytest

from agentcore.config import CRASH_MODELS, Config
from agentcore.faults import TRACKER_FAULT_WORDS as TRACKER_FAULTS
from sweeps.configs import Conditions
from sweeps.limits import CONDITION_CHARS
from sweeps.models import Scenario, Sweep
from tests.sweeps import _data


def test_a_sweep_s_conditions_default_to_agentcore_s():
    defaults = {f.name: f.default for f in fields(Config)}
    assert {name: Sweep._meta.get_field(name).default for name in ("crash_model", "fsync", "tracker_fault")} == {
        name: defaults[name] for name in ("crash_model", "fsync", "tracker_fault")}


def test_the_conditions_tuple_defaults_to_agentcore_s():
    defaults = {f.name: f.default for f in fields(Config)}
    assert Conditions()._asdict() == {name: defaults[name] for name in Conditions._fields}


def test_the_conditions_choices_are_agentcore_s():
    assert [c for c, _ in Sweep._meta.get_field("crash_model").choices] == list(CRASH_MODELS)
    assert [c for c, _ in Sweep._meta.get_field("tracker_fault").choices] == list(TRACKER_FAULTS)


def test_every_crash_model_and_tracker_fault_fits_its_column():
    assert max(len(n) for n in CRASH_MODELS + TRACKER_FAULTS) <= CONDITION_CHARS


def test_a_sweep_says_its_conditions_in_agentcore_s_words():
    sweep = Sweep(crash_model="power-cut", fsync=False, tracker_fault="crash")
    assert sweep.conditions == "power-cut, fsync off, tracker fault: crash"
    assert Sweep().conditions == "panic, fsync on"


def test_a_sweep_says_fsync_as_the_command_line_does():
    assert (Sweep(fsync=True).fsync_option, Sweep(fsync=False).fsync_option) == ("on", "off")


@pytest.mark.django_db
def test_a_corrupt_scenario_is_stored_and_read_back():
    sweep = _data.make_sweep(1)
    pk = _data.add(sweep, 0, 1, status=Scenario.Status.CORRUPT).pk
    assert Scenario.objects.get(pk=pk).status == "corrupt"
    assert "corrupt" in Scenario.Status.values
