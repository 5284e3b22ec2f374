"""views/errors.py: the pages map the dashboard's own errors (sweeps.errors) and nothing else. An
unusable stored state is shown on its page, a service that does not answer is a 503 (a full disk a
507); a plain KeyError out of a service is a programming error, a 500, never a state page."""

from __future__ import annotations

import errno

import pytest
from django.db import OperationalError as DatabaseDown
from django.test import Client
from django.urls import reverse
from kombu.exceptions import OperationalError as BrokerDown

from sweeps import replay
from sweeps.errors import UnusableState
from sweeps.models import Scenario, Sweep
from sweeps.services import launch, recovery, timelines
from tests.sweeps import _data
from tests.sweeps._web import launch_data, logged_in, text

pytestmark = pytest.mark.django_db


def raising(e: BaseException):
    def call(*args, **kw):
        raise e

    return call


def quiet(user) -> Client:
    """A client that gets the 500 page instead of the view's exception."""
    c = Client(raise_request_exception=False)
    c.force_login(user)
    return c


@pytest.fixture
def scenario(sweep):
    return Scenario.objects.filter(sweep=sweep).first()


def test_a_plain_key_error_from_a_service_is_a_500_not_a_state_page(client, user, scenario, monkeypatch):
    monkeypatch.setattr(timelines, "scenario_timeline", raising(KeyError("design")))
    with pytest.raises(KeyError):
        client.get(reverse("sweeps:scenario", args=[scenario.pk]))
    r = quiet(user).get(reverse("sweeps:scenario", args=[scenario.pk]))
    assert r.status_code == 500 and 'id="timeline-error"' not in text(r)


@pytest.mark.parametrize(
    "e", [TypeError("x"), AttributeError("x"), IndexError("x"), ValueError("x"), RecursionError("x")]
)
def test_no_programming_error_is_shown_as_an_unusable_state(client, scenario, monkeypatch, e):
    monkeypatch.setattr(timelines, "scenario_timeline", raising(e))
    with pytest.raises(type(e)):
        client.get(reverse("sweeps:scenario", args=[scenario.pk]))


def test_an_unusable_state_is_shown_on_its_page(client, scenario, monkeypatch):
    monkeypatch.setattr(
        timelines,
        "scenario_timeline",
        raising(UnusableState(f"scenario {scenario.pk}: the stored state cannot be used (x)")),
    )
    r = client.get(reverse("sweeps:scenario", args=[scenario.pk]))
    assert r.status_code == 200 and 'id="timeline-error"' in text(r)
    assert f"scenario {scenario.pk}: the stored state cannot be used (x)" in text(r)


def test_a_corrupt_stored_sweep_is_an_unusable_state_naming_its_scenario():
    s = _data.make_sweep(1)
    sc = _data.add(s, 0, 1)
    Sweep.objects.filter(pk=s.pk).update(configs=[{"name": "x"}])
    with pytest.raises(UnusableState, match=f"scenario {sc.pk}: the stored state cannot be used"):
        timelines.scenario_timeline(scenario_id=sc.pk)


def test_the_question_queue_shows_an_unusable_state_and_not_a_key_error(client, user, sweep, waiting, monkeypatch):
    url = reverse("sweeps:sweep_questions", args=[sweep.pk])
    monkeypatch.setattr(replay, "check_durable", raising(UnusableState("question 1: checkpoint x: corrupt")))
    page = text(client.get(url))
    assert all(f'id="question-error-{q.pk}"' in page for q in waiting)
    monkeypatch.setattr(replay, "check_durable", raising(KeyError("files")))
    assert quiet(user).get(url).status_code == 500


def test_a_launch_with_the_broker_down_is_a_503_and_a_full_disk_a_507(auth, monkeypatch):
    monkeypatch.setattr(launch, "sweep_create", raising(BrokerDown("connection refused")))
    r = auth.post(reverse("sweeps:launch"), launch_data())
    assert r.status_code == 503 and "the queue or the database is unreachable (connection refused)" in text(r)
    monkeypatch.setattr(launch, "sweep_create", raising(OSError(errno.ENOSPC, "No space left on device")))
    r = auth.post(reverse("sweeps:launch"), launch_data())
    assert r.status_code == 507 and "the disk is full (No space left on device)" in text(r)
    assert Sweep.objects.count() == 0


def test_a_launch_whose_service_raises_a_plain_value_error_is_a_500(user, monkeypatch):
    monkeypatch.setattr(launch, "sweep_create", raising(ValueError("a bug")))
    r = quiet(user).post(reverse("sweeps:launch"), launch_data())
    assert r.status_code == 500


def test_an_action_says_what_did_not_answer_and_a_key_error_is_a_500(user, sweep, monkeypatch):
    auth = logged_in(user)
    url = reverse("sweeps:resume", args=[sweep.pk])
    monkeypatch.setattr(recovery, "sweep_resume", raising(DatabaseDown("gone")))
    page = text(auth.post(url, follow=True))
    assert "could not resume: the queue or the database is unreachable (gone)" in page
    monkeypatch.setattr(recovery, "sweep_resume", raising(KeyError("x")))
    assert quiet(user).post(url).status_code == 500
