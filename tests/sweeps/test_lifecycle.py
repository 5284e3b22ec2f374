"""A sweep's life beside its run: the planned size before launching, cancel and resume, delete, a
name and notes (services, selectors and views, every role), and cancel / delete with real workers.

Roles: anonymous, another user, the owner, staff. Cancel and resume are open to every logged-in
user (they lose nothing); delete and editing the name and notes to the owner or staff.
"""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse
from django.utils import timezone

import agentcore as agentsweep
from agentcore import designs, jobs
from sweeps import configs as sweep_configs
from sweeps import limits, selectors
from sweeps import plan as planning
from sweeps.configs import Conditions
from sweeps.forms import launch as sweep_forms
from sweeps.models import Chunk, Question, Scenario, Sweep
from sweeps.services import chunks, launch, lifecycle, questions, recovery
from sweeps.workqueue import watchdog
from sweeps.workqueue import workers as sweepworkers
from tests.sweeps import _data
from tests.sweeps._web import (
    launch_data,
    member,
    record_conditions,
    record_enqueued,
    sent_chunk_ids,
    sent_resumes,
    waiting_sweep,
)

pytestmark = pytest.mark.django_db

TRIAGE = sweep_configs.builtin_job_source("triage")
LOOP = [{"name": "real loop, keyed tracker", "design": "loop", "tracker": "keyed"}]
TABLE = sweep_configs.table_configs_for()
# The chapter's table at depth 2 (README): 412 first crash points, 9,663 scenarios.
TABLE_CHUNKS, TABLE_SCENARIOS = 412, 9663
# The same table with 10 job runs in sequence (issue 10, and counted here by playing every point).
TABLE_10_RUNS_SCENARIOS = 814_560
ROLES = ["anonymous", "other", "owner", "staff"]


@pytest.fixture
def enqueued(monkeypatch):
    return record_enqueued(monkeypatch)


@pytest.fixture
def users():
    """The owner and another operator, and staff (sweeps.roles; every role x endpoint: test_roles.py)."""
    return {"owner": member("ann", "operator"), "other": member("bob", "operator"), "staff": member("sam", "staff")}


@pytest.fixture
def as_role(client, users):
    """as_role(role): the test client logged in as that role (anonymous: not logged in)."""

    def login(role):
        if role != "anonymous":
            client.force_login(users[role])
        return client

    return login


def create(**kw):
    args = {"user": None, "job_source": TRIAGE, "configs": LOOP, "depth": 1}
    args.update(kw)
    return launch.sweep_create(**args)


def chunk_ids(sweep):
    return list(Chunk.objects.filter(sweep=sweep).order_by("pk").values_list("pk", flat=True))


def status(sweep):
    return Sweep.objects.values_list("status", flat=True).get(pk=sweep.pk)


def owned_sweep(users, **kw):
    """A running sweep of ann's with one stored chunk (2 rows), one missing chunk and a question."""
    s = _data.make_sweep(1, total_chunks=2, created_by=users["owner"], **kw)
    _data.chunk(s, 0, 1)
    _data.chunk(s, 0, 2, stored=False)
    _data.add(s, 0, 1)
    _data.question(_data.add(s, 0, 1, 1, status=Scenario.Status.WAITING))
    return s


def text(response) -> str:
    return response.content.decode()


# --- the planned size ----------------------------------------------------------------------------


def test_the_plan_of_the_chapter_s_table_is_its_exact_size():
    plan = planning.sweep_plan(job_source=TRIAGE, configs=TABLE, depth=2)
    assert (plan.chunks, plan.scenarios, plan.exact) == (TABLE_CHUNKS, TABLE_SCENARIOS, True)
    expected = agentsweep.sweep(agentsweep.table_configs(jobs.load("triage")), depth=1).rows  # once = points
    assert [(name, chunks) for name, chunks, _ in plan.configs] == [(r.name, r.once) for r in expected]
    assert dict((n, k) for n, _, k in plan.configs)["real loop, keyed tracker"] == 38 + 872  # README's row


def test_the_estimate_of_the_chapter_s_table_is_within_2_percent_of_its_real_count():
    """Forced to sample (a budget of 1 step), the estimate says "about" and stays close."""
    plan = planning.sweep_plan(job_source=TRIAGE, configs=TABLE, depth=2, budget=1)
    assert plan.chunks == TABLE_CHUNKS and plan.exact is False
    assert abs(plan.scenarios - TABLE_SCENARIOS) / TABLE_SCENARIOS < 0.02, plan.scenarios


def test_the_estimate_of_a_10_run_table_is_within_2_percent_and_quick():
    start = time.monotonic()
    plan = planning.sweep_plan(job_source=TRIAGE, configs=TABLE, depth=2, runs=10)
    took = time.monotonic() - start
    assert plan.exact is False and plan.chunks == 10 * TABLE_CHUNKS
    assert abs(plan.scenarios - TABLE_10_RUNS_SCENARIOS) / TABLE_10_RUNS_SCENARIOS < 0.02, plan.scenarios
    assert took < 5  # counting it exactly plays 4,120 once scenarios of 10 runs: 7.6 s here


def test_the_plan_at_depth_1_is_one_scenario_per_chunk():
    plan = planning.sweep_plan(job_source=TRIAGE, configs=TABLE, depth=1)
    assert (plan.chunks, plan.scenarios, plan.exact) == (TABLE_CHUNKS, TABLE_CHUNKS, True)


def test_a_queue_person_s_plan_is_an_estimate():
    assert planning.sweep_plan(job_source=TRIAGE, configs=LOOP, depth=2, person="queue").exact is False


def test_the_plan_is_what_the_sweep_then_stores():
    plan = planning.sweep_plan(job_source=TRIAGE, configs=LOOP, depth=2)
    sweep = create(depth=2)
    for pk in chunk_ids(sweep):
        chunks.chunk_run(chunk_id=pk)
    assert (sweep.total_chunks, Scenario.objects.filter(sweep=sweep).count()) == (plan.chunks, plan.scenarios)


# The chapter's table at depth 3 (README: python -m agentcore table --depth 3): 167,971 scenarios.
TABLE_DEPTH3_SCENARIOS = 167_971
ONCE_PER_TURN = [{"name": "save once per turn", "design": "once-per-turn", "tracker": "keyed"}]


@pytest.mark.parametrize("conditions", [{}, {"tracker_fault": "crash"}], ids=["panic", "tracker-crash"])
def test_the_plan_at_depth_3_counts_agentcore_s_thrice_scenarios_exactly(conditions):
    """A small sweep is counted exactly, the second points where the tracker crashes (played in full,
    not from a noted state) too."""
    plan = planning.sweep_plan(job_source=TRIAGE, configs=ONCE_PER_TURN, depth=3, **conditions)
    cfg = agentsweep.Config(jobs.load("triage"), designs.get("once-per-turn"), "keyed", **conditions)
    result = agentsweep.sweep([cfg], depth=3)
    assert plan.exact is True and (plan.chunks, plan.scenarios) == (result.rows[0].once, result.scenarios)
    assert result.rows[0].thrice > result.rows[0].twice


def test_the_estimate_of_the_chapter_s_table_at_depth_3_is_within_2_percent_and_quick():
    start = time.monotonic()
    plan = planning.sweep_plan(job_source=TRIAGE, configs=TABLE, depth=3)
    took = time.monotonic() - start
    assert plan.exact is False and plan.chunks == TABLE_CHUNKS
    assert abs(plan.scenarios - TABLE_DEPTH3_SCENARIOS) / TABLE_DEPTH3_SCENARIOS < 0.02, plan.scenarios
    assert took < 5  # counting it exactly plays each of its 9,251 twice scenarios' restarts: 7.5 s here


def test_a_depth_3_sweep_too_big_to_store_is_refused_by_its_plan_saying_its_size():
    with pytest.raises(ValidationError) as e:
        planning.sweep_plan(job_source=TRIAGE, configs=TABLE, depth=3, runs=2)
    (message,) = e.value.messages
    assert message.startswith("this sweep has about 1,0") and f"{limits.MAX_DEPTH3_SCENARIOS:,}" in message
    assert e.value.error_list[0].code == "too_big"


def test_the_plan_says_what_the_sweep_s_states_carry_of_its_job():
    plan = planning.sweep_plan(job_source=TRIAGE, configs=TABLE, depth=2)
    assert plan.job_bytes == jobs.carried_bytes(jobs.load("triage")) == 404
    assert plan.job_total == TABLE_SCENARIOS * 404 < limits.MAX_SWEEP_JOB_BYTES


def test_every_sweep_of_the_triage_job_is_within_the_job_bytes_bound():
    for depth, runs in ((2, limits.MAX_RUNS), (3, 1)):
        plan = planning.sweep_plan(job_source=TRIAGE, configs=TABLE, depth=depth, runs=runs)
        assert plan.job_total < limits.MAX_SWEEP_JOB_BYTES / 2, (depth, runs, plan.job_total)
    assert limits.MAX_DEPTH3_SCENARIOS * 404 < limits.MAX_SWEEP_JOB_BYTES


def test_a_job_too_big_for_its_sweep_is_refused_by_its_plan_with_the_figure_and_the_bound():
    start = time.monotonic()
    with pytest.raises(ValidationError) as e:
        planning.sweep_plan(job_source=_data.long_title_job(), configs=TABLE, depth=2)
    took = time.monotonic() - start
    (message,) = e.value.messages
    assert message.startswith("this sweep's states would carry about 3.8") and " GB of its job (about 9," in message
    assert (
        "each carrying the job's 400,372 bytes of calls and final text), more than the 1 GB a sweep may carry"
    ) in message
    assert e.value.error_list[0].code == "too_big"
    assert took < 10  # counted exactly (the full budget of these slower steps): 12.8 s here


def test_the_same_long_job_at_depth_1_is_within_the_bound():
    plan = planning.sweep_plan(job_source=_data.long_title_job(), configs=LOOP, depth=1)
    assert plan.scenarios == plan.chunks and plan.job_total < limits.MAX_SWEEP_JOB_BYTES


def test_launching_a_job_too_big_for_its_sweep_stores_and_enqueues_nothing(enqueued):
    with pytest.raises(ValidationError, match="this sweep's states would carry"):
        launch.sweep_create(user=None, job_source=_data.long_title_job(), configs=TABLE, depth=2)
    assert Sweep.objects.count() == Chunk.objects.count() == 0 and enqueued == []


def test_planning_stores_and_enqueues_nothing(enqueued):
    planning.sweep_plan(job_source=TRIAGE, configs=TABLE, depth=2)
    assert Sweep.objects.count() == Chunk.objects.count() == 0 and enqueued == []


@pytest.mark.parametrize(
    "bad",
    [
        {"depth": 4},
        {"depth": 3, "person": "queue"},
        {"runs": 0},
        {"configs": []},
        {"person": "robot"},
        {"job_source": '{"name": "x"}'},
        {"job_source": None},
    ],
)
def test_planning_bad_settings_raises_as_creating_does(bad):
    with pytest.raises(ValidationError):
        planning.sweep_plan(**{"job_source": TRIAGE, "configs": LOOP, **bad})


def test_planning_bad_conditions_raises_as_creating_does():
    with pytest.raises(ValidationError, match="fsync must be on or off"):
        planning.sweep_plan(job_source=TRIAGE, configs=LOOP, fsync="off")


def test_the_plan_plays_the_configurations_under_the_conditions(monkeypatch):
    played = record_conditions(monkeypatch, "points")
    planning.sweep_plan(
        job_source=TRIAGE,
        configs=LOOP,
        depth=1,
        crash_model="kill",
        fsync=False,
        tracker_fault="crash",
        tool_faults="always",
        person_faults="deny:1",
        model="fickle",
        seed=3,
    )
    assert played == [Conditions("kill", False, "crash", "always", "deny:1", "fickle", 3)]


def test_the_rate_is_the_default_until_a_sweep_finished():
    assert selectors.measured_rate(depth=2, runs=1) == (limits.DEFAULT_RATE, 0, "default")


def _finished(depth, runs, scenarios, seconds, **kw):
    s = _data.make_sweep(1, depth=depth, runs=runs, status=Sweep.Status.DONE, **kw)
    Chunk.objects.create(sweep=s, config=0, first_point=1, kind="k", label="l", stored=True, scenarios=scenarios)
    Sweep.objects.filter(pk=s.pk).update(finished_at=s.created_at + timedelta(seconds=seconds))
    return s


def test_the_rate_comes_from_finished_sweeps_of_the_same_depth_and_runs():
    _finished(2, 1, 9000, 3)
    _finished(2, 1, 1000, 1)
    _finished(2, 10, 800, 1)  # another number of runs
    _finished(2, 1, 5000, 1, person=Sweep.Person.QUEUE)  # the people's time, not the workers'
    assert selectors.measured_rate(depth=2, runs=1) == (2500.0, 2, "depth 2, 1 run")
    assert selectors.measured_rate(depth=2, runs=3) == (pytest.approx(10800 / 5), 3, "depth 2")
    assert selectors.measured_rate(depth=1, runs=1)[2] == "any"


# --- cancel and resume: services -------------------------------------------------------------------


def test_cancel_cancels_a_running_sweep_once(enqueued):
    sweep = create()
    assert lifecycle.sweep_cancel(sweep_id=sweep.pk) is True
    sweep.refresh_from_db()
    assert sweep.status == Sweep.Status.CANCELLED and sweep.finished_at is not None
    assert lifecycle.sweep_cancel(sweep_id=sweep.pk) is False


@pytest.mark.parametrize("state", [Sweep.Status.DONE, Sweep.Status.FAILED])
def test_cancel_leaves_a_finished_or_failed_sweep_as_it_is(enqueued, state):
    sweep = create()
    Sweep.objects.filter(pk=sweep.pk).update(status=state)
    assert lifecycle.sweep_cancel(sweep_id=sweep.pk) is False and status(sweep) == state


def test_the_chunks_of_a_cancelled_sweep_are_skipped_not_stored_and_not_failed(enqueued):
    sweep = create()
    lifecycle.sweep_cancel(sweep_id=sweep.pk)
    ids = chunk_ids(sweep)
    assert chunks.chunks_run(chunk_ids=ids[:3]) == 0
    assert chunks.chunk_run(chunk_id=ids[3]) is False
    assert not Scenario.objects.filter(sweep=sweep).exists()
    assert set(Chunk.objects.filter(sweep=sweep).values_list("attempts", "stored")) == {(0, False)}
    sweep.refresh_from_db()
    assert sweep.status == Sweep.Status.CANCELLED and sweep.error == ""


def test_a_chunk_playing_when_its_sweep_is_cancelled_is_not_stored(enqueued, monkeypatch):
    sweep = create()
    play = agentsweep.run_chunk

    def cancelled_meanwhile(*args, **kw):
        result = play(*args, **kw)
        lifecycle.sweep_cancel(sweep_id=sweep.pk)
        return result

    monkeypatch.setattr(agentsweep, "run_chunk", cancelled_meanwhile)
    assert chunks.chunk_run(chunk_id=chunk_ids(sweep)[0]) is False
    assert not Scenario.objects.filter(sweep=sweep).exists() and status(sweep) == Sweep.Status.CANCELLED


def test_a_chunk_that_fails_in_a_cancelled_sweep_does_not_fail_it(enqueued):
    sweep = create()
    lifecycle.sweep_cancel(sweep_id=sweep.pk)
    chunks.chunk_failed(chunk_id=chunk_ids(sweep)[0], error="boom")
    assert status(sweep) == Sweep.Status.CANCELLED


def test_the_stall_watchdog_leaves_a_cancelled_sweep_alone(enqueued, monkeypatch):
    monkeypatch.setattr(watchdog, "queued_messages", lambda: 0)  # an empty queue: it would requeue
    sweep = create()
    lifecycle.sweep_cancel(sweep_id=sweep.pk)
    Sweep.objects.filter(pk=sweep.pk).update(created_at=timezone.now() - timedelta(minutes=5))
    assert recovery.sweeps_resume_stalled(stalled_for=10) == 0
    assert enqueued == [] and status(sweep) == Sweep.Status.CANCELLED


def test_resume_runs_a_cancelled_sweep_again_and_queues_only_its_missing_chunks(
    enqueued, django_capture_on_commit_callbacks
):
    sweep = create()
    ids = chunk_ids(sweep)
    for pk in ids[:5]:
        chunks.chunk_run(chunk_id=pk)
    lifecycle.sweep_cancel(sweep_id=sweep.pk)
    chunks.chunks_run(chunk_ids=ids[5:7])  # skipped
    enqueued.clear()
    with django_capture_on_commit_callbacks(execute=True):
        assert recovery.sweep_resume(sweep_id=sweep.pk) == len(ids) - 5
    sweep.refresh_from_db()
    assert sweep.status == Sweep.Status.RUNNING and sweep.finished_at is None
    assert sorted(sent_chunk_ids(enqueued)) == ids[5:]
    for pk in ids[5:]:
        chunks.chunk_run(chunk_id=pk)
    assert status(sweep) == Sweep.Status.DONE


def test_finalize_leaves_a_cancelled_sweep_cancelled_while_chunks_are_missing(enqueued):
    sweep = create()
    chunks.chunk_run(chunk_id=chunk_ids(sweep)[0])
    lifecycle.sweep_cancel(sweep_id=sweep.pk)
    assert lifecycle.sweep_finalize(sweep_id=sweep.pk).status == Sweep.Status.CANCELLED


def test_finalize_makes_a_cancelled_sweep_done_once_everything_is_stored(enqueued, monkeypatch):
    """The cancel came after the last chunk was stored, before the finalize: it is all there."""
    sweep = create()
    with monkeypatch.context() as mp:
        mp.setattr(lifecycle, "sweep_finalize", lambda **kw: None)
        for pk in chunk_ids(sweep):
            chunks.chunk_run(chunk_id=pk)
    lifecycle.sweep_cancel(sweep_id=sweep.pk)
    done = lifecycle.sweep_finalize(sweep_id=sweep.pk)
    assert done.status == Sweep.Status.DONE and done.table


def test_an_answer_in_a_cancelled_sweep_waits_for_its_resume(enqueued, django_capture_on_commit_callbacks):
    sweep = waiting_sweep()
    q = Question.objects.filter(sweep=sweep, status=Question.Status.OPEN).first()
    lifecycle.sweep_cancel(sweep_id=sweep.pk)
    questions.question_answer(question_id=q.pk, user=None, happened=bool(q.truth))
    assert questions.question_resume(question_id=q.pk) is False
    assert Question.objects.get(pk=q.pk).status == Question.Status.ANSWERED
    enqueued.clear()
    with django_capture_on_commit_callbacks(execute=True):
        recovery.sweep_resume(sweep_id=sweep.pk)
    assert sent_resumes(enqueued) == [q.pk]


# --- delete: services ------------------------------------------------------------------------------


def test_delete_removes_the_sweep_with_its_chunks_scenarios_and_questions(users):
    sweep, kept = owned_sweep(users), owned_sweep(users)
    assert lifecycle.sweep_delete(sweep_id=sweep.pk) == {"sweeps": 1, "chunks": 2, "scenarios": 2, "questions": 1}
    assert not Sweep.objects.filter(pk=sweep.pk).exists()
    for model in (Chunk, Scenario, Question):
        assert not model.objects.filter(sweep_id=sweep.pk).exists()
        assert model.objects.filter(sweep=kept).exists()
    assert lifecycle.sweep_delete(sweep_id=sweep.pk)["sweeps"] == 0  # twice: nothing more


def test_the_queued_tasks_of_a_deleted_sweep_do_nothing(enqueued):
    sweep = waiting_sweep()
    question = Question.objects.filter(sweep=sweep).first()
    questions.question_answer(question_id=question.pk, user=None, happened=True)
    more = create()
    ids = chunk_ids(more)
    lifecycle.sweep_delete(sweep_id=sweep.pk)
    lifecycle.sweep_delete(sweep_id=more.pk)
    assert chunks.chunks_run(chunk_ids=ids[:4]) == 0
    assert chunks.chunk_run(chunk_id=ids[4]) is False
    assert questions.question_resume(question_id=question.pk) is False
    assert lifecycle.sweep_finalize(sweep_id=more.pk) is None
    assert Scenario.objects.count() == Chunk.objects.count() == Sweep.objects.count() == 0


# --- name and notes: services ----------------------------------------------------------------------


def test_a_sweep_is_created_with_a_name_and_notes(enqueued):
    sweep = create(name="  before the fix ", notes="keys off\nsecond line")
    assert (sweep.name, sweep.notes) == ("before the fix", "keys off\nsecond line")


def test_update_notes_sets_the_name_and_the_notes(enqueued):
    sweep = create()
    assert lifecycle.sweep_update_notes(sweep_id=sweep.pk, name="after", notes="keys on") is True
    sweep.refresh_from_db()
    assert (sweep.name, sweep.notes) == ("after", "keys on")
    assert lifecycle.sweep_update_notes(sweep_id=sweep.pk + 1000, name="x", notes="") is False


@pytest.mark.parametrize(("name", "notes"), [("x" * 201, ""), ("", "y" * 10_001), ("a\x00b", ""), (None, "")])
def test_update_notes_refuses_bad_values(enqueued, name, notes):
    sweep = create(name="kept")
    with pytest.raises(ValidationError):
        lifecycle.sweep_update_notes(sweep_id=sweep.pk, name=name, notes=notes)
    assert Sweep.objects.get(pk=sweep.pk).name == "kept"


# --- views: cancel ---------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ROLES)
def test_cancel_by_role(as_role, users, role):
    sweep = owned_sweep(users)
    r = as_role(role).post(reverse("sweeps:cancel", args=[sweep.pk]))
    if role in ("anonymous", "other"):
        assert r.status_code == 403 and status(sweep) == Sweep.Status.RUNNING
    else:  # its owner or staff: it loses nothing, and resume goes on
        assert r.status_code == 302 and r["Location"] == reverse("sweeps:detail", args=[sweep.pk])
        assert status(sweep) == Sweep.Status.CANCELLED


def test_cancel_says_what_it_did(as_role, users):
    sweep = owned_sweep(users)
    page = text(as_role("owner").post(reverse("sweeps:cancel", args=[sweep.pk]), follow=True))
    assert f"sweep {sweep.pk} cancelled" in page and "rows stored so far are kept" in page
    page = text(as_role("owner").post(reverse("sweeps:cancel", args=[sweep.pk]), follow=True))
    assert "nothing to cancel" in page


def test_cancel_is_a_post(as_role, users):
    sweep = owned_sweep(users)
    assert as_role("owner").get(reverse("sweeps:cancel", args=[sweep.pk])).status_code == 405
    assert status(sweep) == Sweep.Status.RUNNING


def test_cancel_of_an_unknown_sweep_is_404(as_role):
    assert as_role("staff").post(reverse("sweeps:cancel", args=[999])).status_code == 404


@pytest.mark.parametrize(("role", "shown"), [("other", False), ("owner", True), ("staff", True)])
def test_the_cancel_button_is_offered_to_the_owner_and_staff_while_it_runs(as_role, users, role, shown):
    sweep = owned_sweep(users)
    assert ('id="cancel"' in text(as_role(role).get(reverse("sweeps:detail", args=[sweep.pk])))) is shown


def test_a_cancelled_sweep_offers_resume_and_no_cancel(as_role, users):
    sweep = owned_sweep(users, status=Sweep.Status.CANCELLED)
    page = text(as_role("owner").get(reverse("sweeps:detail", args=[sweep.pk])))
    assert 'id="resume"' in page and 'id="cancel"' not in page and "status-cancelled" in page


def test_resume_of_a_cancelled_sweep_by_staff(as_role, users, enqueued, django_capture_on_commit_callbacks):
    sweep = owned_sweep(users, status=Sweep.Status.CANCELLED)
    with django_capture_on_commit_callbacks(execute=True):
        as_role("staff").post(reverse("sweeps:resume", args=[sweep.pk]))
    assert status(sweep) == Sweep.Status.RUNNING
    assert sent_chunk_ids(enqueued) == [Chunk.objects.get(sweep=sweep, stored=False).pk]


# --- views: delete ---------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ROLES)
def test_the_delete_confirm_page_by_role(as_role, users, role):
    sweep = owned_sweep(users)
    r = as_role(role).get(reverse("sweeps:delete", args=[sweep.pk]))
    if role == "anonymous":
        assert r.status_code == 302 and r["Location"].startswith(reverse("login"))
    elif role == "other":
        assert r.status_code == 403
    else:
        page = text(r)
        assert r.status_code == 200
        assert '<strong id="removed-scenarios">2</strong> stored scenarios' in page
        assert '<strong id="removed-questions">1</strong> question,' in page
        assert 'id="confirm-delete-button"' in page and "cancel it</a> instead" in page
    assert Sweep.objects.filter(pk=sweep.pk).exists()  # a GET deletes nothing


@pytest.mark.parametrize("role", ROLES)
def test_delete_by_role(as_role, users, role):
    sweep = owned_sweep(users)
    r = as_role(role).post(reverse("sweeps:delete", args=[sweep.pk]))
    if role in ("anonymous", "other"):
        assert r.status_code == 403
        assert Sweep.objects.filter(pk=sweep.pk).exists() and Scenario.objects.filter(sweep=sweep).count() == 2
    else:
        assert r.status_code == 302 and r["Location"] == reverse("sweeps:list")
        assert not Sweep.objects.filter(pk=sweep.pk).exists() and not Scenario.objects.exists()


def test_delete_says_what_it_removed(as_role, users):
    sweep = owned_sweep(users)
    page = text(as_role("owner").post(reverse("sweeps:delete", args=[sweep.pk]), follow=True))
    assert f"sweep {sweep.pk} deleted with its 2 scenarios and 1 question" in page


def test_delete_of_an_unknown_sweep_is_404(as_role):
    assert as_role("staff").post(reverse("sweeps:delete", args=[999])).status_code == 404


@pytest.mark.parametrize(("role", "shown"), [("other", False), ("owner", True), ("staff", True)])
def test_the_delete_link_is_shown_to_the_owner_and_staff(as_role, users, role, shown):
    sweep = owned_sweep(users)
    assert ('id="delete"' in text(as_role(role).get(reverse("sweeps:detail", args=[sweep.pk])))) is shown


# --- views: name and notes -------------------------------------------------------------------------


@pytest.mark.parametrize("role", ROLES)
def test_edit_name_and_notes_by_role(as_role, users, role):
    sweep = owned_sweep(users)
    r = as_role(role).post(reverse("sweeps:edit", args=[sweep.pk]), {"name": "after the fix", "notes": "keys on"})
    sweep.refresh_from_db()
    if role in ("anonymous", "other"):
        assert r.status_code == 403 and (sweep.name, sweep.notes) == ("", "")
    else:
        assert r.status_code == 302 and (sweep.name, sweep.notes) == ("after the fix", "keys on")


def test_a_bad_name_is_a_400_and_changes_nothing(as_role, users):
    sweep = owned_sweep(users)
    r = as_role("owner").post(reverse("sweeps:edit", args=[sweep.pk]), {"name": "x" * 201, "notes": ""})
    assert r.status_code == 400 and "at most 200 characters" in text(r)
    assert Sweep.objects.get(pk=sweep.pk).name == ""


@pytest.mark.parametrize(("role", "shown"), [("other", False), ("owner", True), ("staff", True)])
def test_the_edit_form_is_shown_to_the_owner_and_staff(as_role, users, role, shown):
    sweep = owned_sweep(users)
    assert ('id="edit-notes"' in text(as_role(role).get(reverse("sweeps:detail", args=[sweep.pk])))) is shown


def test_the_name_and_notes_are_shown_escaped_on_the_list_and_the_sweep_page(client, users):
    client.force_login(users["other"])
    sweep = owned_sweep(users, name="<b>before</b>", notes="keys <i>off</i>")
    listing = text(client.get(reverse("sweeps:list")))
    assert "&lt;b&gt;before&lt;/b&gt;" in listing and "<b>before</b>" not in listing
    page = text(client.get(reverse("sweeps:detail", args=[sweep.pk])))
    assert '<span id="sweep-name">&lt;b&gt;before&lt;/b&gt;</span>' in page
    assert "keys &lt;i&gt;off&lt;/i&gt;" in page


def test_the_launch_form_takes_a_name_and_notes(as_role, users, enqueued):
    r = as_role("owner").post(reverse("sweeps:launch"), launch_data(depth="1", name="baseline", notes="first try"))
    assert r.status_code == 302
    assert Sweep.objects.values_list("name", "notes").get() == ("baseline", "first try")


# --- views: the planned size ---------------------------------------------------------------------


def test_the_plan_endpoint_gives_the_table_s_size_and_a_time(as_role, users, enqueued):
    _finished(2, 1, 9000, 3)
    r = as_role("owner").post(reverse("sweeps:plan"), launch_data())
    p = r.json()
    assert r.status_code == 200
    assert (p["chunks"], p["scenarios"], p["exact"], p["rate"], p["seconds"]) == (412, 9663, True, 3000.0, 3.2)
    assert p["text"] == (
        "412 chunks · 9,663 scenarios · about 3 s at 3,000 scenarios/s, "
        "measured over 1 finished sweep here (depth 2, 1 run)"
    )
    assert Sweep.objects.count() == 1 and enqueued == []  # the measured one only; nothing enqueued


def test_the_plan_endpoint_plans_under_the_form_s_conditions(as_role, users, monkeypatch):
    asked = []
    real = sweep_forms.launch_request  # the form checks and plans the launch once (sweeps.request)
    monkeypatch.setattr(sweep_forms, "launch_request", lambda **kw: asked.append(kw) or real(**kw))
    r = as_role("owner").post(
        reverse("sweeps:plan"),
        launch_data(
            crash_model="power-cut",
            fsync="off",
            tracker_fault="ttl:5",
            tool_faults="k:2",
            person_faults="wrong:0.5",
            model="fresh-ids",
            seed="9",
            depth="1",
        ),
    )
    assert r.status_code == 200
    assert [{c: kw[c] for c in Conditions._fields} for kw in asked] == [
        Conditions("power-cut", False, "ttl:5", "k:2", "wrong:0.5", "fresh-ids", 9)._asdict()
    ]


def test_the_plan_endpoint_names_a_bad_fault_with_agentcore_s_message(as_role, users):
    r = as_role("owner").post(reverse("sweeps:plan"), launch_data(tracker_fault="ttl:0"))
    assert r.status_code == 400
    assert r.json()["errors"] == ["tracker_fault: tracker fault 'ttl:0': N must be a whole number from 1 to 10000"]


def test_the_plan_endpoint_names_a_bad_condition(as_role, users):
    r = as_role("owner").post(reverse("sweeps:plan"), launch_data(crash_model="earthquake"))
    assert r.status_code == 400
    assert r.json()["errors"] == ["crash_model: Select a valid choice. earthquake is not one of the available choices."]


def test_the_plan_endpoint_says_about_for_an_estimate(as_role, users):
    p = as_role("owner").post(reverse("sweeps:plan"), launch_data(runs="10")).json()
    assert p["exact"] is False and p["chunks"] == 4120
    shown = int(float(format(p["scenarios"], ".3g")))  # an estimate: 3 significant figures
    assert p["text"].startswith(f"4,120 chunks · about {shown:,} scenarios · about ")
    assert "the default rate" in p["text"]


def test_the_plan_endpoint_reads_an_uploaded_file(as_role, users):
    from django.core.files.uploadedfile import SimpleUploadedFile

    job = SimpleUploadedFile("mine.json", TRIAGE.encode(), content_type="application/json")
    p = as_role("owner").post(reverse("sweeps:plan"), launch_data(job="upload", job_file=job, depth="1")).json()
    assert (p["chunks"], p["scenarios"]) == (412, 412)


def test_the_plan_endpoint_gives_the_form_s_errors(as_role, users):
    r = as_role("owner").post(reverse("sweeps:plan"), launch_data(preset="custom"))
    assert r.status_code == 400
    assert r.json()["errors"] == ["designs: choose at least one design", "trackers: choose at least one tracker mode"]


@pytest.mark.parametrize(("method", "role", "code"), [("post", "anonymous", 403), ("get", "owner", 405)])
def test_the_plan_endpoint_is_a_logged_in_post(as_role, users, method, role, code):
    assert getattr(as_role(role), method)(reverse("sweeps:plan"), launch_data()).status_code == code


def test_the_launch_form_shows_the_planned_size_of_its_defaults(as_role, users):
    page = text(as_role("owner").get(reverse("sweeps:list")))
    assert '<span id="plan-text">412 chunks · 9,663 scenarios · about 5 s at 2,000 scenarios/s' in page


# --- real workers ----------------------------------------------------------------------------------


def _stored(sweep):
    return Scenario.objects.filter(sweep=sweep).count()


@pytest.mark.django_db(transaction=True)
def test_a_sweep_cancelled_midway_stops_and_its_resume_stores_exactly_the_full_table(celery_workers, wait_until):
    """The chapter's table with 2 job runs (824 chunks, 35,280 scenarios, a few seconds' work)."""
    job = jobs.load("triage")
    cfgs = [agentsweep.Config(job, designs.get(d), t, 2, "scripted", n) for n, d, t in agentsweep.TABLE]
    plan = planning.sweep_plan(job_source=TRIAGE, configs=TABLE, depth=2, runs=2, budget=10**9)
    sweep = launch.sweep_create(user=None, job_source=TRIAGE, configs=TABLE, depth=2, runs=2)
    wait_until(
        lambda: Chunk.objects.filter(sweep=sweep, stored=True).count() >= 40,
        timeout=60,
        what="the workers to store some chunks",
    )
    assert lifecycle.sweep_cancel(sweep_id=sweep.pk), "the sweep ended before it could be cancelled"
    time.sleep(0.5)  # a store that began before the cancel commits now or never
    rows = _stored(sweep)
    time.sleep(2.5)
    assert _stored(sweep) == rows > 0  # no row after the cancel
    sweep.refresh_from_db()
    stored = Chunk.objects.filter(sweep=sweep, stored=True).count()
    assert sweep.status == Sweep.Status.CANCELLED and sweep.error == "" and stored < sweep.total_chunks
    # In flight only: a message's chunks per worker on the queue (the browser tests' `make run` may serve it too).
    # (A worker busy with a chunk on a loaded machine can take over a second to answer the ping.)
    in_flight = len(sweepworkers.queue_workers(timeout=3.0)) * limits.MAX_CHUNKS_PER_TASK
    assert Chunk.objects.filter(sweep=sweep, stored=False, attempts__gt=0).count() <= in_flight

    assert recovery.sweep_resume(sweep_id=sweep.pk) == sweep.total_chunks - stored
    wait_until(lambda: status(sweep) in ("done", "failed"), timeout=180, what="the resumed sweep to finish")
    sweep.refresh_from_db()
    assert sweep.status == Sweep.Status.DONE, sweep.error
    assert _stored(sweep) == plan.scenarios == 35_280
    assert [tuple(r.values()) for r in selectors.sweep_table(sweep)] == [
        tuple(r.values()) for r in agentsweep.sweep(cfgs, depth=2, workers=1).rows
    ]


@pytest.mark.django_db(transaction=True)
def test_the_queued_tasks_of_a_deleted_sweep_are_no_ops_on_real_workers(celery_workers, wait_until):
    doomed = launch.sweep_create(user=None, job_source=TRIAGE, configs=TABLE, depth=2, runs=2)
    removed = lifecycle.sweep_delete(sweep_id=doomed.pk)
    assert removed["chunks"] == 824
    wait_until(lambda: watchdog.queued_messages() == 0, timeout=60, what="the workers to take its messages")
    after = launch.sweep_create(user=None, job_source=TRIAGE, configs=LOOP, depth=1)
    wait_until(lambda: status(after) in ("done", "failed"), timeout=60, what="the next sweep")
    assert status(after) == Sweep.Status.DONE
    assert not Chunk.objects.filter(sweep_id=doomed.pk).exists()
    assert not Scenario.objects.filter(sweep_id=doomed.pk).exists()


def test_the_issues_990_000_character_title_is_refused_before_it_is_played():
    # Its steps alone (every state writes the title) are past the plan's bound of work
    # (sweeps.cost), which is counted before anything is played.
    start = time.monotonic()
    with pytest.raises(ValidationError) as e:
        planning.sweep_plan(job_source=_data.long_title_job(990_000), configs=TABLE, depth=2)
    (message,) = e.value.messages
    assert f"the bound is {limits.PLAN_STEPS:,}" in message and "steps of work" in message
    assert time.monotonic() - start < 10  # refused from its count, never played in full
