"""Shared fixtures: real Celery workers on the test database, service checks, no eager mode.

- The test session has its own folder (settings.TEST_VAR_DIR: the filesystem broker's messages,
  the SQLite test database as a file) and its own queue, so its workers share nothing with
  `make run` or with another test run.
- `celery_workers`: two real worker processes (`celery -A sweepsite worker`, solo pool) on the
  session's broker and test database. Tests that use them need committed rows: `transactional_db`.
- Tests marked `services` need PostgreSQL and Redis (DATABASE_URL / CELERY_BROKER_URL, set by
  `make test`'s second pass): skipped with the reason when absent, failed if REQUIRE_SERVICES=1.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
from django.conf import settings
from django.db import connection

WORKERS = 2


def _reachable(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=1).close()
        return True
    except OSError:
        return False


def services_missing() -> list[str]:
    """Why the configured database and broker are not PostgreSQL and Redis (empty: they are)."""
    reasons = []
    db = settings.DATABASES["default"]
    if "postgresql" not in db["ENGINE"]:
        reasons.append("DATABASE_URL is not a PostgreSQL URL")
    elif not _reachable(db.get("HOST") or "127.0.0.1", int(db.get("PORT") or 5432)):
        reasons.append(f"PostgreSQL at {db.get('HOST')}:{db.get('PORT')} is unreachable")
    broker = urlparse(settings.CELERY_BROKER_URL)
    if broker.scheme not in ("redis", "rediss"):
        reasons.append("CELERY_BROKER_URL is not a Redis URL")
    elif not _reachable(broker.hostname or "127.0.0.1", broker.port or 6379):
        reasons.append(f"Redis at {broker.hostname}:{broker.port} is unreachable")
    return reasons


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("services") is None:
        return
    reasons = services_missing()
    if reasons:
        why = "needs PostgreSQL and Redis (make test runs these in a second pass): " + "; ".join(reasons)
        if os.environ.get("REQUIRE_SERVICES") == "1":
            pytest.fail(why + " [REQUIRE_SERVICES=1]", pytrace=False)
        pytest.skip(why)


def pytest_unconfigure(config: pytest.Config) -> None:
    folder = getattr(settings, "TEST_VAR_DIR", None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session", autouse=True)
def _static_files() -> None:
    """Static files collected into the session's VAR_DIR, as `make run` collects them: a page that
    names one ({% static %}) needs the manifest of the hashed names (CompressedManifestStaticFilesStorage)."""
    from django.core.management import call_command

    call_command("collectstatic", "--noinput", verbosity=0)


@pytest.fixture(scope="session", autouse=True)
def _never_eager() -> None:
    from sweepsite.celery import app

    assert settings.CELERY_TASK_ALWAYS_EAGER is False
    assert app.conf.task_always_eager is False


@pytest.fixture
def wait_until() -> Callable[..., Any]:
    """wait_until(fn, timeout=..., what=...): poll fn() until it returns something truthy."""

    def wait(fn: Callable[[], Any], timeout: float = 120.0, what: str = "condition", interval: float = 0.05) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = fn()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout} s waiting for {what}")
            time.sleep(interval)

    return wait


@pytest.fixture(scope="session")
def celery_workers(django_db_setup: None, django_db_blocker: Any) -> Iterator[list[subprocess.Popen]]:
    """Real worker processes on the session's broker, queue and test database (stopped at the end)."""
    from sweeps.workqueue import workers as sweepworkers
    from sweepsite.celery import app

    with django_db_blocker.unblock():
        env = sweepworkers.worker_environ()
    # No stall watchdog in the shared workers: tests leave running sweeps with unsent chunks on
    # purpose (the resume button's tests); tests/sweeps/test_faults.py starts workers with one.
    env["SWEEPSITE_STALL_SECONDS"] = "0"
    logs = [Path(settings.VAR_DIR) / f"worker-{i}.log" for i in range(WORKERS)]
    procs = [
        subprocess.Popen(
            sweepworkers.worker_argv(f"pytest{i}-{os.getpid()}", "INFO"),
            env=env,
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
            cwd=settings.BASE_DIR,
        )
        for i, log in enumerate(logs)
    ]
    try:
        deadline = time.monotonic() + 60
        for proc, log in zip(procs, logs, strict=True):
            while "ready." not in log.read_text():
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"a Celery worker did not start:\n{log.read_text()[-3000:]}", pytrace=False)
                time.sleep(0.05)
        yield procs
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        connection.close()
        url = str(app.conf.broker_url)
        if url.startswith("redis"):  # the session's queue and bindings on a shared Redis
            import redis

            client = redis.Redis.from_url(url)
            for key in client.scan_iter(match=f"*{app.conf.task_default_queue}*"):
                client.delete(key)
            client.close()
