"""Django's `migrate`, which first asks whether the database answers: if not, one line says so (not a
traceback) and nothing is migrated."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError
from django.core.management.commands.migrate import Command as DjangoMigrate

from sweepsite import health


class Command(DjangoMigrate):
    def execute(self, *args: Any, **options: Any) -> str | None:
        problem = health.database_problem(options.get("database") or "default")
        if problem:
            raise CommandError(f"{problem}: nothing migrated")
        return super().execute(*args, **options)
