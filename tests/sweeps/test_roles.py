"""Who may do what (sweeps.roles): every write endpoint for every role, reading, the groups that
`migrate` makes, `manage.py user`, and the per-user limit of unfinished sweeps.

The roles, as a person meets them: anonymous; a viewer; an operator acting on a sweep or audit of
their own; an operator acting on another operator's; staff. Every write is a real POST through the
view; what it would change is read back from the database (tasks are recorded, not sent).
"""

from __future__ import annotations

import io
import threading
import time
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client
from django.urls import reverse

from sweeps import roles
from sweeps.configs import builtin_job_source
from sweeps.models import Audit, Chunk, Question, Scenario, Sweep
from sweeps.services import audits, launch, lifecycle, recovery
from tests.sweeps import _data
from tests.sweeps._web import launch_data, logged_in, member, record_enqueued

pytestmark = pytest.mark.django_db

ROLES = ["anonymous", "viewer", "operator-own", "operator-other", "staff"]
LOOP = [{"name": "real loop, keyed tracker", "design": "loop", "tracker": "keyed"}]


@pytest.fixture(autouse=True)
def enqueued(monkeypatch):
    return record_enqueued(monkeypatch)


@pytest.fixture
def people() -> dict[str, Any]:
    """The owner of every sweep and audit below (an operator), and one user per role."""
    owner = member("olga", "operator")
    return {
        "owner": owner,
        "anonymous": None,
        "viewer": member("vic", "viewer"),
        "operator-own": owner,
        "operator-other": member("otto", "operator"),
        "staff": member("sam", "staff"),
    }


def as_role(people: dict[str, Any], role: str) -> Client:
    return logged_in(people[role])


def owned_sweep(owner, **kw) -> Sweep:
    """A running queue sweep of `owner`'s: a stored chunk, a missing one, a scenario waiting on an open question."""
    sweep = _data.make_sweep(2, person=Sweep.Person.QUEUE, created_by=owner, name="before", **kw)
    _data.add(sweep, 0, 1)
    _data.chunk(sweep, 0, 1)
    _data.chunk(sweep, 1, 1, stored=False)
    _data.question(_data.add(sweep, 1, 1, status=Scenario.Status.WAITING), "0:call_1", truth=True)
    return sweep


def owned_audit(owner) -> Audit:
    a = audits.audit_create(
        user=owner, job_source=builtin_job_source("triage"), designs=["loop"], trackers=["keyed"], worlds=["panic"]
    )
    audits.audit_unit_failed(unit_id=a.units.get().pk, error="OperationalError: gone")
    return a


def _question(sweep: Sweep) -> Question:
    return Question.objects.get(sweep=sweep)


def _status(sweep: Sweep) -> str:
    return Sweep.objects.get(pk=sweep.pk).status


# Each write endpoint: (the request for a sweep or audit of the owner's, what it did when it was let
# through). `None` when there is nothing to own (launching).
ENDPOINTS = {
    "launch": ("sweep", lambda s: (reverse("sweeps:launch"), launch_data()), lambda s: Sweep.objects.count() == 2),
    "plan": (
        "sweep",
        lambda s: (reverse("sweeps:plan"), launch_data()),
        None,
    ),  # writes nothing: the answer's status says it all
    "resume": (
        "cancelled",
        lambda s: (reverse("sweeps:resume", args=[s.pk]), {}),
        lambda s: _status(s) == Sweep.Status.RUNNING,
    ),
    "cancel": (
        "sweep",
        lambda s: (reverse("sweeps:cancel", args=[s.pk]), {}),
        lambda s: _status(s) == Sweep.Status.CANCELLED,
    ),
    "delete": (
        "sweep",
        lambda s: (reverse("sweeps:delete", args=[s.pk]), {}),
        lambda s: not Sweep.objects.filter(pk=s.pk).exists(),
    ),
    "edit": (
        "sweep",
        lambda s: (reverse("sweeps:edit", args=[s.pk]), {"name": "after", "notes": ""}),
        lambda s: Sweep.objects.get(pk=s.pk).name == "after",
    ),
    "answer": (
        "sweep",
        lambda s: (reverse("sweeps:answer", args=[_question(s).pk]), {"happened": "yes"}),
        lambda s: _question(s).status == Question.Status.ANSWERED,
    ),
    "answer-all": (
        "sweep",
        lambda s: (reverse("sweeps:answer_all", args=[s.pk]), {}),
        lambda s: _question(s).status == Question.Status.ANSWERED,
    ),
    "audit-launch": (
        "audit",
        lambda a: (
            reverse("sweeps:audits"),
            {"job": "triage", "designs": ["loop"], "trackers": ["keyed"], "worlds": ["panic"]},
        ),
        lambda a: Audit.objects.count() == 2,
    ),
    "audit-resume": (
        "audit",
        lambda a: (reverse("sweeps:audit_resume", args=[a.pk]), {}),
        lambda a: Audit.objects.get(pk=a.pk).status == Audit.Status.RUNNING,
    ),
}
LAUNCHES = {"launch", "plan", "audit-launch"}
# Who may: launching needs the operator role (whose sweep it "is" does not apply); every other write
# needs the owner (an operator) or staff.
ALLOWED = {
    endpoint: {"operator-own", "operator-other", "staff"} if endpoint in LAUNCHES else {"operator-own", "staff"}
    for endpoint in ENDPOINTS
}


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("endpoint", list(ENDPOINTS))
def test_every_write_endpoint_for_every_role(people, endpoint, role):
    kind, request, done = ENDPOINTS[endpoint]
    target = (
        owned_audit(people["owner"])
        if kind == "audit"
        else owned_sweep(people["owner"], status=Sweep.Status.CANCELLED)
        if kind == "cancelled"
        else owned_sweep(people["owner"])
    )
    url, data = request(target)
    r = as_role(people, role).post(url, data)
    if role in ALLOWED[endpoint]:
        assert r.status_code in (200, 302), (r.status_code, r.content[:300])
        assert done is None or done(target)
    else:
        assert r.status_code == 403
        page = r.content.decode()
        assert (
            "log in to" in page
            if role == "anonymous"
            else "ask staff for the operator role" in page
            if role == "viewer"
            else "only its owner or staff" in page
        )
        assert done is None or not done(target)


@pytest.mark.parametrize(
    ("role", "status"),
    [("anonymous", 302), ("viewer", 403), ("operator-own", 200), ("operator-other", 403), ("staff", 200)],
)
def test_the_delete_confirm_page_for_every_role(people, role, status):
    sweep = owned_sweep(people["owner"])
    r = as_role(people, role).get(reverse("sweeps:delete", args=[sweep.pk]))
    assert r.status_code == status and Sweep.objects.filter(pk=sweep.pk).exists()


@pytest.mark.parametrize("role", ROLES[1:])
def test_the_sweep_page_offers_exactly_the_buttons_the_role_may_press(people, role):
    sweep = owned_sweep(people["owner"])
    page = as_role(people, role).get(reverse("sweeps:detail", args=[sweep.pk])).content.decode()
    shown = {"cancel": 'id="cancel"' in page, "edit": 'id="edit-notes"' in page, "delete": 'id="delete"' in page}
    may = role in ("operator-own", "staff")
    assert shown == {"cancel": may, "edit": may, "delete": may}
    questions = as_role(people, role).get(reverse("sweeps:sweep_questions", args=[sweep.pk])).content.decode()
    assert ("it happened</button>" in questions) is may and ('id="answer-all"' in questions) is may


@pytest.mark.parametrize("role", ROLES[1:])
def test_the_launch_forms_are_offered_to_operators_and_staff_only(people, role):
    c = as_role(people, role)
    may = role != "viewer"
    assert ('name="request_token"' in c.get(reverse("sweeps:list")).content.decode()) is may
    assert ('id="audit-form"' in c.get(reverse("sweeps:audits")).content.decode()) is may


# --- reading ------------------------------------------------------------------------------------


def _read_urls(sweep: Sweep) -> dict[str, list[str]]:
    scenario = Scenario.objects.filter(sweep=sweep).first()
    return {
        "public": [
            reverse("sweeps:list"),
            reverse("sweeps:detail", args=[sweep.pk]),
            reverse("sweeps:progress", args=[sweep.pk]),
            reverse("sweeps:heatmap", args=[sweep.pk]),
            reverse("sweeps:scenarios", args=[sweep.pk]),
            reverse("sweeps:compare"),
            reverse("sweeps:audits"),
        ],
        # Call arguments and keys: never to anonymous visitors.
        "login": [
            reverse("sweeps:scenario", args=[scenario.pk]),
            reverse("sweeps:questions"),
            reverse("sweeps:sweep_questions", args=[sweep.pk]),
            reverse("sweeps:export_scenarios", args=[sweep.pk, "csv"]),
            reverse("sweeps:witness") + "?job=triage&design=loop&tracker=keyed&runs=1&first=3",
        ],
    }


def test_reading_needs_a_login_by_default(people):
    for url in sum(_read_urls(owned_sweep(people["owner"])).values(), []):
        r = Client().get(url)
        assert r.status_code == 302 and r["Location"].startswith(reverse("login")), url


def test_public_reading_opens_the_pages_without_arguments_or_keys_only(people, settings):
    settings.SWEEPSITE_PUBLIC_READ = True
    urls = _read_urls(owned_sweep(people["owner"]))
    for url in urls["public"]:
        assert Client().get(url).status_code == 200, url
    for url in urls["login"]:
        r = Client().get(url)
        assert r.status_code == 302 and r["Location"].startswith(reverse("login")), url


def test_a_viewer_reads_every_page(people):
    c = as_role(people, "viewer")
    for url in sum(_read_urls(owned_sweep(people["owner"])).values(), []):
        assert c.get(url).status_code == 200, url


def test_a_user_with_no_role_is_told_to_ask_for_one(people):
    c = Client()
    c.force_login(member("nora", None))
    r = c.get(reverse("sweeps:detail", args=[owned_sweep(people["owner"]).pk]))
    assert r.status_code == 403 and "(no role) may not read the dashboard: ask staff for the viewer role" in (
        r.content.decode()
    )


def test_a_permission_given_to_one_user_counts_as_a_role_s():
    from django.contrib.auth.models import Permission

    user = member("dee", "operator")
    user.user_permissions.add(Permission.objects.get(codename="delete_sweep"))
    user = get_user_model().objects.get(pk=user.pk)  # permissions are cached per instance
    assert roles.may(user, "delete", None) and not roles.may(user, "cancel", None)


def test_a_superuser_may_do_everything_to_a_sweep_without_an_owner():
    boss = get_user_model().objects.create_superuser("boss", "", None)
    operator = member("op", "operator")
    assert all(roles.may(boss, action, None) for action in roles.ACTIONS)
    assert not any(roles.may(operator, action, None) for action in roles.SWEEP_ACTIONS)


# --- the groups and `manage.py user` ------------------------------------------------------------


def test_migrate_makes_the_three_groups_with_their_roles_permissions():
    held = {
        g.name: {f"{p.content_type.app_label}.{p.codename}" for p in g.permissions.all()}
        for g in Group.objects.filter(name__in=roles.ROLES)
    }
    assert held["viewer"] == set(roles.ROLES["viewer"])
    assert held["operator"] == held["viewer"] | {"sweeps.add_sweep", "sweeps.add_audit"}
    assert {
        "sweeps.change_sweep",
        "sweeps.delete_sweep",
        "sweeps.change_audit",
        "axes.delete_accessattempt",
        "auth.add_user",
    } <= held["staff"] and held["operator"] <= held["staff"]


def test_the_user_command_creates_a_user_with_a_role_and_a_password_shown_once():
    out = io.StringIO()
    call_command("user", "ivy", "--role", "operator", stdout=out)
    ivy = get_user_model().objects.get(username="ivy")
    password = out.getvalue().split("password ")[1].split(",")[0]
    assert ivy.check_password(password) and roles.role_name(ivy) == "operator" and not ivy.is_staff


def test_the_user_command_changes_a_role_and_keeps_the_password(monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("a-long-password-1\n"))
    call_command("user", "ivy", "--role", "viewer", "--password-stdin", stdout=io.StringIO())
    call_command("user", "ivy", "--role", "staff", stdout=io.StringIO())
    ivy = get_user_model().objects.get(username="ivy")
    assert roles.role_name(ivy) == "staff" and ivy.is_staff and ivy.check_password("a-long-password-1")
    assert list(ivy.groups.values_list("name", flat=True)) == ["staff"]


def test_the_user_command_refuses_a_short_password_and_stores_nothing(monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("short\n"))
    with pytest.raises(CommandError, match="too short"):
        call_command("user", "ivy", "--role", "viewer", "--password-stdin", stdout=io.StringIO())
    assert not get_user_model().objects.filter(username="ivy").exists()


# --- the per-user limit of unfinished sweeps ----------------------------------------------------


def test_a_launch_beyond_the_limit_is_refused_with_a_message_and_stores_nothing(settings):
    settings.SWEEPSITE_MAX_RUNNING = 2
    olga = member("olga", "operator")
    _data.make_sweep(1, created_by=olga)  # running
    _data.make_sweep(1, created_by=olga, status=Sweep.Status.WAITING)  # waiting for answers: unfinished too
    _data.make_sweep(1, created_by=olga, status=Sweep.Status.DONE)
    _data.make_sweep(1, created_by=olga, status=Sweep.Status.CANCELLED)
    r = logged_in(olga).post(reverse("sweeps:launch"), launch_data())
    assert r.status_code == 400
    assert (
        "olga has 2 unfinished sweeps (running or waiting for answers), the most one user may have at once "
        "(2): wait for one to finish or cancel one"
    ) in r.content.decode()
    assert Sweep.objects.count() == 4 and Chunk.objects.count() == 0


def test_the_limit_is_per_user(settings):
    settings.SWEEPSITE_MAX_RUNNING = 1
    _data.make_sweep(1, created_by=member("olga", "operator"))
    r = logged_in(member("otto", "operator")).post(reverse("sweeps:launch"), launch_data())
    assert r.status_code == 302 and Sweep.objects.filter(created_by__username="otto").count() == 1


def test_a_launch_under_the_limit_goes_through_and_then_the_next_is_refused(settings):
    settings.SWEEPSITE_MAX_RUNNING = 1
    c = logged_in(member("olga", "operator"))
    assert c.post(reverse("sweeps:launch"), launch_data()).status_code == 302
    assert c.post(reverse("sweeps:launch"), launch_data()).status_code == 400
    assert Sweep.objects.count() == 1


def test_a_resume_beyond_the_owner_s_limit_is_refused_even_for_staff(settings, people):
    settings.SWEEPSITE_MAX_RUNNING = 1
    cancelled = owned_sweep(people["owner"], status=Sweep.Status.CANCELLED)
    _data.make_sweep(1, created_by=people["owner"])  # running
    r = as_role(people, "staff").post(reverse("sweeps:resume", args=[cancelled.pk]), follow=True)
    assert "olga has 1 unfinished sweep (running or waiting for answers)" in r.content.decode()
    assert _status(cancelled) == Sweep.Status.CANCELLED


def test_a_limit_of_0_is_no_limit_and_commands_have_none(settings):
    olga = member("olga", "operator")
    settings.SWEEPSITE_MAX_RUNNING = 0
    for _ in range(3):
        launch.sweep_create(user=olga, job_source=builtin_job_source("triage"), configs=LOOP, depth=1)
    settings.SWEEPSITE_MAX_RUNNING = 1
    cancelled = launch.sweep_create(user=None, job_source=builtin_job_source("triage"), configs=LOOP, depth=1)
    launch.sweep_create(user=None, job_source=builtin_job_source("triage"), configs=LOOP, depth=1)
    lifecycle.sweep_cancel(sweep_id=cancelled.pk)
    recovery.sweep_resume(sweep_id=cancelled.pk)  # no `limit`: the watchdog's and the commands' resume
    assert Sweep.objects.filter(status=Sweep.Status.RUNNING).count() == 5


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_two_launches_at_once_at_the_limit_make_one_sweep(settings, monkeypatch):
    """The owner's row is locked before counting: the second launch waits for the first to commit
    and then counts its sweep (without the lock both would count 0 and both would launch)."""
    settings.SWEEPSITE_MAX_RUNNING = 1
    olga = member("olga", "operator")
    together = threading.Barrier(2)
    real = lifecycle.check_running_limit

    def check_together(owner_id):
        together.wait(timeout=10)
        real(owner_id)
        time.sleep(0.3)  # the first one holds the lock a while, its sweep not yet stored

    monkeypatch.setattr(lifecycle, "check_running_limit", check_together)
    outcomes: list[str] = []

    def launch_one():
        try:
            launch.sweep_create(user=olga, job_source=builtin_job_source("triage"), configs=LOOP, depth=1)
            outcomes.append("launched")
        except ValidationError:
            outcomes.append("refused")
        finally:
            connection.close()

    threads = [threading.Thread(target=launch_one) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert sorted(outcomes) == ["launched", "refused"]
    assert Sweep.objects.filter(created_by=olga).count() == 1
