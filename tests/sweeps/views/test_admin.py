"""The admin's pages of the sweeps' rows, and the login page."""

from __future__ import annotations

import pytest
from django.urls import reverse

from sweeps.models import Sweep
from tests.sweeps._web import text

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("model", ["sweep", "chunk", "scenario", "question"])
def test_admin_lists(admin_client, waiting, model):
    assert admin_client.get(reverse(f"admin:sweeps_{model}_changelist")).status_code == 200


def test_admin_shows_the_world_and_filters_questions_by_need(admin_client, waiting):
    Sweep.objects.filter(pk=waiting[0].sweep_id).update(tracker_fault="ttl:5", seed=9)
    page = text(admin_client.get(reverse("admin:sweeps_sweep_changelist")))
    assert "ttl:5" in page and "column-seed" in page
    r = admin_client.get(reverse("admin:sweeps_question_changelist") + "?avoidable__exact=1")
    assert r.status_code == 200 and "0 questions" in text(r)


def test_admin_change_pages(admin_client, waiting):
    q = waiting[0]
    for model, pk in (("sweep", q.sweep_id), ("scenario", q.scenario_id), ("question", q.pk)):
        assert admin_client.get(reverse(f"admin:sweeps_{model}_change", args=[pk])).status_code == 200


def test_admin_refuses_anonymous(anon):
    assert anon.get(reverse("admin:sweeps_sweep_changelist")).status_code == 302


def test_login_page(anon):
    r = anon.get(reverse("login"))
    assert r.status_code == 200 and "csrfmiddlewaretoken" in text(r)
