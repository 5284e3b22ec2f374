"""python manage.py audit: `python -m agentcore audit`, launched through the dashboard.

Stores an audit (services.audits.audit_create) whose units the Celery workers run, and prints its
page's address; with --wait it waits (running the audit's stall watchdog) and prints one verdict
per design and tracker mode, as the CLI and the audit page do. --workers N starts N workers for it
(and stops them at the end). User errors are one line (CommandError: sweeps.management.commands._errors
says the dashboard's).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.urls import reverse

import agentcore as agentaudit
from agentcore import MODES
from agentcore import designs as agentdesigns
from sweeps import selectors
from sweeps.limits import STALL_SECONDS
from sweeps.management.commands._errors import one_line
from sweeps.management.commands.sweep import Command as SweepCommand
from sweeps.management.commands.sweep import seconds
from sweeps.models import Audit
from sweeps.services import audits
from sweeps.workqueue import workers


class Command(BaseCommand):
    help = "Audit every design under every world model through the dashboard's workers."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--job", default="triage", help="a built-in job's name or a job file")
        parser.add_argument("--design", action="append", help="a design (repeat; default: all)")
        parser.add_argument("--tracker", action="append", help="a tracker mode (repeat; default: all)")
        parser.add_argument("--world", action="append", help="a world model (repeat; default: all)")
        parser.add_argument("--wait", action="store_true", help="wait for the verdicts and print them")
        parser.add_argument("--workers", type=int, default=0, help="start N workers for this audit")
        parser.add_argument("--timeout", type=seconds, default=None, help="give up waiting after this many seconds")

    def handle(self, *args: Any, **options: Any) -> None:
        source, source_name = SweepCommand._job(self, options["job"])  # type: ignore[arg-type]
        with one_line("the audit could not be started"):
            a = audits.audit_create(
                user=None,
                job_source=source,
                source_name=source_name,
                designs=options["design"] or list(agentdesigns.DESIGNS),
                trackers=options["tracker"] or list(MODES),
                worlds=options["world"],
            )
        self.stderr.write(f"audit {a.pk}: {reverse('sweeps:audit', args=[a.pk])}")
        if not options["wait"]:
            return
        started = workers.start_workers(options["workers"], prefix="audit") if options["workers"] else []

        def check_alive() -> None:
            tail = workers.exited(started)
            if tail is not None:
                raise CommandError(f"the workers exited before audit {a.pk} was done: {tail}")

        try:
            a = audits.audit_wait(
                a.pk,
                stalled_for=float(settings.SWEEPSITE_STALL_SECONDS) or STALL_SECONDS,
                timeout=options["timeout"],
                check_alive=check_alive,
            )
        finally:
            workers.stop_workers(started)
        if a.status == Audit.Status.FAILED:
            raise CommandError(f"audit {a.pk} failed: {a.error}")
        if a.status != Audit.Status.DONE:
            raise CommandError(f"timed out; audit {a.pk} goes on while workers run")
        for row in selectors.audit_report(a.pk)["rows"]:
            self.stdout.write(row["verdict"])
            for line in (row["witness"] or {}).get("lines", []):
                self.stdout.write(line)
        self.stdout.write(agentaudit.KILL_NOTE)
