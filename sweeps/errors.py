"""The dashboard's own errors: a request the services refuse, a stored state they cannot read, a
service that does not answer. Any other exception is a programming error: a 500 page or a
command's traceback, never said to a person as their mistake.

Rules:
- Every class here derives from SweepsiteError. agentcore's refusals are its own (agentcore.errors:
  BadInput, ConfigError, JobError, CheckpointError); a service that passes one on to a person says
  it as one of these (a BadRequest for input, an UnusableState for a stored value).
- BadRequest: input the services cannot use. It is a django ValidationError as well, so a form's
  add_error takes it and `except ValidationError` catches it; its messages, codes and params are a
  ValidationError's (`e.messages`, `e.error_list[0].code`). PlanTooBig (code "too_big"): a sweep
  too big to launch; sweeps.cost.TooCostly (code "too_costly"): a request over its bound of work.
- UnusableState: a stored row or state that cannot be read (a corrupt durable state, a stored job
  or configuration agentcore no longer takes). Raised where the stored value is parsed for a page,
  from the parse's own error (`reading`, or `raise UnusableState(...) from e`); its message names
  the row. A durable state agentcore's Durable refuses is an UnusableDurable: a CheckpointError as
  well, with agentcore's message (the workers' callers catch CheckpointError).
- ServiceUnreachable: the task broker or the database did not answer, or the disk is full
  (sweeps.diskfull); it carries the error raised (`cause`) and `disk_full`. The services raise the
  broker's, the database's and the socket's own errors (UNREACHABLE: the tasks and the watchdog
  retry on them); `reaching` turns them into this at the one boundary where a page or a command
  calls a service.
- Mapped once: sweeps.views.errors for the pages, sweeps.management.commands._errors for the
  commands.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.core.exceptions import ValidationError
from django.db import DatabaseError
from kombu.exceptions import OperationalError as BrokerError

from agentcore import BadInput, CheckpointError, JobError
from sweeps import diskfull

# What a service that enqueues raises when the broker or the database is down: kombu's
# OperationalError (it wraps the transport's connection errors), a database error, or an OSError
# from a socket. A service that only writes the database raises DatabaseError alone.
UNREACHABLE: tuple[type[BaseException], ...] = (BrokerError, DatabaseError, OSError)
DATABASE_DOWN: tuple[type[BaseException], ...] = (DatabaseError,)


class SweepsiteError(Exception):
    """Anything the dashboard refuses or cannot do; the message says what."""


class BadRequest(SweepsiteError, ValidationError):
    """Input the services cannot use; a ValidationError as well (its messages as ValidationError's)."""


class PlanTooBig(BadRequest):
    """A sweep too big to launch: too many first crash points, too many scenarios at depth 3, or
    states that would carry too many bytes of its job. Code "too_big"."""

    def __init__(self, message: Any, code: str | None = "too_big", params: Any = None) -> None:
        super().__init__(message, code, params)


class UnusableState(SweepsiteError):
    """A stored row or state that cannot be read; the message names it and what is wrong."""

    @classmethod
    def of(cls, what: str, e: BaseException) -> UnusableState:
        """`what`'s stored state, refused by agentcore with `e`: a job's or a checkpoint's message as
        agentcore says it (it names the file and the field), else "scenario 5: the stored state
        cannot be used (ConfigError: unknown design 'x' ...)"."""
        if isinstance(e, (CheckpointError, JobError)):
            return cls(str(e))
        return cls(f"{what}: the stored state cannot be used ({type(e).__name__}: {e})")


class UnusableDurable(UnusableState, CheckpointError):
    """A stored durable state (checkpoint files, tracker records) agentcore's Durable refuses; a
    CheckpointError as well, with its message."""


@contextmanager
def reading(what: str) -> Iterator[None]:
    """Around the parse of a stored value (a sweep's job and configurations, a scenario's replay, a
    durable state): agentcore's refusal of it (BadInput, CheckpointError) raised as UnusableState
    naming `what` (a CheckpointError as an UnusableDurable), from agentcore's error. Nothing else
    is caught: a play over its budget is sweeps.cost's to say."""
    try:
        yield
    except CheckpointError as e:
        raise UnusableDurable(str(e)) from e
    except BadInput as e:
        raise UnusableState.of(what, e) from e


class ServiceUnreachable(SweepsiteError):
    """The task broker or the database did not answer, or the disk is full. `cause`: the error the
    service raised; `disk_full`: whether it says the disk is full (sweeps.diskfull.full);
    `queue`: whether the call enqueues (the broker may be what is down) or only writes the database."""

    def __init__(self, cause: BaseException, queue: bool = True) -> None:
        super().__init__(cause, queue)
        self.cause, self.queue = cause, queue
        self.disk_full = diskfull.full(cause)

    def __str__(self) -> str:
        return f"{type(self.cause).__name__}: {self.cause}"

    @property
    def reason(self) -> str:
        """A full disk's own words ("No space left on device"), else the cause's message."""
        return diskfull.reason(self.cause)


@contextmanager
def reaching(*, queue: bool = True) -> Iterator[None]:
    """Around a service call from a page or a command: the broker's, the database's and the
    socket's errors (UNREACHABLE; without `queue`, the database's alone) raised as
    ServiceUnreachable, from them."""
    down = UNREACHABLE if queue else DATABASE_DOWN
    try:
        yield
    except down as e:
        raise ServiceUnreachable(e, queue) from e
