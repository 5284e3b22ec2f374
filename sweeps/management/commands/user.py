"""python manage.py user NAME --role viewer|operator|staff: create a user with a role, or change an
existing user's role (sweeps.roles). A new user's password is read from stdin with
--password-stdin, else generated and printed once. User errors are one line (CommandError)."""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from sweeps import roles
from sweeps.management.commands._errors import one_line
from sweeps.services import users


class Command(BaseCommand):
    help = "Create a user with a role (viewer, operator, staff), or give an existing user another role."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--role", required=True, choices=list(roles.ROLES))
        parser.add_argument(
            "--password-stdin",
            action="store_true",
            help="read the password from the first line of stdin (else: a new user gets a "
            "generated one, printed once; an existing user keeps theirs)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        password = sys.stdin.readline().rstrip("\n") if options["password_stdin"] else None
        with one_line("the user could not be saved", down="the database", queue=False):
            user, generated = users.user_set_role(username=options["username"], role=options["role"], password=password)
        self.stdout.write(
            f"{user.get_username()}: {options['role']}"
            + (f" (created; password {generated}, shown only this once)" if generated else "")
        )
