"""Any bytes given as a job file end in a Job or a JobError naming the source, never another error."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentcore.jobs import Job, JobError, parse

pytestmark = pytest.mark.fuzz

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4),
    max_leaves=30,
)
fields = st.sampled_from(
    [
        "name",
        "tools",
        "turns",
        "op",
        "calls",
        "id",
        "tool",
        "args",
        "final",
        "$result",
        "field",
        "read_only",
        "create_issue",
        "comment",
        "search",
        "label",
    ]
)
jobish = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8) | fields,
    lambda c: st.lists(c, max_size=4) | st.dictionaries(fields, c, max_size=5),
    max_leaves=40,
)


def check(raw):
    try:
        job = parse(raw, "fuzz.json")
    except JobError as e:
        assert str(e).startswith("fuzz.json: ")
        return
    assert isinstance(job, Job)


@settings(max_examples=600, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes(raw):
    check(raw)


@settings(max_examples=600, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(jobish)
def test_job_shaped_json(value):
    check(json.dumps(value))


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(json_values)
def test_any_json(value):
    check(json.dumps(value))
