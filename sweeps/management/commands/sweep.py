"""python manage.py sweep: `python -m agentcore table` / `sweep`, run through the dashboard.

The same options and output as the CLI (`--format json` gives the same JSON), plus --timeout.
The sweep is created by services.sweep_create and stored; its chunks are run by Celery workers:
ones already running (`make run`), or, with --workers N, N workers this command starts on the
same database and broker and stops at the end. Without --workers it first asks (Celery's remote
control, a few seconds at most) whether a worker consumes the queue, and if none answers says how to
start one, storing nothing. A progress bar (chunks stored / total, read from
the database) goes to stderr. While it waits it runs the stall watchdog for its sweep
(services.sweeps_resume_stalled): chunks whose messages were lost are queued again. User errors
are one line (CommandError).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError
from kombu.exceptions import KombuError
from tqdm import tqdm

from agentcore import jobs, report
from agentcore.checkpoint import CheckpointError
from agentcore.cli import add_sweep_commands
from agentcore.records import ScenarioRecord
from sweeps import selectors, services, tasks
from sweeps.models import Chunk, Scenario, Sweep

# How long each of the 3 rounds of asking for a worker on the queue waits for answers.
WORKER_PING_SECONDS = 1.0


def seconds(text: str) -> float:
    try:
        n = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not n > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, not {text}")
    return n


class Command(BaseCommand):
    help = "Sweep the chapter's table or one configuration through the dashboard's workers and print the table."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="command", required=True)
        for command in add_sweep_commands(
                sub, workers_default=None,
                workers_help="start N workers for this sweep (default: use the workers already running)"):
            command.add_argument("--timeout", type=seconds, default=None,
                                 help="give up waiting after this many seconds (the sweep goes on)")

    def handle(self, *args: Any, **options: Any) -> None:
        source, source_name = self._job(options["job"])
        if options["command"] == "table":
            configs, runs = services.table_configs_for(), 1
        else:
            design = options["design"] + "".join(f"+{b}" for b in options["bug"])
            configs, runs = services.configs_for([design], [options["tracker"]]), options["runs"]
        if options["records"]:
            folder = os.path.dirname(os.path.abspath(options["records"]))
            if not os.path.isdir(folder):
                raise CommandError(f"--records {options['records']}: folder {folder} does not exist")
        try:
            if not options["workers"]:  # user errors first, then whether anything would run it
                services.sweep_check(job_source=source, configs=configs, depth=options["depth"], runs=runs,
                                     source_name=source_name)
                self._need_workers()
            sweep = services.sweep_create(user=None, job_source=source, configs=configs, depth=options["depth"],
                                          runs=runs, source_name=source_name)
        except ValidationError as e:
            raise CommandError("; ".join(e.messages)) from None
        except (KombuError, DatabaseError, OSError) as e:
            raise CommandError(f"the sweep could not be started: the broker or the database is unreachable "
                               f"({type(e).__name__}: {e})") from None
        workers = self._start_workers(options["workers"]) if options["workers"] else []
        try:
            self._wait(sweep, workers, options["timeout"])
        except KeyboardInterrupt:
            raise CommandError(f"interrupted; sweep {sweep.pk} goes on while workers run") from None
        finally:
            self._stop_workers(workers)
        sweep.refresh_from_db()
        if options["records"]:
            self._records(sweep, options["records"])
        self.stdout.write(report.render(selectors.sweep_table(sweep), options["format"]), ending="")

    def _job(self, name: str) -> tuple[str, str]:
        if name in jobs.BUILTIN:
            return services.builtin_job_source(name), f"builtin:{name}"
        try:
            if os.path.getsize(name) > jobs.MAX_BYTES:
                raise CommandError(f"{name}: file: larger than {jobs.MAX_BYTES} bytes")
            with open(name, "rb") as f:
                raw = f.read()
        except OSError as e:
            raise CommandError(f"{name}: file: cannot read ({e.strerror})") from None
        try:
            return raw.decode(), name
        except UnicodeDecodeError:
            raise CommandError(f"{name}: file: not UTF-8 text") from None

    def _need_workers(self) -> None:
        """Without --workers, a worker must be running on the queue: else say so within seconds
        (nothing is stored) rather than wait at 0 % for ever."""
        waited = 0.0
        try:
            # The first answer ends the first round; a worker busy with a task answers after it.
            for limit, timeout in ((1, WORKER_PING_SECONDS), (None, WORKER_PING_SECONDS), (None, WORKER_PING_SECONDS)):
                if tasks.queue_workers(timeout, limit):
                    return
                waited += timeout
        except (KombuError, OSError) as e:
            raise CommandError(f"cannot ask the workers: the broker is unreachable ({type(e).__name__}: {e})") from None
        raise CommandError(f"no Celery worker answers on queue {tasks.app.conf.task_default_queue} (asked for "
                           f"{waited:g} s): start the workers with `make run`, or pass --workers N to start N "
                           f"for this sweep")

    def _start_workers(self, n: int) -> list[tuple[subprocess.Popen, Any]]:
        workers = []
        env = tasks.worker_environ()
        for i in range(n):
            log = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 - closed in _stop_workers
            argv = tasks.worker_argv(f"sweep{i + 1}-{os.getpid()}")
            workers.append((subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT), log))
        return workers

    def _stop_workers(self, workers: list[tuple[subprocess.Popen, Any]]) -> None:
        for proc, _ in workers:
            if proc.poll() is None:
                proc.terminate()  # warm shutdown: a running task finishes first
        for proc, log in workers:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            log.close()

    def _wait(self, sweep: Sweep, workers: list[tuple[subprocess.Popen, Any]], timeout: float | None) -> None:
        start = time.monotonic()
        # The stall watchdog for this sweep (the workers run one too; `make run`'s may have it off):
        # chunks whose messages a killed worker or a restarted broker lost are queued again.
        stalled_for = float(settings.SWEEPSITE_STALL_SECONDS) or 30.0
        next_watch = start + stalled_for
        stream = getattr(self.stderr, "_out", self.stderr)
        with tqdm(total=sweep.total_chunks, unit="chunk", desc=f"sweep {sweep.pk}", file=stream,
                  dynamic_ncols=True, mininterval=0.2) as bar:
            while True:
                status, error = Sweep.objects.filter(pk=sweep.pk).values_list("status", "error").get()
                stored = Chunk.objects.filter(sweep_id=sweep.pk, stored=True).count()
                bar.update(stored - bar.n)
                if status == Sweep.Status.DONE:
                    return
                if status == Sweep.Status.FAILED:
                    raise CommandError(f"sweep {sweep.pk} failed: {error}")
                if status == Sweep.Status.WAITING:
                    raise CommandError(f"sweep {sweep.pk} waits for answers in the question queue")
                if workers and all(p.poll() is not None for p, _ in workers):
                    log = workers[0][1]
                    log.seek(0)
                    tail = " | ".join(log.read().strip().splitlines()[-3:])
                    raise CommandError(f"the workers exited before sweep {sweep.pk} was done: {tail}")
                if time.monotonic() >= next_watch:
                    next_watch = time.monotonic() + max(stalled_for / 4, 0.25)
                    services.sweeps_resume_stalled(stalled_for=stalled_for, sweep_id=sweep.pk)
                if timeout is not None and time.monotonic() - start > timeout:
                    raise CommandError(f"timed out after {timeout:g} s with {stored}/{sweep.total_chunks} chunks "
                                       f"stored; sweep {sweep.pk} goes on while workers run")
                time.sleep(0.05)

    def _records(self, sweep: Sweep, path: str) -> None:
        """Every scenario as an agentcore record (JSON lines), timelines replayed as the CLI's are."""
        try:
            with open(path, "w") as f:
                for sc in Scenario.objects.filter(sweep=sweep).select_related("sweep").order_by(
                        "config", "first_point", "second_point"):
                    timeline, effects = ((sc.timeline, sc.effects) if sc.timeline is not None
                                         else services.scenario_replay(sc))
                    rec = ScenarioRecord(
                        job=sc.job, design=sc.design, tracker=sc.tracker, runs=sc.runs, first_point=sc.first_point,
                        first_kind=sc.first_kind, first_label=sc.first_label, second_point=sc.second_point or None,
                        second_kind=sc.second_kind if sc.second_point else None,
                        second_label=sc.second_label if sc.second_point else None, duplicates=sc.duplicates,
                        missing=sc.missing, asks=sc.asks, approvals=sc.approvals, model_calls=sc.model_calls,
                        calls_plus=sc.calls_plus, status=sc.status, timeline=timeline, effects=effects)
                    f.write(json.dumps(rec.to_dict()) + "\n")
        except (OSError, CheckpointError) as e:
            raise CommandError(f"--records {path}: {e}") from None
