"""Health: /healthz up (the session's real workers) and down (a database or broker on a closed port, no
worker on the queue), a worker that refuses to start without its database, `migrate` against an
unreachable database, and `make run`'s banner."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings

from tests import _make


def closed_port() -> int:
    return _make.free_port()  # bound, then let go: nothing listens there


def embedded(tmp_path: Path, **env: str) -> dict[str, str]:
    """An environment on its own var/ folder and queue, the embedded default unless `env` says."""
    base = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "DJANGO_PRODUCTION", "SECRET_KEY")
    }
    return {**base, "SWEEPSITE_VAR": str(tmp_path), "SWEEPSITE_QUEUE": f"health-{tmp_path.name}", **env}


HEALTHZ = (
    "shell",
    "--no-imports",
    "-c",
    "from django.test import Client; r = Client().get('/healthz'); print(r.status_code, r.content.decode())",
)


def healthz_in(env: dict[str, str]) -> tuple[int, dict]:
    """GET /healthz in a fresh process with this environment (its own settings, as a server would have)."""
    done = subprocess.run(
        [sys.executable, "manage.py", *HEALTHZ],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    status, _, body = done.stdout.strip().splitlines()[-1].partition(" ")
    return int(status), json.loads(body)


# --- /healthz -----------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("where", ["embedded", pytest.param("postgresql-redis", marks=pytest.mark.services)])
def test_healthz_is_200_with_the_live_workers(client, celery_workers, where):
    r = client.get("/healthz")
    body = r.json()
    assert r.status_code == 200 and body["ok"] is True, body
    assert body["database"] == body["broker"] == "ok" and body["problems"] == []
    # At least the session's: workers that earlier tests started on this queue may still be stopping.
    assert body["workers"] >= len(celery_workers) and body["queue"] == settings.CELERY_TASK_DEFAULT_QUEUE
    assert r["Cache-Control"].startswith("max-age=0")


def test_healthz_is_503_with_the_database_on_a_closed_port(tmp_path):
    status, body = healthz_in(embedded(tmp_path, DATABASE_URL=f"postgres://127.0.0.1:{closed_port()}/sweepsite"))
    assert status == 503 and body["ok"] is False
    assert body["database"].startswith("the database is unreachable (") and "\n" not in body["database"]
    assert body["database"] in body["problems"] and body["broker"] == "ok"


def test_healthz_is_503_with_the_broker_on_a_closed_port(tmp_path):
    status, body = healthz_in(embedded(tmp_path, CELERY_BROKER_URL=f"redis://127.0.0.1:{closed_port()}/0"))
    assert status == 503 and body["database"] == "ok" and body["workers"] == 0
    assert body["broker"].startswith("the task broker is unreachable (") and body["broker"] in body["problems"]


def test_healthz_is_503_when_no_worker_consumes_the_queue(tmp_path):
    status, body = healthz_in(embedded(tmp_path))
    assert status == 503 and body["database"] == body["broker"] == "ok" and body["workers"] == 0
    assert body["problems"] == [f"no worker consumes the queue 'health-{tmp_path.name}': sweeps will not run"]


# --- a worker without its database; migrate without it ------------------------------------------


def test_a_worker_with_the_database_unreachable_stops_at_once_with_one_line(tmp_path):
    env = embedded(tmp_path, DATABASE_URL=f"postgres://127.0.0.1:{closed_port()}/sweepsite")
    began = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "sweepsite",
            "worker",
            "--pool",
            "solo",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "--loglevel",
            "INFO",
        ],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    took = time.monotonic() - began
    out = done.stdout + done.stderr
    assert done.returncode == 1 and took < 30, (took, out[-2000:])
    lines = [line for line in out.splitlines() if "database is unreachable" in line]
    assert len(lines) == 1 and lines[0].startswith("celery worker: the database is unreachable (")
    assert lines[0].endswith(": not started")
    assert "ready" not in out and "Traceback" not in out


def test_migrate_with_the_database_unreachable_says_so_in_one_line(tmp_path):
    env = embedded(tmp_path, DATABASE_URL=f"postgres://127.0.0.1:{closed_port()}/sweepsite")
    done = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    (line,) = [line for line in done.stderr.splitlines() if "unreachable" in line]
    assert line.startswith("CommandError: the database is unreachable (") and line.endswith("nothing migrated")


def test_migrate_still_migrates_a_database_that_answers(tmp_path):
    done = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
        cwd=settings.BASE_DIR,
        env=embedded(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "db.sqlite3").stat().st_size > 0


# --- make run's banner ----------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_make_run_reports_health_after_its_banner(django_db_blocker, wait_until):
    port = _make.free_port()
    log = Path(settings.VAR_DIR) / "make-run-health.log"
    with django_db_blocker.unblock():
        env = _make.session_environ(SWEEPSITE_STALL_SECONDS="0")
    proc = _make.start("run", port, env, log, "WORKERS=2")
    try:
        wait_until(lambda: "health:" in log.read_text(), timeout=120, what="make run's health line")
    finally:
        _make.stop(proc)
    text = log.read_text()
    banner = text.index(f"sweepsite: http://127.0.0.1:{port}/")
    # Its 2 workers, and those of this test session where they run (make run shares the session's queue).
    found = re.search(r"^health: ok \(database, broker, (\d+) live workers\)$", text[banner:], re.M)
    assert found and int(found.group(1)) >= 2, text[-3000:]
