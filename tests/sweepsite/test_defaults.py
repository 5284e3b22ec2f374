"""Safe defaults: the embedded default's SECRET_KEY generated per install, production's missing settings
in one line, `check --deploy` clean in production, the Content-Security-Policy on every page."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse

from sweepsite import config, content_policy

OLD_KEY = "dev-only-insecure-key-do-not-use-in-production"
STRONG_KEY = "test-deploy-" + "k3y" * 20


def manage(*args: str, var: Path, timeout: float = 120, **env: str) -> subprocess.CompletedProcess:
    """`manage.py ARGS` as a person runs it, in a fresh process, on its own var/ folder."""
    base = {
        k: v
        for k, v in os.environ.items()
        if k not in ("SECRET_KEY", "ALLOWED_HOSTS", "DJANGO_PRODUCTION", "DJANGO_DEBUG")
    }
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**base, "SWEEPSITE_VAR": str(var), **env},
    )


SHOW_KEY = ("shell", "--no-imports", "-c", "from django.conf import settings; print(settings.SECRET_KEY)")


# --- the generated key -------------------------------------------------------------------------


def test_the_embedded_default_generates_a_key_kept_mode_0600_and_reused(tmp_path):
    first = manage(*SHOW_KEY, var=tmp_path)
    assert first.returncode == 0, first.stderr
    key = first.stdout.strip()
    path = tmp_path / config.SECRET_KEY_FILE
    assert path.read_text().strip() == key and len(key) >= 50 and key != OLD_KEY
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    again = manage(*SHOW_KEY, var=tmp_path)
    assert again.stdout.strip() == key  # a restart reads the same key: sessions stay valid


def test_each_install_has_a_key_of_its_own(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    assert config.install_secret_key(a) != config.install_secret_key(b)


def test_processes_starting_together_agree_on_one_key(tmp_path):
    with ProcessPoolExecutor(4) as pool:
        keys = set(pool.map(config.install_secret_key, [tmp_path] * 8))
    assert len(keys) == 1
    assert [p.name for p in tmp_path.iterdir()] == [config.SECRET_KEY_FILE]  # no temporary file left


def test_a_secret_key_from_the_environment_wins_and_nothing_is_written(tmp_path):
    r = manage(*SHOW_KEY, var=tmp_path, SECRET_KEY="from-the-environment")
    assert r.stdout.strip() == "from-the-environment"
    assert not (tmp_path / config.SECRET_KEY_FILE).exists()


def test_the_source_holds_no_secret_key():
    assert OLD_KEY not in (Path(settings.BASE_DIR) / "sweepsite" / "settings.py").read_text()
    assert settings.SECRET_KEY != OLD_KEY


# --- production's required settings ------------------------------------------------------------


@pytest.mark.parametrize("missing", ["SECRET_KEY", "ALLOWED_HOSTS"])
def test_production_without_a_required_setting_says_so_in_one_line(tmp_path, missing):
    env = {"DJANGO_PRODUCTION": "1", "SECRET_KEY": STRONG_KEY, "ALLOWED_HOSTS": "example.org"}
    del env[missing]
    r = manage("migrate", var=tmp_path, **env)
    assert r.returncode == 2
    assert r.stdout == "" and "Traceback" not in r.stderr
    assert r.stderr.count("\n") == 1 and missing in r.stderr and "is not set" in r.stderr, r.stderr


def test_gunicorn_without_a_secret_key_stops_with_one_line(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "DJANGO_DEBUG")}
    env.update(DJANGO_PRODUCTION="1", ALLOWED_HOSTS="127.0.0.1", SWEEPSITE_VAR=str(tmp_path))
    r = subprocess.run(
        [str(Path(sys.executable).parent / "gunicorn"), "sweepsite.wsgi", "--bind", "127.0.0.1:0", "--workers", "1"],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    out = r.stdout + r.stderr
    assert r.returncode == 4 and "App failed to load" in out  # gunicorn stops, no worker restarted in a loop
    assert "sweepsite: SECRET_KEY is not set in the environment" in out and "Traceback" not in out


def test_check_deploy_is_clean_in_production(tmp_path):
    r = manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        var=tmp_path,
        DJANGO_PRODUCTION="1",
        SECRET_KEY=STRONG_KEY,
        ALLOWED_HOSTS="sweeps.example.org",
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "System check identified no issues" in r.stdout


# --- Content-Security-Policy -------------------------------------------------------------------


def directives(header: str) -> dict[str, list[str]]:
    parts = (d.strip().split() for d in header.split(";") if d.strip())
    return {p[0]: p[1:] for p in parts}


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["sweeps:list", "login", "sweeps:questions", "sweeps:audits", "admin:login"])
def test_every_page_carries_the_content_security_policy(client, admin_client, name):
    # The login pages as a visitor sees them, the others logged in: each the page itself, no redirect.
    r = (client if name in ("login", "admin:login") else admin_client).get(reverse(name))
    assert r.status_code == 200
    policy = directives(r["Content-Security-Policy"])
    assert policy["default-src"] == ["'self'"] and policy["script-src"] == ["'self'"]
    assert policy["object-src"] == ["'none'"] and policy["frame-ancestors"] == ["'none'"]
    # Nothing inline or evaluated for scripts; styles: this site's files and the hashes Plotly needs.
    assert not any(src in policy["script-src"] for src in ("'unsafe-inline'", "'unsafe-eval'", "data:", "*"))
    assert "'unsafe-inline'" not in policy["style-src"] + policy["style-src-elem"] + policy["style-src-attr"]
    assert policy["style-src-attr"] == ["'unsafe-hashes'", content_policy.EMPTY_TEXT]


def test_the_policy_is_the_same_in_production():
    prod = subprocess.run(
        [
            sys.executable,
            "-c",
            "from django.conf import settings; from csp.utils import build_policy; print(build_policy())",
        ],
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=60,
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "sweepsite.settings",
            "DJANGO_PRODUCTION": "1",
            "SECRET_KEY": STRONG_KEY,
            "ALLOWED_HOSTS": "x",
        },
    )
    assert prod.returncode == 0, prod.stderr
    assert directives(prod.stdout.strip()) == {
        k: list(v) for k, v in settings.CONTENT_SECURITY_POLICY["DIRECTIVES"].items()
    }


def test_the_templates_hold_no_inline_script_handler_or_style():
    """What the policy refuses would break a page: no <script> with code, no on...= handler, no
    javascript: link, no style attribute or <style> element in any template."""
    for path in Path(settings.BASE_DIR, "templates").rglob("*.html"):
        text = path.read_text()
        for tag in re.findall(r"<script\b[^>]*>", text):
            assert "src=" in tag or 'type="application/json"' in tag, (path, tag)
        assert not re.search(r"\son[a-z]+\s*=", text), path
        assert "javascript:" not in text and not re.search(r"\sstyle\s*=", text) and "<style" not in text, path


def test_plotly_s_own_style_sheets_are_found_in_the_bundle_served():
    """The policy allows them by hash: if a new plotly.min.js inserted its style sheets another way,
    this finds none and the browser test would see the violation."""
    styles = content_policy.inserted_styles(Path(settings.STATICFILES_DIRS[0][1]) / "plotly.min.js")
    assert styles and all(s.strip() for s in styles)
    assert all(
        content_policy.source_hash(s) in settings.CONTENT_SECURITY_POLICY["DIRECTIVES"]["style-src-elem"]
        for s in styles
    )
