"""views/questions.py: the question queues, answers and who gave them."""

from __future__ import annotations

import html
import re

import pytest
from django.test import Client
from django.urls import reverse

from sweeps.models import Question, Scenario
from tests.sweeps import _data
from tests.sweeps._web import text

pytestmark = pytest.mark.django_db


def test_question_queue_shows_what_the_person_needs(client, sweep, waiting):
    page = text(client.get(reverse("sweeps:sweep_questions", args=[sweep.pk])))
    assert "create_issue call_1" in page and "k-0:call_1" in page
    assert "lookup found nothing; asking" in page
    assert html.escape('{"title": "Login fails"}') in page
    assert reverse("sweeps:scenario", args=[waiting[0].scenario_id]) in page


def test_a_question_names_its_run_as_timelines_do(client, sweep, waiting):
    _data.question(_data.add(sweep, 2, 3, status=Scenario.Status.WAITING), "1:call_4")
    page = text(client.get(reverse("sweeps:sweep_questions", args=[sweep.pk])))
    assert re.findall(r'<span class="muted run-name">\((.*?)\)</span>', page) == ["run-1", "run-1", "run-2"]
    assert "run 0:call_1" not in page


def test_global_question_queue(client, sweep, waiting):
    other = _data.make_sweep(1)
    _data.question(_data.add(other, 0, 1, status=Scenario.Status.WAITING), "0:call_9")
    page = text(client.get(reverse("sweeps:questions")))
    assert '<span id="open-count">3</span>' in page


def test_answer_records_who_and_when(auth, user, waiting):
    q = waiting[0]
    r = auth.post(reverse("sweeps:answer", args=[q.pk]), {"happened": "yes"})
    assert r.status_code == 302
    q.refresh_from_db()
    assert (q.status, q.answer, q.answered_by) == (Question.Status.ANSWERED, True, user)
    assert q.answered_at is not None


def test_answered_questions_show_who_and_whether_right(auth, sweep, waiting):
    auth.post(reverse("sweeps:answer", args=[waiting[0].pk]), {"happened": "yes"})
    auth.post(reverse("sweeps:answer", args=[waiting[1].pk]), {"happened": "yes"})
    page = text(auth.get(reverse("sweeps:sweep_questions", args=[sweep.pk]) + "?status=answered"))
    assert page.count("ann,") == 2
    assert page.count('class="right"') == 1 and page.count('class="error wrong"') == 1


def test_answer_twice_keeps_the_first(auth, other, waiting):
    q = waiting[0]
    auth.post(reverse("sweeps:answer", args=[q.pk]), {"happened": "no"})
    c = Client()
    c.force_login(other)
    r = c.post(reverse("sweeps:answer", args=[q.pk]), {"happened": "yes"}, follow=True)
    assert "already answered by ann; the first answer was kept" in text(r)
    q.refresh_from_db()
    assert q.answer is False


def test_answer_redirects_to_a_safe_next_only(auth, waiting):
    r = auth.post(reverse("sweeps:answer", args=[waiting[0].pk]), {"happened": "yes", "next": "https://evil.example/"})
    assert r["Location"] == reverse("sweeps:sweep_questions", args=[waiting[0].sweep_id])


def test_answer_by_anonymous_is_403(anon, waiting):
    assert anon.post(reverse("sweeps:answer", args=[waiting[0].pk]), {"happened": "yes"}).status_code == 403
    assert Question.objects.get(pk=waiting[0].pk).status == Question.Status.OPEN


def test_answer_needs_csrf(user, waiting):
    c = Client(enforce_csrf_checks=True)
    c.force_login(user)
    assert c.post(reverse("sweeps:answer", args=[waiting[0].pk]), {"happened": "yes"}).status_code == 403


def test_answer_form_carries_csrf(auth, sweep, waiting):
    assert "csrfmiddlewaretoken" in text(auth.get(reverse("sweeps:sweep_questions", args=[sweep.pk])))


def test_answer_needs_yes_or_no(auth, waiting):
    assert auth.post(reverse("sweeps:answer", args=[waiting[0].pk]), {"happened": "perhaps"}).status_code == 400


def test_answer_unknown_question_is_404(auth):
    assert auth.post(reverse("sweeps:answer", args=[999]), {"happened": "yes"}).status_code == 404


def test_answer_all_truthfully(auth, sweep, waiting):
    r = auth.post(reverse("sweeps:answer_all", args=[sweep.pk]), follow=True)
    assert "2 open questions answered" in text(r)
    assert all(q.answer == q.truth for q in Question.objects.all())


def test_answer_all_by_anonymous_is_403(anon, sweep, waiting):
    assert anon.post(reverse("sweeps:answer_all", args=[sweep.pk])).status_code == 403


def queue_rows(page: str) -> dict[str, str]:
    """{question call: its need cell's word} from the question queue's table."""
    rows = re.findall(r'<code>create_issue (call_\d+)</code>.*?<td class="need">(.*?)</td>', page, re.S)
    return {call: re.sub(r"<[^>]+>", "", need) for call, need in rows}


def test_the_queue_says_which_questions_were_avoidable(client, sweep, waiting):
    Question.objects.filter(pk=waiting[1].pk).update(avoidable=True)
    page = text(client.get(reverse("sweeps:sweep_questions", args=[sweep.pk])))
    assert queue_rows(page) == {"call_1": "necessary", "call_2": "avoidable"}


@pytest.mark.parametrize(
    ("need", "shown", "open_count"),
    [
        ("necessary", {"call_1": "necessary"}, 1),
        ("avoidable", {"call_2": "avoidable"}, 1),
        ("", {"call_1": "necessary", "call_2": "avoidable"}, 2),
    ],
)
def test_the_queue_filters_necessary_or_avoidable_questions(client, sweep, waiting, need, shown, open_count):
    Question.objects.filter(pk=waiting[1].pk).update(avoidable=True)
    page = text(client.get(reverse("sweeps:sweep_questions", args=[sweep.pk]) + f"?need={need}"))
    assert queue_rows(page) == shown and f'<span id="open-count">{open_count}</span>' in page


def test_the_queue_filter_is_kept_by_the_status_links_and_says_when_none_match(client, sweep, waiting):
    page = text(client.get(reverse("sweeps:questions") + "?need=avoidable"))
    assert 'href="?status=answered&amp;need=avoidable"' in page
    assert re.search(r'<a href="\?status=open&amp;need=avoidable" aria-current="page"', page)
    assert "No open avoidable question." in page


@pytest.mark.parametrize("query", ["status=closed", "page=0", "page=y", "need=maybe", "need=1"])
def test_question_list_bad_values_are_400(client, sweep, query):
    assert client.get(reverse("sweeps:sweep_questions", args=[sweep.pk]) + "?" + query).status_code == 400
