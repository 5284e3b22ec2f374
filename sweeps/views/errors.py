"""What the views do with the errors services raise (sweeps.errors' classes): one place that says
which exceptions mean what, and the words a page uses for them. Nothing else is caught: any other
exception (a KeyError, a TypeError, a ValueError) is a programming error, and a 500.

- ValidationError (a BadRequest, or a form's own): the person's input; its messages go to the form
  or the next page.
- ServiceUnreachable: the task broker or the database is down. A service call that enqueues runs
  inside `reaching` (sweeps.errors), which turns kombu's OperationalError, a database error or an
  OSError from a socket into it; 503 for a form, an error message after an action. A service that
  only writes the database: `queue=False`, its database errors alone.
- A full disk (ServiceUnreachable.disk_full) is not an unreachable service: the services answer and
  cannot write. `unreachable` says "the disk is full" for it instead, and a form answers 507
  (Insufficient Storage), not 503.
- STATE_ERRORS (UnusableState): a stored state that cannot be used (a corrupt durable state, a
  stored job or sweep that no longer fits), raised where the service parses it: shown on its page,
  never a 500.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest

from sweeps import diskfull
from sweeps.errors import ServiceUnreachable, UnusableState, reaching
from sweeps.forms.jobfiles import printable

T = TypeVar("T")

STATE_ERRORS = (UnusableState,)


def unreachable(failed: str, e: ServiceUnreachable, *, then: str = "try again") -> str:
    """ "could not resume: the queue or the database is unreachable (...)"; a call that only writes the
    database (not `e.queue`): the database. A full disk: "could not resume: the disk is full (...);
    free space on ..., then try again"."""
    head = f"{failed}: " if failed else ""
    if e.disk_full:
        return f"{head}the disk is full ({e.reason}); {diskfull.ADVICE}, then {then}"
    what = "the queue or the database" if e.queue else "the database"
    return f"{head}{what} is unreachable ({e.cause})"


def unreachable_status(e: ServiceUnreachable) -> int:
    """A form's status for a service that does not answer: 507 for a full disk, else 503."""
    return 507 if e.disk_full else 503


def action(request: HttpRequest, call: Callable[[], T], failed: str, *, queue: bool = True) -> tuple[bool, T | None]:
    """Run a POST action's service call: (True, its result), or (False, None) with the error as a
    message on the next page: a ValidationError's messages, or `failed` and what is unreachable
    (`queue`: the call enqueues, so the broker may be what is down; else only the database)."""
    try:
        with reaching(queue=queue):
            return True, call()
    except ValidationError as e:
        messages.error(request, " ".join(e.messages))
    except ServiceUnreachable as e:
        messages.error(request, unreachable(failed, e))
    return False, None


def state_error(e: UnusableState) -> str:
    """An unusable stored state's message for its page (it names the row, the file and the field)."""
    return printable(str(e))
