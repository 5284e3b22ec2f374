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
