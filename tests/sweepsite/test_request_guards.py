"""Request bodies refused before they are read: a Content-Length over the limit (413), an anonymous write
(403, or the admin's log-in). In Django's test client with a body that fails if read, then on raw sockets
against the server as `make run` starts it (headers only: the answer must come without the body) and
as `make serve` starts it (gunicorn)."""

from __future__ import annotations

import http.cookies
import os
import re
import socket
from collections.abc import Iterator
from io import BytesIO
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse

from sweeps import limits
from sweeps.models import Sweep
from tests import _make

LIMIT = settings.SWEEPSITE_MAX_REQUEST_BYTES


class Unreadable(BytesIO):
    """A request body that fails the test if anything reads it."""

    def read(self, *args: object) -> bytes:
        raise AssertionError("the body was read")

    readline = read


def unread(length: int) -> dict[str, object]:
    return {
        "wsgi.input": Unreadable(),
        "CONTENT_LENGTH": str(length),
        "CONTENT_TYPE": "multipart/form-data; boundary=x",
    }


# --- the limits match ---------------------------------------------------------------------------


def test_the_limits_leave_room_for_a_job_file_at_its_limit_and_keep_uploads_in_memory():
    assert LIMIT == limits.MAX_JOB_BYTES + limits.MAX_FORM_OVERHEAD_BYTES
    assert settings.DATA_UPLOAD_MAX_MEMORY_SIZE == settings.FILE_UPLOAD_MAX_MEMORY_SIZE == LIMIT
    # No handler that writes a temporary file: what passes the limit is read into memory.
    assert settings.FILE_UPLOAD_HANDLERS == ["django.core.files.uploadhandler.MemoryFileUploadHandler"]
    assert settings.MIDDLEWARE[0] == "sweepsite.request_guards.RequestSizeLimitMiddleware"
    auth = settings.MIDDLEWARE.index("django.contrib.auth.middleware.AuthenticationMiddleware")
    assert settings.MIDDLEWARE[auth + 1] == "sweepsite.request_guards.AnonymousWriteMiddleware"


# --- in the test client: nothing reads the body -------------------------------------------------


@pytest.mark.django_db
def test_a_body_over_the_limit_is_answered_413_unread(admin_client):
    r = admin_client.post(reverse("sweeps:launch"), **unread(LIMIT + 1))
    assert r.status_code == 413 and f"the limit is {LIMIT:,} bytes" in r.content.decode()
    assert not Sweep.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    "name,args",
    [
        ("sweeps:launch", []),
        ("sweeps:plan", []),
        ("sweeps:resume", [1]),
        ("sweeps:answer", [1]),
        ("sweeps:delete", [1]),
        ("sweeps:edit", [1]),
    ],
)
def test_an_anonymous_write_is_refused_unread(name, args):
    client = Client(enforce_csrf_checks=True)
    r = client.post(reverse(name, args=args), **unread(1000))
    assert r.status_code == 403 and "log in" in r.content.decode()


@pytest.mark.django_db
def test_an_anonymous_write_with_a_csrf_token_is_refused_unread():
    """With the CSRF cookie and token (free from the log-in page), CSRF's check would read the body."""
    client = Client(enforce_csrf_checks=True)
    page = client.get(reverse("login")).content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    r = client.post(reverse("sweeps:launch"), HTTP_X_CSRFTOKEN=token, **unread(LIMIT - 1))
    assert r.status_code == 403 and "log in" in r.content.decode()


@pytest.mark.django_db
@pytest.mark.parametrize("method", ["put", "patch", "delete"])
def test_other_anonymous_writes_are_refused_unread(client, method):
    r = getattr(client, method)(reverse("sweeps:detail", args=[1]), **unread(10))
    assert r.status_code == 403


@pytest.mark.django_db
def test_an_anonymous_write_to_the_admin_goes_to_its_log_in_unread():
    r = Client().post("/admin/auth/user/add/", **unread(1000))
    assert r.status_code == 302 and r["Location"].startswith("/admin/login/?next=")


@pytest.mark.django_db
def test_the_log_in_form_still_takes_an_anonymous_post(django_user_model):
    django_user_model.objects.create_user("ann", password="pw-guard-123")
    client = Client(enforce_csrf_checks=True)
    page = client.get(reverse("login")).content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    r = client.post(reverse("login"), {"username": "ann", "password": "pw-guard-123", "csrfmiddlewaretoken": token})
    assert r.status_code == 302 and client.session.get("_auth_user_id")


# --- on the wire: make run (runserver) and make serve (gunicorn) --------------------------------


def raw_request(port: int, head: str, timeout: float = 30) -> str:
    """Send the request line and headers only (no body) and read the answer: it must come anyway. Its
    body is read as long as its Content-Length says, or without one up to the end of the connection
    (the server closes it: `Connection: close`)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(head.encode())
        data = b""
        try:
            while not _whole(data):
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        except TimeoutError:
            raise AssertionError(
                f"no whole answer within {timeout} s: the server waits for the body (received: {data[:300]!r})"
            ) from None
    return data.decode("latin-1")


def _whole(data: bytes) -> bool:
    head, found, body = data.partition(b"\r\n\r\n")
    length = re.search(rb"\r\ncontent-length: *(\d+)", head, re.I)
    return bool(found) and length is not None and len(body) >= int(length.group(1))


def csrf_of(port: int, extra: str = "") -> tuple[str, str]:
    """The login page's CSRF cookie and form token, as an anonymous client gets them for free."""
    answer = raw_request(port, f"GET /accounts/login/ HTTP/1.1\r\nHost: 127.0.0.1\r\n{extra}Connection: close\r\n\r\n")
    cookie = http.cookies.SimpleCookie()
    for line in answer.split("\r\n"):
        if line.lower().startswith("set-cookie:"):
            cookie.load(line.split(":", 1)[1].strip())
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', answer)
    assert token and "csrftoken" in cookie, answer[:500]
    return cookie["csrftoken"].value, token.group(1)


def post_head(path: str, length: int, cookie: str = "", token: str = "", extra: str = "") -> str:
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{extra}Content-Type: multipart/form-data; boundary=b\r\n"
        f"Content-Length: {length}\r\n"
        + (f"Cookie: csrftoken={cookie}\r\nX-CSRFToken: {token}\r\nReferer: http://127.0.0.1/\r\n" if cookie else "")
        + "\r\n"
    )


def temp_files(tmp: Path) -> list[str]:
    return sorted(str(p.relative_to(tmp)) for p in tmp.rglob("*") if p.is_file())


@pytest.fixture(scope="module")
def run_site(django_db_setup: None, django_db_blocker, tmp_path_factory) -> Iterator[tuple[int, Path]]:
    """`make run` with a TMPDIR of its own, so that a temporary file it writes can be seen."""
    tmp = tmp_path_factory.mktemp("make-run-tmp")
    with django_db_blocker.unblock():
        env = _make.session_environ(SWEEPSITE_STALL_SECONDS="0", TMPDIR=str(tmp))
    port = _make.free_port()
    log = Path(settings.VAR_DIR) / "make-run-guards.log"
    proc = _make.start("run", port, env, log, "WORKERS=1")
    try:
        _make.wait_until_served(proc, f"http://127.0.0.1:{port}/", log)
        yield port, tmp
    finally:
        _make.stop(proc)


@pytest.mark.django_db(transaction=True)
def test_make_run_answers_413_to_a_large_content_length_without_waiting_for_the_body(run_site):
    port, tmp = run_site
    before = temp_files(tmp)
    answer = raw_request(port, post_head("/sweeps/launch/", 52_400_000))
    assert answer.startswith("HTTP/1.1 413 ") and "the limit is" in answer, answer[:300]
    assert "\r\nConnection: close\r\n" in answer  # the unread body is never taken for a next request
    assert temp_files(tmp) == before


@pytest.mark.django_db(transaction=True)
def test_make_run_refuses_an_anonymous_post_with_a_csrf_token_without_reading_the_body(run_site):
    port, tmp = run_site
    cookie, token = csrf_of(port)
    before = temp_files(tmp)
    answer = raw_request(port, post_head("/sweeps/launch/", LIMIT - 1, cookie, token))
    assert answer.startswith("HTTP/1.1 403 ") and "log in" in answer, answer[:300]
    assert temp_files(tmp) == before


@pytest.mark.django_db(transaction=True)
def test_make_run_still_answers_after_a_refused_body(run_site):
    """The refused connection is closed, and the server goes on answering others at once."""
    port, _ = run_site
    raw_request(port, post_head("/sweeps/launch/", 900_000_000))
    answer = raw_request(
        port, "GET /accounts/login/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", timeout=5
    )
    assert answer.startswith("HTTP/1.1 200 ")


@pytest.mark.django_db(transaction=True)
def test_make_serve_answers_413_and_403_without_waiting_for_the_body(django_db_blocker):
    https = "X-Forwarded-Proto: https\r\n"
    with django_db_blocker.unblock():
        env = _make.session_environ(
            SECRET_KEY="test-guards-" + "x" * 40, ALLOWED_HOSTS="127.0.0.1", SWEEPSITE_STALL_SECONDS="0"
        )
    port = _make.free_port()
    log = Path(settings.VAR_DIR) / "make-serve-guards.log"
    proc = _make.start("serve", port, env, log, "WORKERS=1", "GUNICORN_WORKERS=1")
    try:
        _make.wait_until_served(proc, f"http://127.0.0.1:{port}/", log, headers={"X-Forwarded-Proto": "https"})
        answer = raw_request(port, post_head("/sweeps/launch/", 52_400_000, extra=https))
        assert answer.startswith("HTTP/1.1 413 "), answer[:300]
        cookie, token = csrf_of(port, https)
        answer = raw_request(port, post_head("/sweeps/launch/", LIMIT - 1, cookie, token, extra=https))
        assert answer.startswith("HTTP/1.1 403 ") and "log in" in answer, answer[:300]
    finally:
        _make.stop(proc)


@pytest.mark.django_db
def test_no_upload_writes_a_temporary_file_in_process(tmp_path, monkeypatch, admin_user, settings):
    """A job file just under the limit is never spooled to disk: TMPDIR stays empty, even with the
    in-memory size lowered below the file (Django's default handlers would write a temp file then)."""
    import tempfile

    from django.core.files.uploadedfile import SimpleUploadedFile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 1024
    client = Client()
    client.force_login(admin_user)
    r = client.post(
        reverse("sweeps:plan"),
        {"job": "upload", "job_file": SimpleUploadedFile("big.json", b" " * (limits.MAX_JOB_BYTES - 10))},
    )
    assert r.status_code < 500
    assert os.listdir(tmp_path) == []
