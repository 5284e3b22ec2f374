"""sweeps.errors: the dashboard's own errors. A BadRequest is a ValidationError (forms and
`except ValidationError` keep taking it), a sweep too big is a PlanTooBig with code "too_big", an
unusable stored state is raised from agentcore's refusal, and `reaching` turns the broker's and the
database's errors, and only those, into ServiceUnreachable."""

from __future__ import annotations

import errno
import pickle

import pytest
from django import forms
from django.core.exceptions import ValidationError
from django.db import DatabaseError
from kombu.exceptions import OperationalError as BrokerDown

from agentcore import BadInput, CheckpointError, ConfigError, OverBudget, designs
from sweeps import configs, cost, replay
from sweeps.errors import (
    BadRequest,
    PlanTooBig,
    ServiceUnreachable,
    SweepsiteError,
    UnusableDurable,
    UnusableState,
    reaching,
    reading,
)
from tests.sweeps._web import LOOP


def test_a_bad_request_is_ours_and_a_validation_error_with_its_messages():
    e = BadRequest("runs must be between 1 and 10", code="invalid")
    assert isinstance(e, SweepsiteError) and isinstance(e, ValidationError)
    assert e.messages == ["runs must be between 1 and 10"] and e.error_list[0].code == "invalid"
    assert BadRequest(["one", "two"]).messages == ["one", "two"]
    form = forms.Form(data={})
    form.is_valid()
    form.add_error(None, e)
    assert form.non_field_errors() == ["runs must be between 1 and 10"]


def test_a_plan_too_big_is_a_bad_request_with_code_too_big():
    e = PlanTooBig("this sweep has more than 1 first crash points")
    assert isinstance(e, BadRequest) and e.error_list[0].code == "too_big"
    assert e.messages == ["this sweep has more than 1 first crash points"]
    again = pickle.loads(pickle.dumps(e))
    assert type(again) is PlanTooBig and again.messages == e.messages and again.code == "too_big"


def test_the_plan_s_refusal_is_a_plan_too_big(monkeypatch):
    monkeypatch.setattr(configs, "MAX_CHUNKS", 1)
    with pytest.raises(PlanTooBig) as e:
        configs.sweep_check(job_source=configs.builtin_job_source(), configs=LOOP, depth=1)
    assert e.value.messages[0].startswith("this sweep has more than 1 first crash points")


def test_a_request_over_its_bound_of_work_is_a_bad_request():
    assert issubclass(cost.TooCostly, BadRequest)
    assert cost.refusal("this witness", 10, 5).error_list[0].code == "too_costly"


def test_the_checks_refuse_with_bad_requests_and_agentcore_s_words():
    with pytest.raises(BadRequest, match="configuration 1: unknown design 'nope'"):
        configs.clean_configs([{"name": "x", "design": "nope", "tracker": "keyed"}])
    with pytest.raises(BadRequest, match="unknown tracker fault 'flaky'"):
        configs.clean_spelled("tracker_fault", "flaky")
    with pytest.raises(BadRequest, match="unknown built-in job"):
        configs.builtin_job_source("nope")


def test_an_unusable_durable_state_is_ours_and_agentcore_s_checkpoint_error():
    with pytest.raises(UnusableDurable) as e:
        replay.check_durable({"files": "garbage"}, "question 7")
    assert isinstance(e.value, UnusableState) and isinstance(e.value, CheckpointError)
    assert str(e.value).startswith("question 7: ") and isinstance(e.value.__cause__, CheckpointError)


def test_reading_a_stored_value_raises_agentcore_s_refusal_as_an_unusable_state():
    with (
        pytest.raises(
            UnusableState,
            match=r"^scenario 5: the stored state cannot be used \(ConfigError: unknown "
            r"design 'nope'",
        ) as e,
        reading("scenario 5"),
    ):
        designs.get("nope")
    assert isinstance(e.value.__cause__, ConfigError)


@pytest.mark.parametrize("e", [KeyError("x"), TypeError("x"), ValueError("x"), OverBudget(2, 1)])
def test_reading_leaves_every_other_error_alone(e):
    with pytest.raises(type(e)), reading("scenario 5"):
        raise e


@pytest.mark.parametrize(
    "e,full",
    [
        (BrokerDown("connection refused"), False),
        (DatabaseError("gone"), False),
        (ConnectionRefusedError("refused"), False),
        (OSError(errno.ENOSPC, "No space left on device"), True),
    ],
)
def test_reaching_turns_the_services_errors_into_service_unreachable(e, full):
    with pytest.raises(ServiceUnreachable) as caught, reaching():
        raise e
    assert caught.value.cause is e and caught.value.__cause__ is e and caught.value.disk_full is full
    assert caught.value.queue and str(caught.value) == f"{type(e).__name__}: {e}"


def test_reaching_the_database_alone_leaves_the_broker_s_errors_alone():
    with pytest.raises(ServiceUnreachable) as caught, reaching(queue=False):
        raise DatabaseError("gone")
    assert not caught.value.queue
    with pytest.raises(BrokerDown), reaching(queue=False):
        raise BrokerDown("connection refused")


@pytest.mark.parametrize("e", [ValidationError("x"), BadInput("x"), KeyError("x"), RuntimeError("x")])
def test_reaching_leaves_every_other_error_alone(e):
    with pytest.raises(type(e)), reaching():
        raise e
