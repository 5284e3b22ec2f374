"""sweeps/management/commands/_errors.py: the commands say the dashboard's errors in one line, as
they always have; anything else (a programming error) is the traceback it is, never a CommandError."""

from __future__ import annotations

import errno

import pytest
from django.core.management import CommandError, call_command
from django.db import DatabaseError
from kombu.exceptions import OperationalError as BrokerDown

from sweeps.errors import BadRequest
from sweeps.management.commands._errors import one_line
from sweeps.models import Audit, Sweep
from sweeps.services import audits, launch, users

ADVICE = "free space on the disk that holds the database and the broker's messages"


def said(e: BaseException, failed: str = "the sweep could not be started", **kw) -> str:
    with pytest.raises(CommandError) as caught, one_line(failed, **kw):
        raise e
    assert "\n" not in str(caught.value) and caught.value.__cause__ is None
    return str(caught.value)


def test_a_bad_request_is_its_messages_in_one_line():
    assert (
        said(BadRequest(["runs must be between 1 and 10", "choose a design"]))
        == "runs must be between 1 and 10; choose a design"
    )


def test_a_service_that_does_not_answer_says_what_is_unreachable():
    assert said(BrokerDown("connection refused")) == (
        "the sweep could not be started: the broker or the database is "
        "unreachable (OperationalError: connection refused)"
    )
    assert (
        said(BrokerDown("refused"), "cannot ask the workers", down="the broker")
        == "cannot ask the workers: the broker is unreachable (OperationalError: refused)"
    )


def test_a_full_disk_says_so_and_that_nothing_was_stored():
    assert said(OSError(errno.ENOSPC, "No space left on device")) == (
        f"the sweep could not be started: the disk is full (No space left on device); nothing was stored: {ADVICE}, "
        "then run it again"
    )


@pytest.mark.parametrize("e", [KeyError("x"), TypeError("x"), ValueError("x"), RuntimeError("x")])
def test_a_programming_error_is_no_command_error(e):
    with pytest.raises(type(e)), one_line("the sweep could not be started"):
        raise e


def test_a_command_that_only_writes_the_database_leaves_the_broker_s_errors_alone():
    assert (
        said(DatabaseError("gone"), "the user could not be saved", down="the database", queue=False)
        == "the user could not be saved: the database is unreachable (DatabaseError: gone)"
    )
    with pytest.raises(BrokerDown), one_line("x", queue=False):
        raise BrokerDown("refused")


@pytest.mark.django_db
def test_the_audit_command_says_a_broker_down_in_one_line(monkeypatch):
    def down(**kw):
        raise BrokerDown("connection refused")

    monkeypatch.setattr(audits, "audit_create", down)
    with pytest.raises(
        CommandError,
        match=r"^the audit could not be started: the broker or the database is "
        r"unreachable \(OperationalError: connection refused\)$",
    ):
        call_command("audit", "--design", "loop")
    assert not Audit.objects.exists()


@pytest.mark.django_db
def test_the_sweep_command_lets_a_programming_error_through(monkeypatch):
    from sweeps.management.commands import sweep as command

    def bug(**kw):
        raise KeyError("design")

    monkeypatch.setattr(command.workers, "await_queue_worker", lambda: 0)
    monkeypatch.setattr(launch, "sweep_create", bug)
    with pytest.raises(KeyError):
        call_command("sweep", "sweep", "--design", "loop", "--tracker", "keyed", "--depth", "1")
    assert not Sweep.objects.exists()


@pytest.mark.django_db
def test_the_user_command_says_an_empty_name_and_a_database_down_in_one_line(monkeypatch):
    with pytest.raises(CommandError, match="^the username is empty$"):
        call_command("user", " ", "--role", "viewer")

    def refused(**kw):
        raise DatabaseError("gone")

    monkeypatch.setattr(users, "user_set_role", refused)
    with pytest.raises(
        CommandError,
        match=r"^the user could not be saved: the database is unreachable "
        r"\(DatabaseError: gone\)$",
    ):
        call_command("user", "ann", "--role", "viewer")
