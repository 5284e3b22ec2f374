"""A full disk is said as one (sweeps.diskfull): not "the queue or the database is unreachable".

A launch whose store fills the disk is rolled back: nothing stored, 507, "the disk is full". One
whose tasks fill it after the commit leaves the sweep stored (failed, where the database can still
write that) and says what is stored and that it can be resumed once space is freed; the resume
then queues the rest. `manage.py sweep` says the same in one line, and so do `make run`'s set-up
steps (migrate, setup_static) instead of a traceback. The disk is simulated where each write
happens (an OSError ENOSPC, SQLite's "database or disk is full"); sweeps.diskfull's own checks are
on the errors the real ones raised (a tmpfs filled up)."""

from __future__ import annotations

import errno
import html
import io
import re
from typing import Any

import pytest
from amqp.exceptions import ChannelError
from django.core.files.storage import FileSystemStorage
from django.core.management import CommandError, call_command
from django.db import OperationalError
from django.urls import reverse
from kombu.exceptions import OperationalError as BrokerError

from sweeps import diskfull
from sweeps.models import Chunk, Scenario, Sweep
from sweeps.services import chunks, launch
from sweeps.workqueue import publish
from tests.sweeps._web import counts, launch_data, logged_in, member

LOOP = [{"name": "real loop, keyed tracker", "design": "loop", "tracker": "keyed"}]


def no_space() -> OSError:
    return OSError(errno.ENOSPC, "No space left on device")


def chained(*errors: BaseException) -> BaseException:
    """The last error, raised from the one before it, and so on: as kombu wraps the filesystem
    broker's OSError (OSError -> amqp's ChannelError -> kombu's OperationalError)."""
    for cause, e in zip(errors, errors[1:], strict=False):
        e.__cause__ = cause
    return errors[-1]


def broker_full() -> BaseException:
    return chained(
        no_space(),
        ChannelError("Cannot add file 'x.sweepsite.msg' to directory"),
        BrokerError("Cannot add file 'x.sweepsite.msg' to directory"),
    )


# --- which errors are a full disk --------------------------------------------------------------


@pytest.mark.parametrize(
    "e",
    [
        no_space(),
        OSError(errno.EDQUOT, "Disk quota exceeded"),
        broker_full(),
        OperationalError("database or disk is full"),
        chained(broker_full(), OperationalError("database or disk is full")),  # the sweep's UPDATE after it
        OperationalError('could not extend file "base/16384/2619": No space left on device'),  # PostgreSQL
    ],
    ids=["enospc", "edquot", "broker", "sqlite", "sqlite-after-broker", "postgresql"],
)
def test_a_full_disk_is_found_anywhere_in_the_chain(e):
    assert diskfull.full(e)


@pytest.mark.parametrize(
    "e",
    [
        ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused"),
        BrokerError("Error 111 connecting"),
        OperationalError("server closed the connection unexpectedly"),
        OSError(errno.EACCES, "Permission denied"),
    ],
    ids=["refused", "broker-down", "database-down", "permission"],
)
def test_an_unreachable_service_is_no_full_disk(e):
    assert not diskfull.full(e)


def test_its_reason_is_the_os_s_words_when_there_are_some():
    assert (
        diskfull.reason(chained(broker_full(), OperationalError("database or disk is full")))
        == "No space left on device"
    )
    assert diskfull.reason(OperationalError("database or disk is full")) == "database or disk is full"


# --- the launch -----------------------------------------------------------------------------------


def publish_until_full(monkeypatch: pytest.MonkeyPatch, room: int) -> list[Any]:
    """The broker takes `room` messages, then its disk is full."""
    sent: list[Any] = []

    def send(name: str, args: Any, producer: Any, *_: Any) -> None:
        if len(sent) >= room:
            raise broker_full()
        sent.append((name, tuple(args)))

    monkeypatch.setattr(publish, "send", send)
    return sent


def page_errors(r: Any) -> str:
    lists = re.findall(r'class="errorlist[^"]*">(.*?)</ul>', r.content.decode(), re.S)
    return html.unescape(" ".join(item for ul in lists for item in re.findall(r"<li>(.*?)</li>", ul, re.S)))


@pytest.fixture
def staff():
    return logged_in(member("sam", "staff"))


@pytest.mark.django_db(transaction=True)  # the tasks are queued on commit, inside the request
def test_a_launch_whose_tasks_fill_the_disk_says_disk_full_what_is_stored_and_to_resume(staff, monkeypatch):
    sent = publish_until_full(monkeypatch, room=2)
    r = staff.post(reverse("sweeps:launch"), launch_data(preset="custom", designs=["loop"], trackers=["keyed"]))
    assert r.status_code == 507
    sweep = Sweep.objects.get()
    message = page_errors(r)
    assert message.startswith(
        f"the sweep did not start in full: the disk is full (No space left on device): sweep "
        f"{sweep.pk} is stored with 0 of its 38 chunks done so far (0 scenario rows), and "
        "failed, as not all of its tasks could be queued; free space on the disk that holds "
        "the database and the broker's messages, then resume it from its page (what is stored "
        "is kept)"
    ), message
    assert "unreachable" not in message and len(sent) == 2
    assert sweep.status == Sweep.Status.FAILED and sweep.error.startswith(
        "the disk filled while its tasks were queued (No space left on device); free space on the disk that holds "
        "the database and the broker's messages, then resume it"
    )
    # The two messages sent are played; space is freed; the resume queues the rest and the sweep finishes.
    for pk in [pk for _, args in sent for pk in (args[0] if isinstance(args[0], list) else [args[0]])]:
        chunks.chunk_run(chunk_id=pk)
    stored = Chunk.objects.filter(sweep=sweep, stored=True).count()
    assert 0 < stored < sweep.total_chunks
    sent = publish_until_full(monkeypatch, room=10**6)
    r = staff.post(reverse("sweeps:resume", args=[sweep.pk]), follow=True)
    assert re.search(rf"{sweep.total_chunks - stored} missing chunks? queued again", r.content.decode())
    for pk in Chunk.objects.filter(sweep=sweep, stored=False).values_list("pk", flat=True):
        chunks.chunk_run(chunk_id=pk)
    sweep.refresh_from_db()
    assert sweep.status == Sweep.Status.DONE and Scenario.objects.filter(sweep=sweep).count() == 38 + 872


@pytest.mark.django_db(transaction=True)
def test_when_the_database_cannot_even_mark_it_failed_the_message_says_so(staff, monkeypatch):
    publish_until_full(monkeypatch, room=1)

    def full(*args: Any, **kw: Any) -> bool:
        raise OperationalError("database or disk is full")

    monkeypatch.setattr(launch, "take", full)
    monkeypatch.setattr(publish, "take", full)  # where enqueue fails the sweep first
    r = staff.post(reverse("sweeps:launch"), launch_data(preset="custom", designs=["loop"], trackers=["keyed"]))
    assert r.status_code == 507
    message = page_errors(r)
    assert "the disk is full (No space left on device): sweep" in message and "is stored with 0 of its 38" in message
    assert "nor could it be marked failed: the stall watchdog queues the missing chunks again once it can" in message
    assert Sweep.objects.get().status == Sweep.Status.RUNNING


@pytest.mark.django_db
def test_a_launch_whose_store_fills_the_disk_stores_nothing_and_says_disk_full(staff, monkeypatch):
    sent = publish_until_full(monkeypatch, room=10**6)

    def full(*args: Any, **kw: Any) -> None:
        raise OperationalError("database or disk is full")

    monkeypatch.setattr(Chunk.objects, "bulk_create", full)  # after the sweep's INSERT
    r = staff.post(reverse("sweeps:launch"), launch_data())
    assert r.status_code == 507
    assert page_errors(r) == (
        "the sweep could not be started: the disk is full (database or disk is full); free "
        "space on the disk that holds the database and the broker's messages, then launch it "
        "again (nothing was stored)"
    )
    assert counts() == (0, 0) and sent == []


@pytest.mark.django_db(transaction=True)
def test_a_resume_on_a_full_disk_says_disk_full(staff, monkeypatch):
    sweep = launch.sweep_create(user=None, job_source=_triage(), configs=LOOP, depth=1)
    Sweep.objects.filter(pk=sweep.pk).update(status=Sweep.Status.FAILED)
    publish_until_full(monkeypatch, room=0)
    r = staff.post(reverse("sweeps:resume", args=[sweep.pk]), follow=True)
    page = html.unescape(r.content.decode())
    assert r.status_code == 200
    assert (
        "could not resume: the disk is full (No space left on device); free space on the disk that holds the "
        "database and the broker's messages, then try again"
    ) in page


def _triage() -> str:
    from sweeps.configs import builtin_job_source

    return builtin_job_source("triage")


# --- manage.py sweep ------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_sweep_command_says_disk_full_and_what_is_stored_in_one_line(monkeypatch):
    from sweeps.management.commands import sweep as command

    monkeypatch.setattr(command.workers, "await_queue_worker", lambda: 0)
    publish_until_full(monkeypatch, room=1)
    with pytest.raises(CommandError) as e:
        call_command("sweep", "sweep", "--design", "loop", "--tracker", "keyed")
    sweep = Sweep.objects.get()
    assert str(e.value).startswith(
        f"the sweep did not start in full: the disk is full (No space left on device): "
        f"sweep {sweep.pk} is stored with 0 of its 38 chunks done so far"
    )
    assert "then resume it from its page" in str(e.value) and "\n" not in str(e.value)


@pytest.mark.django_db
def test_the_sweep_command_on_a_disk_full_before_the_commit_says_nothing_was_stored(monkeypatch):
    from sweeps.management.commands import sweep as command

    def full(*args: Any, **kw: Any) -> None:
        raise OperationalError("database or disk is full")

    monkeypatch.setattr(command.workers, "await_queue_worker", lambda: 0)
    monkeypatch.setattr(Chunk.objects, "bulk_create", full)
    with pytest.raises(CommandError) as e:
        call_command("sweep", "sweep", "--design", "loop", "--tracker", "keyed")
    assert str(e.value) == (
        "the sweep could not be started: the disk is full (database or disk is full); nothing "
        "was stored: free space on the disk that holds the database and the broker's messages, "
        "then run it again"
    )
    assert counts() == (0, 0)


# --- make run's set-up --------------------------------------------------------------------------


def test_setup_static_on_a_full_disk_is_one_line(settings, tmp_path, monkeypatch):
    settings.STATIC_ROOT = tmp_path / "static"

    def full(self: Any, name: str, content: Any) -> str:
        raise no_space()

    monkeypatch.setattr(FileSystemStorage, "_save", full)
    with pytest.raises(CommandError) as e:
        call_command("setup_static", verbosity=0)
    message = str(e.value)
    assert (
        message.startswith(
            f"the static files could not be written into {tmp_path / 'static'}: the disk is full "
            "(No space left on device, "
        )
        and " MB free there); free space on that disk" in message
    )
    assert "\n" not in message


def test_setup_static_collects_the_static_files(settings, tmp_path):
    settings.STATIC_ROOT = tmp_path / "static"
    call_command("setup_static", verbosity=0)
    assert (tmp_path / "static" / "staticfiles.json").exists()
    assert list((tmp_path / "static" / "plotly").glob("plotly.min.*.js"))


@pytest.mark.django_db
def test_migrate_on_a_full_disk_is_one_line(monkeypatch):
    from django.core.management.commands.migrate import Command as DjangoMigrate

    def full(*args: Any, **kw: Any) -> None:
        raise OperationalError("database or disk is full")

    monkeypatch.setattr(DjangoMigrate, "handle", full)
    with pytest.raises(CommandError) as e:
        call_command("migrate", verbosity=0, stdout=io.StringIO())
    assert str(e.value) == (
        "the disk is full (database or disk is full): the database could not be migrated (a "
        "migration's transaction is rolled back whole); free space on the disk that holds the "
        "database and the broker's messages, then run it again"
    )
