"""Django's `migrate`, which first asks whether the database answers: if not, one line says so (not a
traceback) and nothing is migrated. A full disk while migrating is one line too."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError
from django.core.management.commands.migrate import Command as DjangoMigrate
from django.db import DatabaseError

from sweeps import diskfull, health


class Command(DjangoMigrate):
    def execute(self, *args: Any, **options: Any) -> str | None:
        problem = health.database_problem(options.get("database") or "default")
        if problem:
            raise CommandError(f"{problem}: nothing migrated")
        try:
            return super().execute(*args, **options)
        except (DatabaseError, OSError) as e:
            if not diskfull.full(e):
                raise
            raise CommandError(
                f"the disk is full ({diskfull.reason(e)}): the database could not be migrated (a "
                f"migration's transaction is rolled back whole); {diskfull.ADVICE}, then run it "
                "again"
            ) from None
