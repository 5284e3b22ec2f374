"""Fixtures of the pages' tests: users and clients by role, and sweeps' rows made directly."""

from __future__ import annotations

import pytest
from django.test import Client

from sweeps.models import Scenario
from tests.sweeps import _data
from tests.sweeps._web import logged_in, member


# The pages' own behaviour, as their users see it: `client` reads as a viewer, `auth` and `other` act
# as staff (the sweeps here have no owner); `anon` is nobody logged in. Who may do what is
# test_roles.py's.
@pytest.fixture
def client():
    return logged_in(member("vic", "viewer"))


@pytest.fixture
def anon():
    return Client()


@pytest.fixture
def user():
    return member("ann", "staff", password="pw-ann-123")


@pytest.fixture
def other():
    return member("bob", "staff", password="pw-bob-123")


@pytest.fixture
def auth(user):
    return logged_in(user)


@pytest.fixture
def sweep():
    """Three configurations: two with rows, one with a chunk not stored yet."""
    s = _data.make_sweep(3, total_chunks=4)
    _data.add(s, 0, 1)
    _data.add(s, 0, 1, 1, duplicates=2, asks=1, avoidable=1)
    _data.add(s, 0, 2, missing=1, wrong=1, gave_up=1)
    _data.add(s, 0, 2, 1, calls_plus=3, denied_ran=2)
    _data.add(s, 1, 1, duplicates=1)
    _data.chunk(s, 0, 1, scenarios=2)
    _data.chunk(s, 0, 2, scenarios=2)
    _data.chunk(s, 1, 1, scenarios=1)
    _data.chunk(s, 2, 1, stored=False, scenarios=0)
    return s


@pytest.fixture
def waiting(sweep):
    """Two open questions on waiting scenarios: one whose call happened, one whose call did not."""
    a = _data.add(sweep, 2, 1, status=Scenario.Status.WAITING)
    b = _data.add(sweep, 2, 2, status=Scenario.Status.WAITING)
    return [_data.question(a, "0:call_1", truth=True), _data.question(b, "0:call_2", truth=False, key="")]


@pytest.fixture
def deep():
    """A depth-3 sweep: configuration 0 crashed at first point 1 has two twice scenarios (second points
    1 and 2) and three thrice ones; configuration 1 only a once scenario."""
    s = _data.make_sweep(2, depth=3, total_chunks=2)
    _data.add(s, 0, 1)
    _data.add(s, 0, 1, 1, duplicates=1)
    _data.add(s, 0, 1, 1, third_point=1, third_kind="tool-returned", third_label="tool-returned r1", duplicates=2)
    _data.add(s, 0, 1, 1, third_point=2, third_kind="result-saved", third_label="result-saved r2", asks=1)
    _data.add(s, 0, 1, 2)
    _data.add(s, 0, 1, 2, third_point=1, third_kind="reply-arrived", third_label="reply-arrived r1", missing=1)
    _data.add(s, 1, 1)
    _data.chunk(s, 0, 1, scenarios=6)
    _data.chunk(s, 1, 1, scenarios=1)
    return s
