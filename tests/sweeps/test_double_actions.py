"""Double actions: a launch form submitted twice is one sweep; a question answered twice, or by two
people at once, is one answer (the first), one resume, and the second person is told so.

The sequential tests run on any database (tasks are recorded instead of sent; on-commit callbacks
are run by django_capture_on_commit_callbacks). The concurrent ones run two requests at the same
moment in two threads, each with its own database connection, on committed rows: they are marked
`services` (PostgreSQL, where row locks decide the race; `make test` runs them in its second pass).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connections
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from sweeps.models import Chunk, Question, Scenario, Sweep
from tests.sweeps import _data
from tests.sweeps._web import launch_data, member, record_enqueued, sent_chunk_ids, sent_resumes


@pytest.fixture
def enqueued(monkeypatch):
    return record_enqueued(monkeypatch)


@pytest.fixture
def users():
    return [member(name, "staff") for name in ("ann", "bob")]  # both may act on these ownerless sweeps


def logged_in(user) -> Client:
    c = Client()
    c.force_login(user)
    return c


def text(response) -> str:
    return response.content.decode()


def open_question() -> Question:
    sweep = _data.make_sweep(1, person=Sweep.Person.QUEUE)
    sc = _data.add(sweep, 0, 1, status=Scenario.Status.WAITING)
    return _data.question(sc, "0:call_1", truth=True)


def at_once(*actions: Callable[[], Any]) -> list[Any]:
    """Run the actions in threads released together; each thread closes its own connections."""
    barrier = threading.Barrier(len(actions))
    results: list[Any] = [None] * len(actions)
    errors: list[BaseException] = []

    def run(i: int, action: Callable[[], Any]) -> None:
        try:
            barrier.wait(timeout=30)
            results[i] = action()
        except BaseException as e:  # re-raised in the test's thread
            errors.append(e)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i, a)) for i, a in enumerate(actions)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "a request did not finish"
    if errors:
        raise errors[0]
    return results


# --- the launch form submitted twice ------------------------------------------------------------


@pytest.mark.django_db
def test_launch_submitted_twice_is_one_sweep_enqueued_once(users, enqueued, django_capture_on_commit_callbacks):
    client = logged_in(users[0])
    data = launch_data(depth="1")
    responses = []
    for _ in range(2):
        with django_capture_on_commit_callbacks(execute=True):
            responses.append(client.post(reverse("sweeps:launch"), data))
    sweep = Sweep.objects.get()
    assert [r.status_code for r in responses] == [302, 302]
    assert responses[0]["Location"] == responses[1]["Location"] == reverse("sweeps:detail", args=[sweep.pk])
    chunk_ids = sorted(Chunk.objects.filter(sweep=sweep).values_list("pk", flat=True))
    assert len(chunk_ids) == sweep.total_chunks > 0  # not doubled
    assert sorted(sent_chunk_ids(enqueued)) == chunk_ids  # each chunk enqueued once, by the first submit


@pytest.mark.django_db
def test_launch_submitted_twice_by_a_double_click_with_a_changed_form_is_still_one_sweep(users, enqueued):
    client = logged_in(users[0])
    data = launch_data(depth="1")
    client.post(reverse("sweeps:launch"), data)
    r = client.post(reverse("sweeps:launch"), {**data, "runs": "3"})  # same token: the first sweep stands
    assert r.status_code == 302 and Sweep.objects.count() == 1 and Sweep.objects.get().runs == 1


@pytest.mark.django_db
def test_two_forms_are_two_sweeps(users, enqueued):
    client = logged_in(users[0])
    client.post(reverse("sweeps:launch"), launch_data(depth="1"))
    client.post(reverse("sweeps:launch"), launch_data(depth="1"))
    assert Sweep.objects.count() == 2


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_launch_submitted_twice_at_once_is_one_sweep(users, enqueued):
    data = launch_data(depth="1")
    clients = [logged_in(users[0]), logged_in(users[0])]
    responses = at_once(*(lambda c=c: c.post(reverse("sweeps:launch"), data) for c in clients))
    sweep = Sweep.objects.get()
    assert [r.status_code for r in responses] == [302, 302]
    assert {r["Location"] for r in responses} == {reverse("sweeps:detail", args=[sweep.pk])}
    chunk_ids = sorted(Chunk.objects.filter(sweep=sweep).values_list("pk", flat=True))
    assert len(chunk_ids) == sweep.total_chunks > 0
    assert sorted(sent_chunk_ids(enqueued)) == chunk_ids


# --- a question answered twice ------------------------------------------------------------------


@pytest.mark.django_db
def test_a_double_click_on_an_answer_is_one_answer_and_one_resume(users, enqueued, django_capture_on_commit_callbacks):
    q = open_question()
    client = logged_in(users[0])
    with django_capture_on_commit_callbacks(execute=True):
        first = client.post(reverse("sweeps:answer", args=[q.pk]), {"happened": "no"}, follow=True)
    answered_at = Question.objects.get(pk=q.pk).answered_at
    with django_capture_on_commit_callbacks(execute=True):
        second = client.post(reverse("sweeps:answer", args=[q.pk]), {"happened": "yes"}, follow=True)
    assert "answer stored: it did not happen" in text(first)
    assert "already answered by ann; the first answer was kept" in text(second)
    q.refresh_from_db()
    assert (q.status, q.answer, q.answered_by, q.answered_at) == (
        Question.Status.ANSWERED,
        False,
        users[0],
        answered_at,
    )
    assert sent_resumes(enqueued) == [q.pk]


@pytest.mark.django_db
def test_two_people_answering_one_after_the_other(users, enqueued, django_capture_on_commit_callbacks):
    q = open_question()
    ann, bob = (logged_in(u) for u in users)
    before = timezone.now()
    with django_capture_on_commit_callbacks(execute=True):
        first = ann.post(reverse("sweeps:answer", args=[q.pk]), {"happened": "yes"}, follow=True)
        second = bob.post(reverse("sweeps:answer", args=[q.pk]), {"happened": "no"}, follow=True)
    assert "answer stored: it happened" in text(first)
    assert "already answered by ann; the first answer was kept" in text(second)
    q.refresh_from_db()
    assert (q.answer, q.answered_by) == (True, users[0]) and before <= q.answered_at <= timezone.now()
    assert sent_resumes(enqueued) == [q.pk]
    page = text(bob.get(reverse("sweeps:sweep_questions", args=[q.sweep_id]) + "?status=answered"))
    assert f"it happened · ann, {timezone.localtime(q.answered_at):%Y-%m-%d %H:%M:%S}" in page


@pytest.mark.django_db
def test_answer_all_twice_answers_once(users, enqueued, django_capture_on_commit_callbacks):
    sweep = _data.make_sweep(1, person=Sweep.Person.QUEUE)
    qs = [
        _data.question(_data.add(sweep, 0, f, status=Scenario.Status.WAITING), f"0:call_{f}", truth=f % 2 == 0)
        for f in (1, 2, 3)
    ]
    ann, bob = (logged_in(u) for u in users)
    with django_capture_on_commit_callbacks(execute=True):
        ann.post(reverse("sweeps:answer", args=[qs[0].pk]), {"happened": "no"})  # one answered by hand first
        first = ann.post(reverse("sweeps:answer_all", args=[sweep.pk]), follow=True)
        second = bob.post(reverse("sweeps:answer_all", args=[sweep.pk]), follow=True)
    assert "2 open questions answered" in text(first) and "0 open questions answered" in text(second)
    assert sorted(sent_resumes(enqueued)) == sorted(q.pk for q in qs)  # each resumed once
    rows = {q.pk: q for q in Question.objects.all()}
    assert rows[qs[0].pk].answer is False  # the hand answer was kept
    assert all(rows[q.pk].answered_by == users[0] and rows[q.pk].answer == q.truth for q in qs[1:])


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_two_people_answering_at_the_same_moment(users, enqueued):
    for _ in range(3):  # a few rounds: the winner may differ, the outcome may not
        q = open_question()
        clients = [logged_in(u) for u in users]
        url = reverse("sweeps:answer", args=[q.pk])
        before = timezone.now()
        responses = at_once(
            lambda c=clients[0], u=url: c.post(u, {"happened": "yes"}, follow=True),
            lambda c=clients[1], u=url: c.post(u, {"happened": "no"}, follow=True),
        )
        after = timezone.now()
        pages = [text(r) for r in responses]
        assert all(r.status_code == 200 for r in responses)
        won = [i for i, p in enumerate(pages) if "answer stored:" in p]
        lost = [i for i, p in enumerate(pages) if "the first answer was kept" in p]
        assert len(won) == 1 and len(lost) == 1 and won != lost
        winner, loser = won[0], lost[0]
        q.refresh_from_db()
        assert q.status == Question.Status.ANSWERED
        assert q.answered_by == users[winner] and q.answer is (winner == 0)
        assert before <= q.answered_at <= after
        assert f"already answered by {users[winner].username}" in pages[loser]
        assert sent_resumes(enqueued) == [q.pk]
        enqueued.clear()
