"""Running chunks and storing their scenarios; every raw SQL statement of chunk storage is here.

Rules:
- A chunk is claimed (an attempt counted, its lease taken: workqueue/leases.py) before it plays, and
  stored by a conditional UPDATE (`... WHERE stored = false` and its sweep not cancelled; its lease
  ends) in the transaction that INSERTs its rows: two workers racing on one chunk store it once, the
  loser writes nothing.
- Chunk rows are locked in ID order wherever several are (a claim, a store, a resume, a delete,
  the lease rule); a lease renewal never waits for one (workqueue/leases.py): on PostgreSQL no two
  of them wait for each other in a cycle.
- Work (agentcore playing scenarios) happens outside transactions.
- Rows are INSERTed as tuples (sweeps.schema.record_row) in one executemany: building ~10,000
  model instances per sweep cost more than playing the scenarios.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from django.db import transaction
from django.db.models import F
from django.utils import timezone

import agentcore as agentsweep
from agentcore import parse_job
from sweeps import targets
from sweeps.configs import agent_config
from sweeps.limits import ERROR_CHARS, KEY_CHARS, KIND_CHARS, LABEL_CHARS, MAX_CHUNK_ATTEMPTS, QID_CHARS
from sweeps.models import Chunk, Question, Scenario, Sweep, take
from sweeps.schema import JSON_FIELDS, SCENARIO_COLUMNS, record_row
from sweeps.services import lifecycle
from sweeps.workqueue import leases, messages, publish


class Claimed(NamedTuple):
    """A claimed chunk: its row's columns as the claim's RETURNING reads them."""

    id: int
    sweep_id: int
    config: int
    first_point: int
    kind: str
    label: str
    attempts: int
    second_from: int
    second_to: int


# A condition on a chunk row (one parameter: the cancelled status): its sweep is not cancelled.
_NOT_CANCELLED = f"sweep_id NOT IN (SELECT id FROM {Sweep._meta.db_table} WHERE status = %s)"


def _claim(chunk_ids: Sequence[int], *, fresh: bool = False) -> list[Claimed]:
    """Count an attempt at each unstored chunk, take its lease, and read it, in one statement (in
    `chunk_ids`' order); with `fresh`, only if none of them was started before (else nothing is
    claimed). A chunk of a cancelled sweep is not claimed (no attempt counted: it is skipped, not
    failed), nor one of a deleted sweep (its row is gone)."""
    conn = transaction.get_connection()
    table = conn.ops.quote_name(Chunk._meta.db_table)
    ids = list(chunk_ids)
    marks = ", ".join(["%s"] * len(ids))
    targets = marks
    if conn.features.has_select_for_no_key_update:
        # Locked in ID order, as stores and resumes lock chunks: an UPDATE alone goes in the
        # planner's order, which could cross a resume's (a deadlock on PostgreSQL).
        targets = f"SELECT id FROM {table} WHERE id IN ({marks}) ORDER BY id FOR NO KEY UPDATE"
    sql = (
        f"UPDATE {table} SET attempts = attempts + 1, holder = %s, lease_until = %s, "
        f"received = COALESCE(received, %s) WHERE id IN ({targets}) AND stored = %s"
    )
    params: list[Any] = [
        leases.HOLDER,
        conn.ops.adapt_datetimefield_value(leases.lease_until()),
        messages.now_us(),
        *ids,
        False,
    ]
    if fresh:
        sql += f" AND NOT EXISTS (SELECT 1 FROM {table} WHERE id IN ({marks}) AND stored = %s AND attempts > 0)"
        params += [*ids, False]
    sql += f" AND {_NOT_CANCELLED}"
    params.append(Sweep.Status.CANCELLED.value)
    with conn.cursor() as cur:
        cur.execute(f"{sql} RETURNING {', '.join(Claimed._fields)}", params)
        rows = {r[0]: Claimed(*r) for r in cur.fetchall()}
    return [rows[i] for i in ids if i in rows]


def _mark_stored(chunk_id: int, scenarios: int, saves: int) -> bool:
    """The conditional UPDATE that makes one store of a chunk win: False if it was stored, or its
    sweep was cancelled (or deleted) while it played: then its rows are not stored either."""
    conn = transaction.get_connection()
    qn = conn.ops.quote_name
    with conn.cursor() as cur:
        cur.execute(
            f"UPDATE {qn(Chunk._meta.db_table)} SET stored = %s, scenarios = %s, saves = %s, stored_at = %s, "
            f"holder = '', lease_until = NULL WHERE id = %s AND stored = %s AND {_NOT_CANCELLED}",
            [
                True,
                scenarios,
                saves,
                conn.ops.adapt_datetimefield_value(timezone.now()),
                chunk_id,
                False,
                Sweep.Status.CANCELLED.value,
            ],
        )
        return cur.rowcount == 1


def _unstored(sweep_id: int) -> bool:
    conn = transaction.get_connection()
    with conn.cursor() as cur:
        cur.execute(
            f"SELECT 1 FROM {conn.ops.quote_name(Chunk._meta.db_table)} WHERE sweep_id = %s AND stored = %s LIMIT 1",
            [sweep_id, False],
        )
        return cur.fetchone() is not None


def _insert_scenarios(rows: list[tuple[Any, ...]]) -> None:
    """INSERT ... ON CONFLICT DO NOTHING of many rows in one executemany (SQLite and PostgreSQL).

    The same as bulk_create(ignore_conflicts=True), without building a model instance and
    preparing every field through the ORM for each of a sweep's ~10,000 rows (that cost more than
    playing the scenarios)."""
    conn = transaction.get_connection()
    qn = conn.ops.quote_name
    columns = ", ".join(qn(Scenario._meta.get_field(c).column) for c in SCENARIO_COLUMNS)
    sql = (
        f"INSERT INTO {qn(Scenario._meta.db_table)} ({columns}) "
        f"VALUES ({', '.join(['%s'] * len(SCENARIO_COLUMNS))}) ON CONFLICT DO NOTHING"
    )
    with conn.cursor() as cur:
        cur.executemany(sql, rows)


def _json_values(r: Any, conn: Any) -> tuple[Any, ...]:
    """A record's timeline and effects as the ORM would store them (text, or the driver's JSON adapter)."""
    return tuple(
        None if getattr(r, name) is None else Scenario._meta.get_field(name).get_db_prep_save(getattr(r, name), conn)
        for name in JSON_FIELDS
    )


def _truth(question: dict[str, Any], durable: dict[str, Any]) -> bool:
    """Whether the call asked about had taken effect when it was asked: agentcore says so (the
    tracker's records at the ask); a question stored before it did is read off the tracker's records."""
    if "truth" in question:
        return bool(question["truth"])
    origin = [question["run"], question["call"]["id"]]
    return any(e.get("origin") == origin for e in durable["tracker"]["effects"])


def new_question(sweep_id: int, scenario_id: int, question: dict[str, Any], durable: dict[str, Any]) -> Question:
    """An agentcore question and the durable state it waits with, as a Question row (not saved)."""
    return Question(
        sweep_id=sweep_id,
        scenario_id=scenario_id,
        qid=str(question["id"])[:QID_CHARS],
        call=question["call"],
        key=(question.get("key") or "")[:KEY_CHARS],
        tried=question.get("tried") or "",
        durable=durable,
        truth=_truth(question, durable),
        # agentcore says whether a key or a lookup would have settled it (older ones did not: necessary)
        avoidable=question.get("avoidable") is True,
    )


def chunk_run(*, chunk_id: int) -> bool:
    """Run one chunk and store its scenarios; False if it was stored already (or is gone).

    Round trips: one UPDATE counting the attempt, one read of the sweep, one transaction
    (conditional UPDATE + one multi-row INSERT), one read of what is left."""
    claimed = _claim([chunk_id])
    return bool(claimed) and _run_and_store(claimed) == 1


def chunks_run(*, chunk_ids: Sequence[int]) -> int:
    """Run a task's few chunks and store them together: the same four round trips for all of
    them. How many were stored by this call.

    A redelivered message (one of its chunks was started before: its worker died, or it failed)
    goes one chunk at a time instead, each claimed just before it runs and stored on its own, so
    that only a chunk that kills its process counts attempts toward MAX_CHUNK_ATTEMPTS."""
    claimed = _claim(chunk_ids, fresh=True)
    if claimed:
        return _run_and_store(claimed)
    return sum(chunk_run(chunk_id=c) for c in chunk_ids)


def _run_and_store(claimed: list[Claimed]) -> int:
    """Play claimed chunks (of one sweep) in order and store them in one transaction. A chunk
    that raises stores the ones played before it, then the error goes up (the task's failure
    handler takes the first unstored chunk for the one that failed)."""
    sweep_id = claimed[0].sweep_id
    assert all(c.sweep_id == sweep_id for c in claimed), "a task's chunks belong to one sweep"
    over = [c for c in claimed if c.attempts > MAX_CHUNK_ATTEMPTS]
    if over:
        chunk_failed(chunk_id=over[0].id, error=f"started {over[0].attempts} times without being stored")
        return 0
    sweep = (
        Sweep.objects.only("job_source", "configs", "depth", "runs", "person", "model", "seed")
        .filter(pk=sweep_id)
        .first()
    )
    if sweep is None:  # deleted since the claim: nothing to play, nothing to store
        return 0
    played: list[tuple[int, agentsweep.ChunkResult]] = []
    later = [c.id for c in claimed if c.second_from]  # chunks made after an answer replay it with their answers
    answers = dict(Chunk.objects.filter(pk__in=later).values_list("pk", "answers")) if later else {}
    try:
        for c in claimed:
            # Timelines are kept only for waiting scenarios (their page needs them while they
            # wait); any other scenario's timeline is replayed on demand (scenario_timeline).
            if targets.is_target(sweep.configs[c.config]):
                played.append((c.id, _target_chunk(sweep, c)))
                continue
            chunk = agentsweep.Chunk(
                c.config, c.first_point, c.kind, c.label, c.second_from, c.second_to, answers.get(c.id) or {}
            )
            played.append(
                (
                    c.id,
                    agentsweep.run_chunk(
                        agent_config(sweep, c.config), chunk, sweep.depth, collect=sweep.person == Sweep.Person.QUEUE
                    ),
                )
            )
    finally:
        stored = _store(sweep_id, played) if played else 0
    if stored and not _unstored(sweep_id):
        lifecycle.sweep_finalize(sweep_id=sweep_id)
    return stored


def _target_chunk(sweep: Sweep, c: Claimed) -> agentsweep.ChunkResult:
    """A registered target's chunk, played through its fork server (sweeps.targets)."""
    job = parse_job(sweep.job_source, "stored job")
    return targets.play_chunk(
        sweep.configs,
        c.config,
        c.first_point,
        c.label,
        job,
        sweep.job_source,
        sweep.depth,
        model=sweep.model,
        seed=sweep.seed,
    )


def _store(sweep_id: int, played: list[tuple[int, agentsweep.ChunkResult]]) -> int:
    """One transaction: each chunk's conditional UPDATE (a chunk another worker stored first is
    left out), then one INSERT of every row of the chunks won, then their questions."""
    with transaction.atomic():
        # In ID order, as a resume locks them (recovery._requeue) and as another store of the same
        # chunks does (one queued again): none of them waits for another in a cycle.
        won = [
            (c, res) for c, res in sorted(played, key=lambda p: p[0]) if _mark_stored(c, len(res.records), res.saves)
        ]
        rows = []
        conn = transaction.get_connection()
        for _, res in won:
            waiting = {i for i, _, _ in res.waiting}
            rows += [
                record_row(
                    sweep_id, res.config, r, _json_values(r, conn) if res.timelines or i in waiting else (None, None)
                )
                for i, r in enumerate(res.records)
            ]
        if rows:
            _insert_scenarios(rows)
        waiting = [res for _, res in won if res.waiting]
        if waiting:  # the new rows' IDs, in one read, for their questions
            ids = {
                (c, f, s): pk
                for c, f, s, pk in Scenario.objects.filter(  # a queue sweep has depth 2 at most
                    sweep_id=sweep_id,
                    third_point=0,
                    config__in={res.config for res in waiting},
                    first_point__in={res.first for res in waiting},
                ).values_list("config", "first_point", "second_point", "pk")
            }
            Question.objects.bulk_create(
                [
                    new_question(sweep_id, ids[res.config, res.first, res.records[i].second_point or 0], q, d)
                    for res in waiting
                    for i, q, d in res.waiting
                ],
                ignore_conflicts=True,
            )
    return len(won)


def chunk_failed(*, chunk_id: int, error: str) -> None:
    """A chunk gave up (retries exhausted, too many attempts): fail its sweep, saying which chunk."""
    chunk = Chunk.objects.filter(pk=chunk_id).first()
    if chunk is None or chunk.stored:
        return
    msg = f"chunk {chunk.pk} (configuration {chunk.config + 1}, first point {chunk.first_point}) failed: {error}"[
        :ERROR_CHARS
    ]
    # A cancelled sweep stays cancelled: its chunks are skipped, never counted as failed.
    take(
        Sweep,
        chunk.sweep_id,
        Sweep.Status.FAILED,
        sources=[Sweep.Status.RUNNING, Sweep.Status.WAITING, Sweep.Status.FAILED],
        error=msg,
    )


def chunks_failed(*, chunk_ids: Sequence[int], error: str) -> None:
    """The first of these chunks that is not stored failed: fail its sweep (see chunk_failed)."""
    first = Chunk.objects.filter(pk__in=list(chunk_ids), stored=False).order_by("pk").values_list("pk", flat=True)
    for pk in first[:1]:
        chunk_failed(chunk_id=pk, error=error)


def add_later_chunk(sweep: Sweep, chunk: agentsweep.Chunk) -> None:
    """In a resume's transaction: the twice scenarios at the restart points the answer let the once
    scenario reach, as a chunk of their own; counted in the sweep's total, which runs again until it
    is stored, and enqueued on commit. The resume that makes it wins its question's conditional
    UPDATE first, and the chunk's identity is unique: a redelivered resume makes nothing twice."""
    row, made = Chunk.objects.get_or_create(
        sweep_id=sweep.pk,
        config=chunk.config,
        first_point=chunk.first,
        second_from=chunk.second_from,
        defaults={
            "kind": chunk.kind[:KIND_CHARS],
            "label": chunk.label[:LABEL_CHARS],
            "second_to": chunk.second_to,
            "answers": chunk.answers,
        },
    )
    if not made:
        return
    Sweep.objects.filter(pk=sweep.pk).update(total_chunks=F("total_chunks") + 1)
    take(Sweep, sweep.pk, Sweep.Status.RUNNING, sources=[Sweep.Status.WAITING])
    transaction.on_commit(lambda: publish.enqueue(sweep, chunk_ids=[row.pk]))
