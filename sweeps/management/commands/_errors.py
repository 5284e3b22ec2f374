"""How the commands say the dashboard's errors (sweeps.errors): each one line, a CommandError, as
`one_line` turns them. Nothing else is caught: any other exception (a programming error) is the
traceback it is.

- ValidationError (a BadRequest, or a password validator's): its messages joined by "; ".
- ServiceUnreachable (a service call inside `one_line` runs inside sweeps.errors.reaching):
  "the sweep could not be started: the broker or the database is unreachable (OperationalError:
  ...)", and for a full disk "...: the disk is full (No space left on device); nothing was stored:
  free space on ..., then run it again".
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.core.exceptions import ValidationError
from django.core.management.base import CommandError

from sweeps import diskfull
from sweeps.errors import ServiceUnreachable, reaching


def unreachable(failed: str, e: ServiceUnreachable, down: str) -> str:
    """`failed`, and what is unreachable (`down`: "the broker or the database") or a full disk."""
    if e.disk_full:
        return f"{failed}: the disk is full ({e.reason}); nothing was stored: {diskfull.ADVICE}, then run it again"
    return f"{failed}: {down} is unreachable ({e})"


@contextmanager
def one_line(failed: str, *, down: str = "the broker or the database", queue: bool = True) -> Iterator[None]:
    """The service calls inside, their errors as one-line CommandErrors (see the module): `failed`
    says what could not be done, `down` what did not answer; without `queue`, the calls only write
    the database (its errors alone are an unreachable service)."""
    try:
        with reaching(queue=queue):
            yield
    except ValidationError as e:
        raise CommandError("; ".join(e.messages)) from None
    except ServiceUnreachable as e:
        raise CommandError(unreachable(failed, e, down)) from None
