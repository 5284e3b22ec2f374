"""`python manage.py sweep`: the CLI's options and output, run through the services and real workers."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
import uuid

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from sweeps import workers as sweepworkers
from sweeps.models import Sweep


@pytest.mark.django_db(transaction=True)
def test_table_as_json_equals_the_cli_s():
    cli = subprocess.run([sys.executable, "-m", "agentcore", "table", "--format", "json", "--workers", "2"],
                         capture_output=True, text=True, check=True, cwd=settings.BASE_DIR)
    out, err = io.StringIO(), io.StringIO()
    call_command("sweep", "table", "--format", "json", "--workers", "1", "--timeout", "300", stdout=out, stderr=err)
    assert json.loads(out.getvalue()) == json.loads(cli.stdout)
    sweep = Sweep.objects.get()
    assert sweep.status == Sweep.Status.DONE
    assert f"{sweep.total_chunks}/{sweep.total_chunks}" in err.getvalue()  # the progress bar reached the end


@pytest.mark.django_db
def test_with_no_worker_running_it_says_so_within_seconds_and_stores_nothing(monkeypatch):
    from sweepsite.celery import app

    monkeypatch.setitem(app.conf, "task_default_queue", f"nobody-listens-{uuid.uuid4().hex}")
    start = time.monotonic()
    with pytest.raises(CommandError) as e:
        call_command("sweep", "table", "--depth", "1")
    took = time.monotonic() - start
    message = str(e.value)
    assert message.startswith("no Celery worker answers on queue nobody-listens-")
    assert "`make run`" in message and "--workers N" in message and "\n" not in message
    assert took < 10, took
    assert Sweep.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_the_workers_on_the_queue_answer(celery_workers):
    # The browser tests' `make run` (tests/e2e/conftest.py's `site`) may serve the session's queue too.
    names = sweepworkers.queue_workers(timeout=2.0)
    assert len([n for n in names if n.startswith("pytest")]) == len(celery_workers)
    assert all(n.startswith(("pytest", "worker")) for n in names), names


@pytest.mark.django_db
@pytest.mark.parametrize(("argv", "message"), [
    (["table", "--job", "/nonexistent/job.json"], "cannot read"),
    (["sweep", "--design", "loop", "--tracker", "keyed", "--runs", "11"], "runs must be between 1 and 10"),
    (["sweep", "--design", "nope", "--tracker", "keyed"], "invalid choice"),
])
def test_user_errors_are_one_line_and_store_nothing(argv, message):
    with pytest.raises(CommandError, match=message) as e:
        call_command("sweep", *argv)
    assert "\n" not in str(e.value)
    assert Sweep.objects.count() == 0
