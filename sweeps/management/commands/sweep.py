"""python manage.py sweep: `python -m agentcore table` / `sweep`, run through the dashboard.

The same options and output as the CLI (`--format json` gives the same JSON), plus --timeout;
the conditions (--crash-model, --fsync, --tracker-fault, --tool-faults, --person, --model, --seed:
agentcore.cli.add_sweep_commands defines them for both) are stored with the sweep, as the launch
form's are.
The sweep is created by services.launch.sweep_create and stored; its chunks are run by Celery workers:
ones already running (`make run`), or, with --workers N, N workers this command starts on the
same database and broker and stops at the end. Without --workers it first asks (Celery's remote
control, a few seconds at most) whether a worker consumes the queue, and if none answers says how to
start one, storing nothing. A progress bar (chunks stored / total, read from
the database) goes to stderr. While it waits it runs the stall watchdog for its sweep
(services.recovery.sweep_wait): chunks whose messages were lost are queued again. User errors
are one line (CommandError: sweeps.management.commands._errors says the dashboard's). The command
only parses, calls services, selectors and sweeps.workqueue.workers, and prints: it reads nothing
from the database itself.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from agentcore import jobs, report
from agentcore.cli import add_sweep_commands
from sweeps import configs, replay, selectors
from sweeps.errors import UnusableState
from sweeps.limits import STALL_SECONDS
from sweeps.management.commands._errors import one_line
from sweeps.models import Sweep
from sweeps.request import launch_request
from sweeps.services import launch, recovery
from sweeps.workqueue import workers


def seconds(text: str) -> float:
    try:
        n = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not n > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, not {text}")
    return n


def _fsync(value: str) -> bool:
    """--fsync on|off (argparse checks it on the command line; call_command's keyword arguments are not)."""
    if value not in ("on", "off"):
        raise CommandError(f"--fsync must be on or off, not {value!r}")
    return value == "on"


class Command(BaseCommand):
    help = "Sweep the chapter's table or one configuration through the dashboard's workers and print the table."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="command", required=True)
        for command in add_sweep_commands(
            sub,
            workers_default=None,
            workers_help="start N workers for this sweep (default: use the workers already running)",
        ):
            command.add_argument(
                "--timeout",
                type=seconds,
                default=None,
                help="give up waiting after this many seconds (the sweep goes on)",
            )

    def handle(self, *args: Any, **options: Any) -> None:
        source, source_name = self._job(options["job"])
        if options["command"] == "table":
            cfgs, runs = configs.table_configs_for(), 1
        else:
            design = options["design"] + "".join(f"+{b}" for b in options["bug"])
            cfgs, runs = configs.configs_for([design], [options["tracker"]]), options["runs"]
        conditions = {name: options[name] for name in configs.Conditions._fields} | {"fsync": _fsync(options["fsync"])}
        if options["records"]:
            folder = os.path.dirname(os.path.abspath(options["records"]))
            if not os.path.isdir(folder):
                raise CommandError(f"--records {options['records']}: folder {folder} does not exist")
        try:
            with one_line("the sweep could not be started"):  # a full disk before the commit: rolled back
                asked = launch_request(
                    job_source=source,
                    configs=cfgs,
                    depth=options["depth"],
                    runs=runs,
                    source_name=source_name,
                    **conditions,
                )
                if not options["workers"]:  # user errors first, then whether anything would run it
                    self._need_workers()
                sweep = launch.sweep_create(user=None, asked=asked)
        except launch.StoredUnqueued as e:
            raise CommandError(f"the sweep did not start in full: {e}") from None
        started = workers.start_workers(options["workers"]) if options["workers"] else []
        try:
            self._wait(sweep, started, options["timeout"])
        except KeyboardInterrupt:
            raise CommandError(f"interrupted; sweep {sweep.pk} goes on while workers run") from None
        finally:
            workers.stop_workers(started)
        if options["records"]:
            self._records(sweep.pk, options["records"])
        self.stdout.write(report.render(selectors.sweep_table(sweep), options["format"]), ending="")

    def _job(self, name: str) -> tuple[str, str]:
        if name in jobs.BUILTIN:
            return configs.builtin_job_source(name), f"builtin:{name}"
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
        with one_line("cannot ask the workers", down="the broker"):
            waited = workers.await_queue_worker()
        if waited:
            raise CommandError(
                f"no Celery worker answers on queue {workers.queue_name()} (asked for "
                f"{waited:g} s): start the workers with `make run`, or pass --workers N to start N "
                f"for this sweep"
            )

    def _wait(self, sweep: Sweep, started: list[workers.Worker], timeout: float | None) -> None:
        def check_alive() -> None:
            tail = workers.exited(started)
            if tail is not None:
                raise CommandError(f"the workers exited before sweep {sweep.pk} was done: {tail}")

        stream = getattr(self.stderr, "_out", self.stderr)
        with tqdm(
            total=sweep.total_chunks,
            unit="chunk",
            desc=f"sweep {sweep.pk}",
            file=stream,
            dynamic_ncols=True,
            mininterval=0.2,
        ) as bar:
            state = recovery.sweep_wait(
                sweep.pk,
                stalled_for=float(settings.SWEEPSITE_STALL_SECONDS) or STALL_SECONDS,
                timeout=timeout,
                on_progress=lambda stored: bar.update(stored - bar.n),
                check_alive=check_alive,
            )
        if state.status == Sweep.Status.FAILED:
            raise CommandError(f"sweep {sweep.pk} failed: {state.error}")
        if state.status == Sweep.Status.WAITING:
            raise CommandError(f"sweep {sweep.pk} waits for answers in the question queue")
        if state.status != Sweep.Status.DONE:
            raise CommandError(
                f"timed out after {timeout:g} s with {state.chunks_stored}/{sweep.total_chunks} "
                f"chunks stored; sweep {sweep.pk} goes on while workers run"
            )

    def _records(self, sweep_id: int, path: str) -> None:
        """Every scenario as an agentcore record (JSON lines), timelines replayed as the CLI's are."""
        try:
            with open(path, "w") as f:
                for rec in replay.scenario_records(sweep_id):
                    f.write(json.dumps(rec.to_dict()) + "\n")
        except (OSError, UnusableState) as e:
            raise CommandError(f"--records {path}: {e}") from None
