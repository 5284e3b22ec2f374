"""`make serve`, the documented production command: gunicorn + WhiteNoise + DJANGO_PRODUCTION=1, started
as the README starts it (a subprocess on the test session's database, broker folder and queue)."""

from __future__ import annotations

import http.client
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.templatetags.static import static

from tests import _make

pytestmark = pytest.mark.django_db(transaction=True)

# Behind its TLS proxy: what the proxy tells the app (SECURE_PROXY_SSL_HEADER).
HTTPS = {"X-Forwarded-Proto": "https"}


@pytest.fixture(scope="module")
def served(django_db_setup: None) -> Iterator[tuple[int, subprocess.Popen]]:
    port = _make.free_port()
    env = _make.session_environ(SECRET_KEY="test-serve-" + "x" * 40, ALLOWED_HOSTS="127.0.0.1")
    log = Path(settings.VAR_DIR) / "make-serve.log"
    proc = _make.start("serve", port, env, log, "WORKERS=1", "GUNICORN_WORKERS=1")
    try:
        _make.wait_until_served(proc, f"http://127.0.0.1:{port}/", log, headers=HTTPS)
        assert "Starting gunicorn" in log.read_text()  # not runserver
        yield port, proc
    finally:
        _make.stop(proc)


def _get(port: int, path: str, **headers: str) -> http.client.HTTPResponse:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", path, headers=headers)
    response = conn.getresponse()
    response.read()
    conn.close()
    return response


def test_make_serve_serves_plotly_compressed_with_a_year_of_cache(served):
    port, _ = served
    r = _get(port, static("plotly/plotly.min.js"), **HTTPS, **{"Accept-Encoding": "gzip"})
    assert r.status == 200
    assert r.getheader("Content-Encoding") == "gzip"
    assert "max-age=315360000" in r.getheader("Cache-Control", "")
    assert _get(port, static("admin/css/base.css"), **HTTPS).status == 200


def test_make_serve_runs_the_production_settings(served):
    port, _ = served
    # Plain HTTP is sent to HTTPS (SECURE_SSL_REDIRECT), and pages are not served with DEBUG's pages.
    r = _get(port, "/")
    assert r.status == 301 and r.getheader("Location", "").startswith("https://")
    assert _get(port, "/no-such-page/", **HTTPS).status == 404
    assert "Strict-Transport-Security" in dict(_get(port, "/", **HTTPS).getheaders())


def test_make_serve_without_a_secret_key_says_which_variables_it_needs():
    env = _make.session_environ(ALLOWED_HOSTS="127.0.0.1")
    env.pop("SECRET_KEY", None)
    done = subprocess.run(
        ["make", "--no-print-directory", "serve"],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "set SECRET_KEY and ALLOWED_HOSTS" in done.stdout + done.stderr


def test_make_serve_answers_healthz_on_plain_http_and_reports_it_after_its_banner(served, wait_until):
    """A load balancer's probe needs no TLS: /healthz is exempt from the redirect to HTTPS."""
    port, proc = served
    r = _get(port, "/healthz")
    assert r.status == 200 and r.getheader("Content-Type") == "application/json"
    log = Path(settings.VAR_DIR) / "make-serve.log"
    wait_until(lambda: "health:" in log.read_text(), timeout=90, what="make serve's health line")
    assert "health: ok (database, broker, " in log.read_text()
