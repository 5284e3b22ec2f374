"""workqueue/publish.py: how a sweep's chunks are dealt into messages so that workers finish together."""

from __future__ import annotations

import pytest

import agentcore as agentsweep
from agentcore import designs, jobs
from sweeps import configs as sweep_configs
from sweeps import limits, schema, tasks
from sweeps.models import Chunk, Scenario, Sweep
from sweeps.services import chunks
from sweeps.workqueue import publish
from tests.sweeps._web import chunk_ids, create, run_all

pytestmark = pytest.mark.django_db


def sent_messages(enqueued):
    """The chunk IDs of each message published, in the order published."""
    return [
        [args[0]] if name == tasks.chunk_run.name else list(args[0])
        for name, args in enqueued
        if name in (tasks.chunk_run.name, tasks.chunks_run.name)
    ]


# Worker speeds: four alike, one of four at half speed (a busy host), four unlike; and 2, 3, 5 and 8 alike.
SPEEDS = [(1, 1, 1, 1), (1, 1, 1, 0.5), (1, 0.9, 0.8, 0.7), (1, 1), (1, 1, 1), (1,) * 5, (1,) * 8]


def finish_spread(messages, work, speeds):
    """How far apart workers of these speeds finish, as a share of the sweep's time, when each takes
    the next published message as soon as it is free (`work` by chunk ID: time = work / speed)."""
    busy = [0.0] * len(speeds)
    for m in messages:
        w = busy.index(min(busy))
        busy[w] += sum(work[pk] for pk in m) / speeds[w]
    return (max(busy) - min(busy)) / max(busy)


def test_messages_are_dealt_heaviest_first_and_shrink_toward_the_end(enqueued, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        sweep = create(configs=sweep_configs.table_configs_for(), depth=2)
    messages = sent_messages(enqueued)
    assert sorted(pk for m in messages for pk in m) == chunk_ids(sweep)
    assert all(m == sorted(m) and len(m) <= limits.MAX_CHUNKS_PER_TASK for m in messages)
    run_all(sweep)
    work = dict(Chunk.objects.filter(sweep=sweep).values_list("pk", "scenarios"))
    sizes = [sum(work[pk] for pk in m) for m in messages]
    total = sum(sizes)
    # A message holds about 1/MESSAGE_SHARE of the work left (closed by the chunk that takes it past
    # that, or at MAX_CHUNKS_PER_TASK chunks): the first are the largest, the last few 1% or less.
    assert max(sizes[:5]) == max(sizes) <= total / limits.MESSAGE_SHARE + max(work.values())
    assert max(sizes[-4:]) <= 0.01 * total, sizes
    spreads = [finish_spread(messages, work, speeds) for speeds in SPEEDS]
    assert max(spreads) <= 0.04, spreads  # equal messages (before): up to 14%


def test_the_estimated_shares_of_a_16_pair_job_end_together(enqueued, django_capture_on_commit_callbacks):
    """One configuration, 420 first points: early ones have restarts 100 times as long as late ones."""
    with django_capture_on_commit_callbacks(execute=True):
        sweep = create(job_source=jobs.turn_pairs_source(16), depth=2)
    messages = sent_messages(enqueued)
    work = dict(publish.chunk_costs(sweep, chunk_ids(sweep)))
    assert len(work) == 420 and max(work.values()) >= 100 * min(work.values())
    assert max(sum(work[pk] for pk in m) for m in messages) <= sum(work.values()) / limits.MESSAGE_SHARE + max(
        work.values()
    )
    # The tail's floor: no message but the last below TAIL_SHARE of the whole, unless full of chunks.
    assert all(
        sum(work[pk] for pk in m) >= limits.TAIL_SHARE * sum(work.values()) or len(m) == limits.MAX_CHUNKS_PER_TASK
        for m in messages[:-1]
    )
    spreads = [finish_spread(messages, work, speeds) for speeds in SPEEDS]
    assert max(spreads) <= 0.03, spreads  # equal messages (before): up to 14%


def test_four_workers_get_like_shares_of_a_big_job_and_store_agentcore_s_rows(
    enqueued, django_capture_on_commit_callbacks
):
    """The 8-pair generated job (one configuration, 212 chunks of 5 to 213 scenarios): its messages,
    run as workers run them, store agentcore's rows, and workers taking them in turn finish together."""
    job = jobs.turn_pairs(8)
    with django_capture_on_commit_callbacks(execute=True):
        sweep = create(job_source=jobs.turn_pairs_source(8), depth=2)
    messages = sent_messages(enqueued)
    for m in messages:
        chunks.chunks_run(chunk_ids=m)
    sweep.refresh_from_db()
    assert sweep.status == Sweep.Status.DONE
    expected = agentsweep.sweep([agentsweep.Config(job, designs.get("loop"), "keyed")], depth=2).records[0]
    stored = Scenario.objects.filter(sweep=sweep).order_by("first_point", "second_point").values(*schema.RECORD_FIELDS)
    assert [schema.row_fields(r) for r in stored] == [
        {f: getattr(r, f) for f in schema.RECORD_FIELDS} for r in expected
    ]
    work = dict(Chunk.objects.filter(sweep=sweep).values_list("pk", "scenarios"))
    assert sum(work.values()) == len(expected) == 23_564
    spreads = [finish_spread(messages, work, speeds) for speeds in SPEEDS]
    assert max(spreads) <= 0.05, spreads  # equal messages (before): up to 20%
