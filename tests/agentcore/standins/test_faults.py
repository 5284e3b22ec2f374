"""The world's fault options: their spellings, the defaults (the chapter's world), and the report's
extra columns shown only when a row has them."""

import pytest

from agentcore import jobs, report
from agentcore.config import CONDITIONS, Config, conditions, table_configs
from agentcore.durable.designs import get
from agentcore.records import TableRow
from agentcore.standins import faults

TRIAGE = jobs.load("triage")


@pytest.mark.parametrize("spec,n", [("first", 1), ("k:0", 0), ("k:3", 3), ("always", None)])
def test_tool_faults_spellings(spec, n):
    assert faults.tool_failures(spec) == n


@pytest.mark.parametrize(
    "spec,parsed",
    [
        ("truthful", ("truthful", 0.0)),
        ("deny:0.25", ("deny", 0.25)),
        ("wrong:1", ("wrong", 1.0)),
        ("adversarial", ("adversarial", 1.0)),
    ],
)
def test_person_spellings(spec, parsed):
    assert faults.person_faults(spec) == parsed


@pytest.mark.parametrize(
    "spec,parsed",
    [
        ("none", ("none", None)),
        ("crash", ("crash", None)),
        ("ttl:5", ("ttl", 5)),
        ("strict-params", ("strict-params", None)),
    ],
)
def test_tracker_fault_spellings(spec, parsed):
    assert faults.tracker_fault(spec) == parsed


@pytest.mark.parametrize(
    "parse,spec,message",
    [
        (faults.tool_failures, "k:-1", "N must be a whole number"),
        (faults.tool_failures, "sometimes", "first, k:N"),
        (faults.person_faults, "deny:1.5", "P must be a probability"),
        (faults.person_faults, "deny:nan", "probability"),
        (faults.person_faults, "liar", "truthful, deny:P"),
        (faults.model, "smart", "fixed, fresh-ids, fickle"),
        (faults.tracker_fault, "ttl:0", "N must be a whole number from 1"),
        (faults.tracker_fault, "flaky", "ttl:N"),
        (faults.tracker_fault, "ttl:\u0665", "N must be a whole number"),
        (faults.tracker_fault, "ttl:\u00b2", "N must be a whole number"),
    ],
)
def test_a_bad_spelling_is_a_value_error_that_lists_the_choices(parse, spec, message):
    with pytest.raises(ValueError, match=message):
        parse(spec)


def test_the_defaults_are_the_chapter_s_world():
    cfg = Config(TRIAGE, get("loop"), "keyed")
    assert {c: getattr(cfg, c) for c in CONDITIONS} == CONDITIONS
    assert cfg.conditions == "panic, fsync on"


def test_conditions_name_each_fault_not_at_its_default():
    words = conditions(tracker_fault="ttl:3", tool_faults="always", person_faults="wrong:0.5", model="fickle", seed=7)
    assert words == (
        "panic, fsync on, tracker fault: ttl:3, tool faults: always, person: wrong:0.5, model: fickle, seed: 7"
    )
    assert conditions(seed=7) == "panic, fsync on"  # nothing random uses the seed


def test_a_config_refuses_a_bad_fault():
    with pytest.raises(ValueError, match="unknown model"):
        Config(TRIAGE, get("loop"), "keyed", model="clever")
    with pytest.raises(ValueError, match="seed"):
        Config(TRIAGE, get("loop"), "keyed", seed=-1)
    with pytest.raises(TypeError, match="unknown conditions: weather"):
        table_configs(TRIAGE, weather="rain")


def test_text_and_markdown_show_an_extra_column_only_when_a_row_has_it():
    quiet, loud = TableRow("a", once=1), TableRow("b", once=1, wrong=2)
    assert "wrong" not in report.render([quiet], "text")
    assert "wrong" in report.render([quiet, loud], "text") and "| wrong |" in report.render([loud], "markdown")
    assert "wrong" in report.render([quiet], "csv")  # CSV and JSON carry every column
