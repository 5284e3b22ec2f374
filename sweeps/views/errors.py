"""What the views do with the errors services raise: one place that says which exceptions mean
what, and the words a page uses for them.

- ValidationError: the person's input; its messages go to the form or the next page.
- UNREACHABLE: the task broker or the database is down (a service that enqueues raises kombu's
  OperationalError, a database error, or an OSError from a socket); 503 for a form, an error
  message after an action. A service that only writes the database raises DatabaseError alone.
- A full disk (sweeps.diskfull.full) is none of those: the services answer and cannot write. The
  same exceptions carry it (an OSError, a database error, kombu's); `unreachable` says "the disk is
  full" for it instead, and a form answers 507 (Insufficient Storage), not 503.
- STATE_ERRORS: a stored state that cannot be used (a corrupt durable state, a stored job that no
  longer fits): shown on its page, never a 500.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.db import DatabaseError
from django.http import HttpRequest
from kombu.exceptions import OperationalError as BrokerError

from agentcore import CheckpointError, JobError
from sweeps import diskfull
from sweeps.forms.jobfiles import printable

log = logging.getLogger("sweeps.views")
T = TypeVar("T")

UNREACHABLE = (BrokerError, DatabaseError, OSError)
# What reading a corrupt stored state can raise (a scenario's page shows it instead of a 500).
STATE_ERRORS = (CheckpointError, ValueError, RecursionError, KeyError, IndexError, TypeError, AttributeError)


def unreachable(failed: str, e: BaseException, *, queue: bool = True, then: str = "try again") -> str:
    """"could not resume: the queue or the database is unreachable (...)"; without `queue`, the database.
    A full disk: "could not resume: the disk is full (...); free space on ..., then try again"."""
    head = f"{failed}: " if failed else ""
    if diskfull.full(e):
        return f"{head}the disk is full ({diskfull.reason(e)}); {diskfull.ADVICE}, then {then}"
    what = "the queue or the database" if queue else "the database"
    return f"{head}{what} is unreachable ({e})"


def unreachable_status(e: BaseException) -> int:
    """A form's status for an UNREACHABLE error: 507 for a full disk, else 503."""
    return 507 if diskfull.full(e) else 503


def action(request: HttpRequest, call: Callable[[], T], failed: str, *, queue: bool = True) -> tuple[bool, T | None]:
    """Run a POST action's service call: (True, its result), or (False, None) with the error as a
    message on the next page: a ValidationError's messages, or `failed` and what is unreachable
    (`queue`: the call enqueues, so the broker may be what is down; else only the database)."""
    down: tuple[type[BaseException], ...] = UNREACHABLE if queue else (DatabaseError,)
    try:
        return True, call()
    except ValidationError as e:
        messages.error(request, " ".join(e.messages))
    except down as e:
        messages.error(request, unreachable(failed, e, queue=queue))
    return False, None


def state_error(e: BaseException, what: str) -> str:
    """A message for the page: agentcore's own errors name the file and field; others get a prefix."""
    if isinstance(e, (CheckpointError, JobError)):
        message = str(e)
    else:
        log.warning("%s: unusable stored state", what, exc_info=e)
        message = f"{what}: the stored state cannot be used ({type(e).__name__}: {e})"
    return printable(message)

