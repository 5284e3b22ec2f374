"""Security: who may do what, CSRF on every form, who answered and when, the deployment checks.

- Anonymous users cannot launch, answer, answer all, resume (403: a POST is not redirected away from
  its form), export (sent to the login page) or reach the admin (sent to the admin's login).
- Every POST form carries a CSRF token and every POST view checks it (a client that enforces CSRF
  checks gets 403 without the token, and gets through with it).
- `manage.py check --deploy --fail-level WARNING` passes with DJANGO_PRODUCTION=1, the secret key
  and allowed hosts coming from the environment (and the site refuses to start without them).
"""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone

from sweeps.models import Question, Scenario, Sweep
from tests.sweeps import _data
from tests.sweeps._web import launch_data, member, record_enqueued

pytestmark = pytest.mark.django_db


@pytest.fixture
def enqueued(monkeypatch):
    return record_enqueued(monkeypatch)


@pytest.fixture
def ann():
    return member("ann", "staff")  # these sweeps have no owner: staff's (roles: test_roles.py)


@pytest.fixture
def waiting():
    sweep = _data.make_sweep(2, person=Sweep.Person.QUEUE)
    _data.add(sweep, 0, 1)
    _data.chunk(sweep, 0, 1, stored=False)
    sc = _data.add(sweep, 1, 1, status=Scenario.Status.WAITING)
    q = _data.question(sc, "0:call_1", truth=True)
    Sweep.objects.filter(pk=sweep.pk).update(status=Sweep.Status.FAILED, error="a stalled sweep")
    return q


def text(response) -> str:
    return response.content.decode()


def csrf_client(user=None) -> Client:
    c = Client(enforce_csrf_checks=True)
    if user is not None:
        c.force_login(user)
    return c


def token_of(client: Client) -> str:
    """The CSRF token a page gives this client (as a browser would read it from the form)."""
    page = text(client.get(reverse("sweeps:list")))
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)


def unchanged(q: Question) -> bool:
    q2 = Question.objects.get(pk=q.pk)
    return q2.status == Question.Status.OPEN and q2.answered_by is None and q2.answered_at is None


# --- anonymous users ----------------------------------------------------------------------------


def test_anonymous_cannot_launch(client, enqueued):
    r = client.post(reverse("sweeps:launch"), launch_data())
    assert r.status_code == 403 and "log in" in text(r)
    assert not Sweep.objects.exists() and enqueued == []


def test_anonymous_gets_no_launch_form(client, settings):
    settings.SWEEPSITE_PUBLIC_READ = True
    assert 'action="/sweeps/launch/"' not in text(client.get(reverse("sweeps:list")))


def test_anonymous_cannot_answer(client, waiting, enqueued):
    assert client.post(reverse("sweeps:answer", args=[waiting.pk]), {"happened": "yes"}).status_code == 403
    assert unchanged(waiting) and enqueued == []


def test_anonymous_cannot_answer_all(client, waiting, enqueued):
    assert client.post(reverse("sweeps:answer_all", args=[waiting.sweep_id])).status_code == 403
    assert unchanged(waiting) and enqueued == []


def test_anonymous_cannot_resume(client, waiting, enqueued):
    assert client.post(reverse("sweeps:resume", args=[waiting.sweep_id])).status_code == 403
    assert Sweep.objects.get(pk=waiting.sweep_id).status == Sweep.Status.FAILED and enqueued == []


def test_anonymous_gets_no_resume_button_and_no_questions_where_reading_is_public(client, waiting, settings):
    settings.SWEEPSITE_PUBLIC_READ = True
    page = client.get(reverse("sweeps:detail", args=[waiting.sweep_id]))
    assert page.status_code == 200 and 'id="resume"' not in text(page)
    # The questions show call arguments and keys: never to anonymous visitors.
    r = client.get(reverse("sweeps:sweep_questions", args=[waiting.sweep_id]))
    assert r.status_code == 302 and r["Location"].startswith(reverse("login"))


@pytest.mark.parametrize(
    "name,fmt",
    [("sweeps:export_table", f) for f in ("csv", "json", "md")]
    + [("sweeps:export_scenarios", f) for f in ("csv", "jsonl")],
)
def test_anonymous_cannot_export(client, waiting, name, fmt):
    url = reverse(name, args=[waiting.sweep_id, fmt])
    r = client.get(url + "?has_dups=yes")
    assert r.status_code == 302 and r["Location"].startswith(reverse("login") + "?next=")
    assert "sweep" not in r.get("Content-Disposition", "")


@pytest.mark.parametrize(
    "url",
    [
        "/admin/",
        "/admin/sweeps/sweep/",
        "/admin/sweeps/question/",
        "/admin/sweeps/scenario/",
        "/admin/sweeps/chunk/",
        "/admin/auth/user/",
        "/admin/sweeps/sweep/add/",
    ],
)
def test_anonymous_cannot_reach_the_admin(client, url):
    r = client.get(url)
    assert r.status_code == 302 and r["Location"].startswith("/admin/login/")


def test_anonymous_cannot_change_through_the_admin(client, waiting):
    r = client.post(f"/admin/sweeps/question/{waiting.pk}/change/", {"status": "answered"})
    assert r.status_code == 302 and r["Location"].startswith("/admin/login/")
    assert unchanged(waiting)


def test_a_user_who_is_not_staff_cannot_reach_the_admin(client):
    client.force_login(member("olga", "operator"))
    for url in ("/admin/", "/admin/sweeps/sweep/"):
        r = client.get(url)
        assert r.status_code == 302 and r["Location"].startswith("/admin/login/")


def test_staff_reach_the_admin(admin_client):
    assert admin_client.get("/admin/sweeps/sweep/").status_code == 200


def test_private_reading_sends_anonymous_users_to_log_in(client, waiting, settings):
    settings.SWEEPSITE_PUBLIC_READ = False
    s = waiting.sweep_id
    for url in (
        reverse("sweeps:list"),
        reverse("sweeps:detail", args=[s]),
        reverse("sweeps:progress", args=[s]),
        reverse("sweeps:heatmap", args=[s]),
        reverse("sweeps:scenarios", args=[s]),
        reverse("sweeps:scenario", args=[waiting.scenario_id]),
        reverse("sweeps:questions"),
        reverse("sweeps:sweep_questions", args=[s]),
    ):
        r = client.get(url)
        assert r.status_code == 302 and r["Location"].startswith(reverse("login")), url


# --- CSRF ---------------------------------------------------------------------------------------


def test_every_post_form_carries_a_csrf_token():
    forms = 0
    for path in Path(settings.BASE_DIR, "templates").rglob("*.html"):
        for form in re.findall(r"<form\b[^>]*>.*?</form>", path.read_text(), re.S | re.I):
            if re.search(r'method="post"', form, re.I):
                forms += 1
                assert "{% csrf_token %}" in form, f"{path}: a POST form without a CSRF token"
    assert forms >= 6  # launch, answer, answer all, resume, log in, log out


def _views(patterns, prefix=""):
    for p in patterns:
        if isinstance(p, URLResolver):
            yield from _views(p.url_patterns, prefix + str(p.pattern))
        elif isinstance(p, URLPattern):
            yield prefix + str(p.pattern), p.callback


def test_no_view_is_exempt_from_csrf():
    exempt = [route for route, view in _views(get_resolver().url_patterns) if getattr(view, "csrf_exempt", False)]
    assert exempt == []


def test_launch_needs_the_csrf_token(ann, enqueued):
    c = csrf_client(ann)
    assert c.post(reverse("sweeps:launch"), launch_data()).status_code == 403
    assert not Sweep.objects.exists()
    r = c.post(reverse("sweeps:launch"), {**launch_data(depth="1"), "csrfmiddlewaretoken": token_of(c)})
    assert r.status_code == 302 and Sweep.objects.count() == 1


def test_a_forged_csrf_token_is_refused(ann):
    c = csrf_client(ann)
    token_of(c)  # the cookie is set; the form's token is not sent
    for forged in ("x" * 64, "", "' OR 1=1"):
        r = c.post(reverse("sweeps:launch"), {**launch_data(), "csrfmiddlewaretoken": forged})
        assert r.status_code == 403
    assert not Sweep.objects.exists()


def test_answer_needs_the_csrf_token(ann, waiting, enqueued):
    c = csrf_client(ann)
    assert c.post(reverse("sweeps:answer", args=[waiting.pk]), {"happened": "yes"}).status_code == 403
    assert unchanged(waiting)
    r = c.post(reverse("sweeps:answer", args=[waiting.pk]), {"happened": "yes", "csrfmiddlewaretoken": token_of(c)})
    assert r.status_code == 302 and not unchanged(waiting)


def test_answer_all_needs_the_csrf_token(ann, waiting, enqueued):
    c = csrf_client(ann)
    assert c.post(reverse("sweeps:answer_all", args=[waiting.sweep_id])).status_code == 403
    assert unchanged(waiting)
    r = c.post(reverse("sweeps:answer_all", args=[waiting.sweep_id]), {"csrfmiddlewaretoken": token_of(c)})
    assert r.status_code == 302 and not unchanged(waiting)


def test_resume_needs_the_csrf_token(ann, waiting, enqueued):
    c = csrf_client(ann)
    assert c.post(reverse("sweeps:resume", args=[waiting.sweep_id])).status_code == 403
    assert Sweep.objects.get(pk=waiting.sweep_id).status == Sweep.Status.FAILED
    r = c.post(reverse("sweeps:resume", args=[waiting.sweep_id]), {"csrfmiddlewaretoken": token_of(c)})
    assert r.status_code == 302 and Sweep.objects.get(pk=waiting.sweep_id).status == Sweep.Status.RUNNING


def test_logout_needs_the_csrf_token(ann):
    c = csrf_client(ann)
    assert c.post(reverse("logout")).status_code == 403
    assert c.get(reverse("sweeps:list")).context["user"].is_authenticated  # still logged in
    assert c.post(reverse("logout"), {"csrfmiddlewaretoken": token_of(c)}).status_code == 302
    r = c.get(reverse("sweeps:list"))  # logged out: reading needs a login again
    assert r.status_code == 302 and r["Location"].startswith(reverse("login"))


def test_login_needs_the_csrf_token(django_user_model):
    django_user_model.objects.create_user("cy", password="pw-cy-12345")
    c = csrf_client()
    assert c.post(reverse("login"), {"username": "cy", "password": "pw-cy-12345"}).status_code == 403
    page = text(c.get(reverse("login")))
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    r = c.post(reverse("login"), {"username": "cy", "password": "pw-cy-12345", "csrfmiddlewaretoken": token})
    assert r.status_code == 302


# --- who answered and when ----------------------------------------------------------------------


def test_who_answered_and_when_is_recorded_and_shown(client, ann, waiting, enqueued):
    client.force_login(ann)
    before = timezone.now()
    client.post(reverse("sweeps:answer", args=[waiting.pk]), {"happened": "no"})
    q = Question.objects.get(pk=waiting.pk)
    assert q.answered_by == ann and before <= q.answered_at <= timezone.now() and q.answer is False
    when = f"{timezone.localtime(q.answered_at):%Y-%m-%d %H:%M:%S}"
    queue = text(client.get(reverse("sweeps:sweep_questions", args=[q.sweep_id]) + "?status=answered"))
    assert f"it did not happen · ann, {when}" in queue
    assert f"ann, {when}" in text(client.get(reverse("sweeps:questions") + "?status=answered"))
    assert f"(ann, {when}; wrong)" in text(client.get(reverse("sweeps:scenario", args=[q.scenario_id])))


def test_answer_all_records_who_answered(client, ann, waiting, enqueued):
    client.force_login(ann)
    client.post(reverse("sweeps:answer_all", args=[waiting.sweep_id]))
    q = Question.objects.get(pk=waiting.pk)
    assert q.answered_by == ann and q.answered_at is not None and q.answer is True


def test_answer_redirects_only_to_this_site(client, ann, waiting, enqueued):
    client.force_login(ann)
    fallback = reverse("sweeps:sweep_questions", args=[waiting.sweep_id])
    for target in (
        "https://evil.example/",
        "//evil.example/x",
        "javascript:alert(1)",
        "http:/\\evil.example",
        "\\\\evil.example",
        "/\\evil.example",
        "yes",
        "admin:index",
        "questions/",
    ):
        Question.objects.filter(pk=waiting.pk).update(status=Question.Status.OPEN)
        r = client.post(reverse("sweeps:answer", args=[waiting.pk]), {"happened": "yes", "next": target})
        assert r.status_code == 302 and r["Location"] == fallback, target
    r = client.post(reverse("sweeps:answer", args=[waiting.pk]), {"happened": "yes", "next": "/questions/?page=1"})
    assert r["Location"] == "/questions/?page=1"  # a path on this site is kept


# --- deployment ---------------------------------------------------------------------------------


def manage(tmp_path, *args: str, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "ALLOWED_HOSTS", "DJANGO_DEBUG")}
    environ.update({"SWEEPSITE_VAR": str(tmp_path), "DJANGO_PRODUCTION": "1", **env})
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=settings.BASE_DIR,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )


PRODUCTION_ENV = {"SECRET_KEY": secrets.token_urlsafe(64), "ALLOWED_HOSTS": "example.com"}


def test_check_deploy_passes_with_the_production_settings(tmp_path):
    r = manage(tmp_path, "check", "--deploy", "--fail-level", "WARNING", **PRODUCTION_ENV)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "no issues" in r.stdout


def test_production_takes_the_secret_key_and_hosts_from_the_environment(tmp_path):
    code = (
        "import os; from django.conf import settings as s; "
        "print(s.DEBUG, s.ALLOWED_HOSTS, s.SECRET_KEY == os.environ['SECRET_KEY'], s.SESSION_COOKIE_SECURE, "
        "s.CSRF_COOKIE_SECURE)"
    )
    r = manage(tmp_path, "shell", "--no-imports", "-c", code, **PRODUCTION_ENV)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "False ['example.com'] True True True"


@pytest.mark.parametrize("missing", ["SECRET_KEY", "ALLOWED_HOSTS"])
def test_production_refuses_to_start_without_its_secrets(tmp_path, missing):
    env = {k: v for k, v in PRODUCTION_ENV.items() if k != missing}
    r = manage(tmp_path, "check", **env)
    assert r.returncode != 0 and missing in r.stderr
