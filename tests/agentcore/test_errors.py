"""agentcore's errors share one base: a caller catches AgentcoreError for anything agentcore refuses,
and a bad input is still a ValueError."""

from __future__ import annotations

import pytest

from agentcore.durable.checkpoint import CheckpointError
from agentcore.errors import AgentcoreError, BadInput, ConfigError
from agentcore.harness.disk import OverBudget, WorkBudget
from agentcore.jobs import JobError, parse


def test_a_bad_job_is_ours_and_a_value_error():
    with pytest.raises(JobError) as e:
        parse("{", "t.json")
    assert isinstance(e.value, AgentcoreError) and isinstance(e.value, BadInput) and isinstance(e.value, ValueError)
    assert str(e.value).startswith("t.json: file: not valid JSON")


def test_every_kind_has_the_one_base():
    for kind in (JobError, ConfigError, CheckpointError, OverBudget):
        assert issubclass(kind, AgentcoreError)
    assert issubclass(ConfigError, ValueError) and not issubclass(CheckpointError, ValueError)


def test_work_past_its_budget_is_ours():
    budget = WorkBudget(1)
    with pytest.raises(AgentcoreError):
        budget.charge(2)


def test_an_unknown_name_is_a_config_error():
    from agentcore import designs, faults, report, world
    from agentcore.checker.render import render as render_audit
    from agentcore.conditions import NAMED
    from agentcore.standins.tracker import Tracker

    for refused in (
        lambda: designs.get("nope"),
        lambda: designs.get("loop", ("nope",)),
        lambda: world("nope"),
        lambda: report.render([], "nope"),
        lambda: render_audit(None, "nope"),
        lambda: faults.tracker_fault("flaky"),
        lambda: faults.tool_failures("k:101"),
        lambda: Tracker("nope"),
        lambda: NAMED["crash_model"].check("earthquake"),
        lambda: NAMED["seed"].check(-1),
    ):
        with pytest.raises(ConfigError):
            refused()


def test_input_out_of_range_is_bad_input_and_a_value_error():
    from agentcore import Config, designs, jobs
    from agentcore.records import ScenarioRecord

    job = jobs.load("triage")
    for refused, words in (
        (lambda: Config(job, designs.get("loop"), "keyed", runs=0), "runs must be between"),
        (lambda: ScenarioRecord.from_dict({"nope": 1}), "unknown scenario record fields"),
        (lambda: jobs.turn_pairs_source(0), "turn pairs must be"),
    ):
        with pytest.raises(BadInput, match=words) as e:
            refused()
        assert isinstance(e.value, ValueError) and not isinstance(e.value, ConfigError)


def test_the_command_line_says_agentcore_s_refusals_and_lets_a_programming_error_through(monkeypatch, capsys):
    import agentcore as sweep
    from agentcore import cli

    assert cli.main(["audit", "--tracker", "nope", "--design", "loop"]) == 2
    assert capsys.readouterr().err.startswith("agentcore: error: unknown tracker mode 'nope'")

    def bug(*args, **kw):
        raise ValueError("a bug, not bad input")

    monkeypatch.setattr(sweep, "sweep", bug)
    with pytest.raises(ValueError, match="a bug"):
        cli.main(["sweep", "--design", "loop", "--tracker", "keyed", "--depth", "1"])
