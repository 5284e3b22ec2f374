"""workqueue/messages.py: stamps, receipts, the overtaken and empty-queue rules; publish's fair share."""

from __future__ import annotations

from typing import Any

import pytest

from sweeps import configs as sweep_configs
from sweeps.limits import PRIORITIES, SHARE_ROWS
from sweeps.models import Chunk, Sweep
from sweeps.services import chunks, launch
from sweeps.workqueue import leases, messages, publish, watchdog

pytestmark = pytest.mark.django_db

TRIAGE = sweep_configs.builtin_job_source("triage")
MARKERS = [{"name": "markers, keyed", "design": "markers", "tracker": "keyed"}]
GRACE = messages.GRACE_US
SECOND = 1_000_000


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, tuple[Any, ...], int]]:
    """What is published, (task name, args, priority), instead of publishing it."""
    out: list[tuple[str, tuple[Any, ...], int]] = []
    monkeypatch.setattr(
        publish, "send", lambda name, args, producer, priority=publish.NORMAL: out.append((name, tuple(args), priority))
    )
    return out


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """messages.now_us, moved by hand: clock[0] is now."""
    now = [messages.now_us()]
    monkeypatch.setattr(messages, "now_us", lambda: now[0])
    return now


@pytest.fixture
def lost_work(monkeypatch: pytest.MonkeyPatch) -> messages.LostWork:
    work = messages.LostWork()
    monkeypatch.setattr(messages, "LOST", work)
    return work


def sweep_of(user: Any = None, configs: list[dict[str, str]] = MARKERS) -> tuple[Sweep, list[int]]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(publish, "enqueue", lambda *a, **k: None)
        sweep = launch.sweep_create(user=user, job_source=TRIAGE, configs=configs, depth=2)
    return sweep, list(Chunk.objects.filter(sweep=sweep).order_by("pk").values_list("pk", flat=True))


def stamped(ids: list[int], at: int, priority: int = publish.NORMAL) -> None:
    """One message per chunk, queued at `at` in this order."""
    for place, pk in enumerate(ids):
        Chunk.objects.filter(pk=pk).update(queued=at + place, priority=priority, received=None)


def lost(work: messages.LostWork, length: int | None = 5) -> list[int]:
    return sorted(work.rows(Chunk, lambda: length).values_list("pk", flat=True))


def test_a_batch_is_stamped_in_publishing_order_as_not_received():
    _, ids = sweep_of()
    Chunk.objects.filter(pk__in=ids).update(received=1)
    messages.stamp(Chunk, [([ids[1]], 3), ([ids[0], ids[2]], 4)])
    rows = dict(Chunk.objects.filter(pk__in=ids[:3]).values_list("pk", "queued"))
    assert rows[ids[1]] < rows[ids[0]] == rows[ids[2]]
    assert set(Chunk.objects.filter(pk__in=ids[:3]).values_list("priority", "received")) == {(3, None), (4, None)}


def test_a_receipt_marks_the_message_received_once_and_a_renewal_does_not(clock):
    _, ids = sweep_of()
    stamped(ids[:2], clock[0] - SECOND)
    leases.leases_renew(chunk_ids=[ids[0]])
    assert Chunk.objects.get(pk=ids[0]).received is None
    leases.leases_renew(chunk_ids=[ids[0]], receipt=True)
    first = clock[0]
    clock[0] += SECOND
    leases.leases_renew(chunk_ids=[ids[0]], receipt=True)
    assert Chunk.objects.get(pk=ids[0]).received == first


def test_a_claim_marks_a_message_received_that_no_receipt_marked():
    _, ids = sweep_of()
    stamped(ids[:1], messages.now_us())
    chunks._claim([ids[0]])
    assert Chunk.objects.get(pk=ids[0]).received is not None


def test_a_message_overtaken_by_a_later_ones_receipt_is_lost_once_the_grace_has_passed(clock, lost_work):
    _, ids = sweep_of()
    stamped(ids[:3], clock[0] - 10 * SECOND)
    Chunk.objects.filter(pk=ids[1]).update(received=clock[0] - GRACE + 1)  # received just now
    assert lost(lost_work) == []
    clock[0] += 2
    assert lost(lost_work) == [ids[0]]  # the one before it; the one after may still be queued


def test_a_message_is_not_overtaken_by_one_that_goes_first(clock, lost_work):
    _, ids = sweep_of()
    stamped(ids[:1], clock[0] - 10 * SECOND, priority=5)
    stamped(ids[1:2], clock[0] - 9 * SECOND, priority=publish.FIRST)
    Chunk.objects.filter(pk=ids[1]).update(received=clock[0] - 5 * SECOND)
    assert lost(lost_work) == []
    stamped(ids[2:3], clock[0] - 8 * SECOND, priority=7)  # goes after it: taken, so it was taken before
    Chunk.objects.filter(pk=ids[2]).update(received=clock[0] - 5 * SECOND)
    assert lost(lost_work) == [ids[0]]


def test_a_message_whose_chunk_is_under_a_live_lease_is_not_lost(clock, lost_work):
    _, ids = sweep_of()
    stamped(ids[:2], clock[0] - 10 * SECOND)
    Chunk.objects.filter(pk=ids[1]).update(received=clock[0] - 5 * SECOND)
    Chunk.objects.filter(pk=ids[0]).update(holder=leases.HOLDER, lease_until=leases.lease_until())
    assert lost(lost_work) == []


def test_messages_of_a_sweep_not_running_are_not_lost(clock, lost_work):
    sweep, ids = sweep_of()
    stamped(ids[:2], clock[0] - 10 * SECOND)
    Chunk.objects.filter(pk=ids[1]).update(received=clock[0] - 5 * SECOND)
    Sweep.objects.filter(pk=sweep.pk).update(status=Sweep.Status.CANCELLED)
    assert lost(lost_work) == []


def test_an_empty_queue_loses_what_was_queued_before_it_once_it_has_read_empty_for_the_grace(clock, lost_work):
    _, ids = sweep_of()
    stamped(ids, clock[0] - 10 * SECOND)
    assert lost(lost_work, length=0) == []  # seen empty now: a message taken just now may not be received yet
    clock[0] += GRACE - 1
    assert lost(lost_work, length=0) == []
    clock[0] += 1
    assert lost(lost_work, length=None) == []  # the broker cannot be asked: nothing is concluded
    assert lost(lost_work, length=0) == []  # and its emptiness is timed afresh
    clock[0] += GRACE
    assert lost(lost_work, length=0) == ids
    stamped(ids[:1], clock[0] - GRACE)  # queued again after the queue was first seen empty
    clock[0] += 1
    assert lost(lost_work, length=0) == ids[1:]
    assert lost(lost_work, length=2) == []  # something is queued: no longer empty


def test_the_lost_message_rule_queues_the_lost_chunks_again_ahead_of_the_queue_once(
    clock, lost_work, sent, monkeypatch, caplog
):
    sweep, ids = sweep_of()
    stamped(ids[:3], clock[0] - 10 * SECOND)
    Chunk.objects.filter(pk=ids[2]).update(received=clock[0] - 5 * SECOND)
    monkeypatch.setattr(watchdog, "queued_messages", lambda: 4)
    assert watchdog.chunks_requeue_lost() == 2
    assert sorted(pk for _, args, _ in sent for pk in (args[0] if isinstance(args[0], list) else [args[0]])) == ids[:2]
    assert {priority for _, _, priority in sent} == {publish.FIRST}
    line = f"sweep {sweep.pk}: {leases.LOST}: 2 chunk(s) queued again ahead of the queue: {ids[0]} {ids[1]}"
    assert line in caplog.text
    assert watchdog.chunks_requeue_lost() == 0  # stamped anew: queued now, not lost


def test_a_fair_share_rises_one_level_each_time_the_owners_work_ahead_doubles():
    assert publish.priority_for(0) == publish.NORMAL
    assert publish.priority_for(SHARE_ROWS - 1) == publish.NORMAL
    assert publish.priority_for(SHARE_ROWS) == publish.NORMAL + 1
    assert publish.priority_for(3 * SHARE_ROWS) == publish.NORMAL + 2
    assert publish.priority_for(10**12) == PRIORITIES - 1
    assert publish.priorities([SHARE_ROWS, SHARE_ROWS, 2 * SHARE_ROWS], 0) == [1, 2, 2]


def test_another_owners_sweep_goes_ahead_of_the_tail_of_a_big_one(sent, django_user_model):
    big_owner = django_user_model.objects.create_user("big", password="pw-big-123456")
    small_owner = django_user_model.objects.create_user("small", password="pw-small-123456")
    table = sweep_configs.table_configs_for()
    big, big_ids = sweep_of(big_owner, table)
    publish.enqueue(big, chunk_ids=big_ids)
    big_levels = [priority for _, _, priority in sent]
    del sent[:]
    small, small_ids = sweep_of(small_owner)
    publish.enqueue(small, chunk_ids=small_ids)
    small_levels = [priority for _, _, priority in sent]
    assert big_levels[0] == publish.NORMAL and max(big_levels) > max(small_levels)
    assert small_levels[0] == publish.NORMAL  # nothing of its owner's ahead of it
    del sent[:]
    again, again_ids = sweep_of(big_owner)  # the big owner's next sweep waits behind their first
    publish.enqueue(again, chunk_ids=again_ids)
    assert min(priority for _, _, priority in sent) == max(big_levels)
