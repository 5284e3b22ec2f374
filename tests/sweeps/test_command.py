"""`python manage.py sweep`: the CLI's options and output, run through the services and real workers."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import time
import uuid

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from sweeps import configs
from sweeps.configs import Conditions, conditions_of
from sweeps.models import Sweep
from sweeps.workqueue import workers as sweepworkers


@pytest.mark.django_db(transaction=True)
def test_table_as_json_equals_the_cli_s():
    cli = subprocess.run(
        [sys.executable, "-m", "agentcore", "table", "--format", "json", "--workers", "2"],
        capture_output=True,
        text=True,
        check=True,
        cwd=settings.BASE_DIR,
    )
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
@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["table", "--job", "/nonexistent/job.json"], "cannot read"),
        (["sweep", "--design", "loop", "--tracker", "keyed", "--runs", "11"], "runs must be between 1 and 10"),
        (["sweep", "--design", "nope", "--tracker", "keyed"], "invalid choice"),
    ],
)
def test_user_errors_are_one_line_and_store_nothing(argv, message):
    with pytest.raises(CommandError, match=message) as e:
        call_command("sweep", *argv)
    assert "\n" not in str(e.value)
    assert Sweep.objects.count() == 0


@pytest.mark.django_db
def test_a_job_file_naming_a_key_twice_is_one_line_with_its_path_and_stores_nothing(tmp_path):
    path = tmp_path / "twice.json"
    source = configs.builtin_job_source("triage")
    path.write_text(source.replace('"op": "comment"', '"op": "comment", "op": "search"', 1))
    with pytest.raises(CommandError) as e:
        call_command("sweep", "table", "--job", str(path))
    assert str(e.value).startswith(f"{path}: tools.comment.op: the key 'op' appears more than once in its object")
    assert "\n" not in str(e.value) and Sweep.objects.count() == 0


@pytest.fixture
def inline_workers(monkeypatch):
    """The command's sweep played here, by the services, as a worker would play it: no broker, no worker."""
    from sweeps import selectors
    from sweeps.management.commands import sweep as command
    from sweeps.models import Chunk
    from sweeps.services import chunks
    from tests.sweeps._web import record_enqueued

    def wait(sweep_id, **kw):
        for pk in Chunk.objects.filter(sweep_id=sweep_id).values_list("pk", flat=True):
            chunks.chunk_run(chunk_id=pk)
        return selectors.sweep_state(sweep_id)

    record_enqueued(monkeypatch)
    monkeypatch.setattr(command.workers, "await_queue_worker", lambda: 0)
    monkeypatch.setattr(command.recovery, "sweep_wait", wait)


@pytest.mark.django_db
def test_the_conditions_options_are_stored_with_the_sweep(inline_workers):
    call_command(
        "sweep",
        "sweep",
        "--design",
        "loop",
        "--tracker",
        "keyed",
        "--depth",
        "1",
        "--crash-model",
        "power-cut",
        "--fsync",
        "off",
        "--tracker-fault",
        "crash",
        stdout=io.StringIO(),
        stderr=io.StringIO(),
    )
    sweep = Sweep.objects.get()
    assert (sweep.crash_model, sweep.fsync, sweep.tracker_fault) == ("power-cut", False, "crash")
    assert sweep.status == Sweep.Status.DONE


@pytest.mark.django_db
def test_the_world_options_are_the_cli_s_and_stored_with_the_sweep(inline_workers):
    call_command(
        "sweep",
        "sweep",
        "--design",
        "loop",
        "--tracker",
        "keyed",
        "--depth",
        "1",
        "--tracker-fault",
        "ttl:5",
        "--tool-faults",
        "k:2",
        "--person",
        "deny:0.5",
        "--model",
        "fickle",
        "--seed",
        "7",
        stdout=io.StringIO(),
        stderr=io.StringIO(),
    )
    sweep = Sweep.objects.get()
    assert conditions_of(sweep) == Conditions("panic", True, "ttl:5", "k:2", "deny:0.5", "fickle", 7)
    assert sweep.status == Sweep.Status.DONE


@pytest.mark.django_db
def test_the_table_command_takes_the_world_too(inline_workers):
    call_command(
        "sweep",
        "table",
        "--depth",
        "1",
        "--tracker-fault",
        "strict-params",
        "--model",
        "fresh-ids",
        stdout=io.StringIO(),
        stderr=io.StringIO(),
    )
    sweep = Sweep.objects.get()
    assert (sweep.tracker_fault, sweep.model, len(sweep.configs)) == ("strict-params", "fresh-ids", 11)


@pytest.mark.django_db
def test_without_the_conditions_options_the_sweep_has_agentcore_s_defaults(inline_workers):
    call_command(
        "sweep",
        "sweep",
        "--design",
        "loop",
        "--tracker",
        "keyed",
        "--depth",
        "1",
        stdout=io.StringIO(),
        stderr=io.StringIO(),
    )
    assert conditions_of(Sweep.objects.get()) == Conditions()


@pytest.mark.django_db
def test_a_planted_store_bug_is_stored_in_the_design_s_name(inline_workers):
    call_command(
        "sweep",
        "sweep",
        "--design",
        "loop",
        "--tracker",
        "keyed",
        "--depth",
        "1",
        "--bug",
        "skip_dir_fsync",
        stdout=io.StringIO(),
        stderr=io.StringIO(),
    )
    assert Sweep.objects.get().configs[0]["design"] == "loop+skip_dir_fsync"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["table", "--crash-model", "earthquake"], "invalid choice: 'earthquake'"),
        (["table", "--fsync", "maybe"], "invalid choice: 'maybe'"),
        (
            ["sweep", "--design", "loop", "--tracker", "keyed", "--tracker-fault", "flaky"],
            "unknown tracker fault 'flaky' (choose from none, crash, ttl:N, strict-params)",
        ),
        (["table", "--tracker-fault", "ttl:0"], "'ttl:0': N must be a whole number from 1 to 10000"),
        (["table", "--tool-faults", "k:x"], "'k:x': N must be a whole number from 0 to 100"),
        (["table", "--person", "liar"], "unknown person 'liar'"),
        (["table", "--model", "random"], "invalid choice: 'random'"),
        (["table", "--seed", "-1"], "must be at least 0, not -1"),
        (["table", "--seed", "2147483648"], "seed must be a whole number from 0 to 2147483647, not 2147483648"),
    ],
)
def test_bad_conditions_on_the_command_line_are_one_line_and_store_nothing(argv, message):
    with pytest.raises(CommandError, match=re.escape(message)) as e:
        call_command("sweep", *argv)
    assert "\n" not in str(e.value)
    assert Sweep.objects.count() == 0


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"crash_model": "earthquake"}, "crash model must be one of panic, power-cut, kill, not 'earthquake'"),
        ({"fsync": "maybe"}, "--fsync must be on or off, not 'maybe'"),
        ({"tracker_fault": "flaky"}, "unknown tracker fault 'flaky' (choose from none, crash, ttl:N, strict-params)"),
        ({"tool_faults": "k:101"}, "tool faults 'k:101': N must be a whole number from 0 to 100"),
        ({"person_faults": "deny:2"}, "person faults 'deny:2': P must be a probability from 0 to 1"),
        ({"model": "random"}, "unknown model 'random' (choose from fixed, fresh-ids, fickle)"),
        ({"seed": -1}, "seed must be a whole number from 0 to 2147483647, not -1"),
    ],
)
def test_bad_conditions_as_keyword_arguments_are_command_errors_and_store_nothing(options, message):
    with pytest.raises(CommandError, match=re.escape(message)):
        call_command("sweep", "table", "--depth", "1", **options)
    assert Sweep.objects.count() == 0


@pytest.mark.django_db
def test_depth_3_prints_agentcore_s_table_with_its_thrice_column(inline_workers):
    import agentcore as agentsweep
    from agentcore import designs, jobs

    out = io.StringIO()
    call_command(
        "sweep",
        "sweep",
        "--design",
        "once-per-turn",
        "--tracker",
        "keyed",
        "--depth",
        "3",
        "--format",
        "json",
        stdout=out,
        stderr=io.StringIO(),
    )
    cfg = agentsweep.Config(jobs.load("triage"), designs.get("once-per-turn"), "keyed")
    (row,) = json.loads(out.getvalue())
    assert row == agentsweep.sweep([cfg], depth=3).rows[0].to_dict() and row["thrice"] > 0
    assert Sweep.objects.get().depth == 3


@pytest.mark.django_db
def test_a_depth_3_sweep_too_big_to_store_is_one_line_before_asking_for_workers(monkeypatch):
    from sweeps.management.commands import sweep as command

    asked = []
    monkeypatch.setattr(command.workers, "await_queue_worker", lambda: asked.append(1) or 0)
    with pytest.raises(
        CommandError,
        match=r"^this sweep has about [\d,]+ scenarios at depth 3, more than the "
        r"1,000,000",
    ) as e:
        call_command(
            "sweep",
            "sweep",
            "--design",
            "loop",
            "--tracker",
            "keyed",
            "--depth",
            "3",
            "--crash-model",
            "power-cut",
            "--fsync",
            "off",
        )
    assert "\n" not in str(e.value) and asked == [] and Sweep.objects.count() == 0


@pytest.mark.django_db
def test_a_job_too_big_for_its_sweep_is_one_line_before_asking_for_workers(monkeypatch, tmp_path):
    from sweeps.management.commands import sweep as command
    from tests.sweeps import _data

    asked = []
    monkeypatch.setattr(command.workers, "await_queue_worker", lambda: asked.append(1) or 0)
    path = tmp_path / "long.json"
    path.write_text(_data.long_title_job())
    with pytest.raises(
        CommandError,
        match=r"^this sweep's states would carry about 3\.8\d GB of its job \(about "
        r"9,\d{3} scenarios, each carrying the job's 400,372 bytes",
    ) as e:
        call_command("sweep", "table", "--job", str(path))
    assert "more than the 1 GB a sweep may carry" in str(e.value)
    assert "\n" not in str(e.value) and asked == [] and Sweep.objects.count() == 0
