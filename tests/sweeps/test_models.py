"""The models' fields for issues 12 and 13: a sweep's conditions (crash model, fsync, and the world's
faults), the scenario status "corrupt", a question's avoidable. (Status edges: test_transitions.py.)"""

from __future__ import annotations

from dataclasses import fields

import pytest

from agentcore import MODELS, Config
from agentcore.config import CRASH_MODELS  # the names, in order
from agentcore.standins.faults import MAX_TOOL_FAILURES, MAX_TTL
from sweeps.configs import Conditions
from sweeps.limits import CONDITION_CHARS
from sweeps.models import Question, Scenario, Sweep
from tests.sweeps import _data


def test_a_sweep_s_conditions_default_to_agentcore_s():
    defaults = {f.name: f.default for f in fields(Config)}
    assert {name: Sweep._meta.get_field(name).default for name in Conditions._fields} == {
        name: defaults[name] for name in Conditions._fields
    }


def test_the_conditions_tuple_defaults_to_agentcore_s():
    defaults = {f.name: f.default for f in fields(Config)}
    assert Conditions()._asdict() == {name: defaults[name] for name in Conditions._fields}


def test_the_conditions_choices_are_agentcore_s():
    assert [c for c, _ in Sweep._meta.get_field("crash_model").choices] == list(CRASH_MODELS)
    assert [c for c, _ in Sweep._meta.get_field("model").choices] == list(MODELS)


def test_a_tracker_fault_with_a_number_is_no_choice_but_a_spelling():
    """ttl:N takes any N agentcore takes: the column has no fixed choices (sweeps.configs checks it)."""
    assert not Sweep._meta.get_field("tracker_fault").choices


@pytest.mark.parametrize("name", ["crash_model", "tracker_fault", "tool_faults", "person_faults", "model"])
def test_every_condition_s_longest_plain_spelling_fits_its_column(name):
    longest = {
        "crash_model": CRASH_MODELS,
        "tracker_fault": ("strict-params", f"ttl:{MAX_TTL}"),
        "tool_faults": ("always", f"k:{MAX_TOOL_FAILURES}"),
        "person_faults": ("adversarial", "wrong:0.5"),
        "model": MODELS,
    }[name]
    assert max(len(n) for n in longest) <= Sweep._meta.get_field(name).max_length == CONDITION_CHARS


def test_a_sweep_says_its_conditions_in_agentcore_s_words():
    sweep = Sweep(crash_model="power-cut", fsync=False, tracker_fault="crash")
    assert sweep.conditions == "power-cut, fsync off, tracker fault: crash"
    assert Sweep().conditions == "panic, fsync on"


def test_a_sweep_says_its_world_in_agentcore_s_words():
    sweep = Sweep(tracker_fault="ttl:5", tool_faults="always", person_faults="wrong:0.5", model="fickle", seed=3)
    assert sweep.conditions == (
        "panic, fsync on, tracker fault: ttl:5, tool faults: always, person: wrong:0.5, model: fickle, seed: 3"
    )


def test_a_sweep_says_fsync_as_the_command_line_does():
    assert (Sweep(fsync=True).fsync_option, Sweep(fsync=False).fsync_option) == ("on", "off")


@pytest.mark.django_db
def test_a_corrupt_scenario_is_stored_and_read_back():
    sweep = _data.make_sweep(1)
    pk = _data.add(sweep, 0, 1, status=Scenario.Status.CORRUPT).pk
    assert Scenario.objects.get(pk=pk).status == "corrupt"
    assert "corrupt" in Scenario.Status.values


@pytest.mark.django_db
def test_a_question_is_necessary_unless_stored_avoidable():
    sc = _data.add(_data.make_sweep(1), 0, 1, status=Scenario.Status.WAITING)
    assert _data.question(sc, "0:call_1").avoidable is False
    assert Question.objects.get(pk=_data.question(sc, "0:call_2", avoidable=True).pk).avoidable is True
