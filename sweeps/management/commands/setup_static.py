"""python manage.py setup_static: `make run`'s and `make serve`'s static files, Django's
`collectstatic --noinput --clear` into STATIC_ROOT (SWEEPSITE_VAR/static), where a full disk is one
line saying so and how much room is left, not a traceback. (An app's own `collectstatic` would not
replace Django's: staticfiles comes first in INSTALLED_APPS, and its commands win.)"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from sweeps import diskfull


class Command(BaseCommand):
    help = "Collect the static files into STATIC_ROOT (collectstatic --noinput --clear); a full disk is one line."

    def handle(self, *args: Any, **options: Any) -> None:
        root = settings.STATIC_ROOT
        try:
            call_command("collectstatic", interactive=False, clear=True, verbosity=options["verbosity"])
        except OSError as e:
            if not diskfull.full(e):
                raise CommandError(f"the static files could not be written into {root} ({e})") from None
            where = Path(root)
            while not where.exists() and where != where.parent:  # the folder may not be made yet
                where = where.parent
            try:
                free = f", {shutil.disk_usage(where).free / 1e6:.1f} MB free there"
            except OSError:
                free = ""
            raise CommandError(
                f"the static files could not be written into {root}: the disk is full "
                f"({diskfull.reason(e)}{free}); free space on that disk, or set SWEEPSITE_VAR to a "
                "folder on one with room, then run it again"
            ) from None
