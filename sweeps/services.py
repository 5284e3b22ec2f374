"""Every write of the dashboard: launching, storing chunks, finalizing, questions, timelines.

Rules:
- Keyword-only functions taking IDs or plain values; views, tasks and commands call these and
  nothing else writes. Each is idempotent: a repeated call (a redelivered task, a double click)
  changes nothing the second time.
- Work (agentcore playing scenarios) happens outside transactions; each store is one short
  transaction opened by a conditional UPDATE (`... WHERE stored = false`, `... WHERE status =
  'answered'`), so two workers racing on one chunk or one question store it once: the loser's
  UPDATE touches no row and it writes nothing.
- "Done" is read from the database (every chunk stored, no question left unresolved), never from
  a counter that a killed worker could leave wrong.
- Tasks are enqueued with `transaction.on_commit`: a worker never sees an ID before its row exists.
- Lost messages (a SIGKILLed worker, a broker restarted empty) are found by the stall watchdog,
  `sweeps_resume_stalled`, run by every worker (sweepsite/celery.py) and by `manage.py sweep`: a
  running sweep that stored nothing for a while, with nothing left in the queue, gets its missing
  chunks queued again. The sweep page's resume button (`sweep_resume`) does it by hand, also for
  a failed sweep. A chunk that keeps failing is bounded by MAX_CHUNK_ATTEMPTS either way.
- One helper, `agent_configs`, turns a stored sweep into agentcore configurations.
"""

from __future__ import annotations

import itertools
import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from functools import lru_cache
from importlib import resources
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Count, F, Max, Q
from django.utils import timezone

from agentcore import designs
from agentcore import sweep as agentsweep
from agentcore.checkpoint import CheckpointError
from agentcore.checkpoint import parse as parse_checkpoint
from agentcore.jobs import BUILTIN, Job, JobError
from agentcore.jobs import parse as parse_job
from agentcore.world import MODES
from sweeps import selectors
from sweeps.models import Chunk, Question, Scenario, Sweep

log = logging.getLogger(__name__)

MAX_DEPTH = 2
MAX_RUNS = 10
MAX_CONFIGS = 64
# A sweep's size grows with (crash points)^2 per configuration: past this many first points in all,
# launching is refused with a message instead of planning for minutes (the 11-row table has 412).
MAX_CHUNKS = 5000
MAX_NAME = 200
MAX_NOTES = 10_000
# A chunk started this many times without being stored (killed workers, a chunk that kills its
# process) fails its sweep with a message instead of being redelivered forever.
MAX_CHUNK_ATTEMPTS = 5
# Chunks per task message: a chunk takes a few ms to play; up to 8 per message keep the broker's
# round trip, the worker's per-task database connection and the store's transaction a small share
# of the work, while a sweep still makes at least 32 messages so that workers share it evenly and
# finish together. A message's chunks are stored together (one transaction).
MAX_CHUNKS_PER_TASK = 8
MIN_MESSAGES = 32


# --- configurations --------------------------------------------------------------------------


def builtin_job_source(name: str = "triage") -> str:
    """The JSON text of a built-in job (what a sweep of "the triage job" stores)."""
    if name not in BUILTIN:
        raise ValidationError(f"unknown built-in job {name!r} (choose from {', '.join(BUILTIN)})")
    return resources.files("agentcore").joinpath("jobfiles", BUILTIN[name]).read_text()


def table_configs_for(job: Job | None = None) -> list[dict[str, str]]:
    """The chapter's table as config dicts: its 11 rows (the preset of the launch form).

    The rows do not depend on the job; `job` is accepted so a caller can say which job it is for.
    """
    return [{"name": name, "design": d, "tracker": t} for name, d, t in agentsweep.TABLE]


def configs_for(design_names: list[str], trackers: list[str]) -> list[dict[str, str]]:
    """Every design with every tracker mode, named as the chapter's table names the pair ("real loop,
    keyless tracker"), or like "loop, lookup tracker" for a pair the table has not."""
    return [{"name": agentsweep.config_name(d, t), "design": d, "tracker": t}
            for d, t in itertools.product(design_names, trackers)]


def _design(name: str) -> designs.Design:
    # "loop+reuse_run_id" is a design with planted bugs, named as agentcore names it.
    base, *bugs = name.split("+")
    return designs.get(base, tuple(bugs))


@lru_cache(maxsize=64)
def _configs(job_source: str, configs: tuple[tuple[str, str, str], ...], runs: int,
             person: str) -> tuple[agentsweep.Config, ...]:
    job = parse_job(job_source, "stored job")
    return tuple(agentsweep.Config(job, _design(d), t, runs, person, name) for name, d, t in configs)


def agent_configs(sweep: Sweep) -> tuple[agentsweep.Config, ...]:
    """The sweep's agentcore configurations, in the order its `config` columns index (cached)."""
    key = tuple((c["name"], c["design"], c["tracker"]) for c in sweep.configs)
    return _configs(sweep.job_source, key, sweep.runs, sweep.person)


def agent_config(sweep: Sweep, index: int) -> agentsweep.Config:
    return agent_configs(sweep)[index]


# --- launching -------------------------------------------------------------------------------


def _check(ok: bool, message: str, code: str = "invalid") -> None:
    if not ok:
        raise ValidationError(message, code=code)


def _clean_configs(configs: Any) -> list[dict[str, str]]:
    _check(isinstance(configs, list) and len(configs) > 0, "choose at least one configuration")
    _check(len(configs) <= MAX_CONFIGS, f"at most {MAX_CONFIGS} configurations")
    out: list[dict[str, str]] = []
    for i, c in enumerate(configs, 1):
        _check(isinstance(c, dict) and set(c) == {"name", "design", "tracker"},
               f"configuration {i}: needs exactly name, design and tracker")
        name, design, tracker = c["name"], c["design"], c["tracker"]
        _check(isinstance(name, str) and 0 < len(name.strip()) <= MAX_NAME,
               f"configuration {i}: name must be 1 to {MAX_NAME} characters")
        _check(isinstance(design, str), f"configuration {i}: design must be a name")
        try:
            _design(design)
        except ValueError as e:
            raise ValidationError(f"configuration {i}: {e}", code="invalid") from None
        _check(tracker in MODES, f"configuration {i}: unknown tracker mode {tracker!r} "
                                 f"(choose from {', '.join(MODES)})")
        out.append({"name": name.strip(), "design": design, "tracker": tracker})
    names = [c["name"] for c in out]
    _check(len(set(names)) == len(names), "configuration names must differ")
    return out


def _clean_settings(job_source: Any, depth: Any, runs: Any, person: Any, source_name: str) -> Job:
    """The job, parsed, once depth, runs and person are checked too. Raises ValidationError."""
    _check(isinstance(job_source, str), "the job must be JSON text")
    try:
        job = parse_job(job_source, source_name)
    except JobError as e:
        raise ValidationError(str(e), code="job") from None
    _check(type(depth) is int and 1 <= depth <= MAX_DEPTH, f"depth must be 1 or 2, not {depth!r}")
    _check(type(runs) is int and 1 <= runs <= MAX_RUNS, f"runs must be between 1 and {MAX_RUNS}, not {runs!r}")
    _check(person in Sweep.Person.values, f"person must be one of {', '.join(Sweep.Person.values)}, not {person!r}")
    return job


def _chunk_plan(job_source: Any, configs: Any, depth: Any, runs: Any, person: Any, source_name: str,
                ) -> tuple[Job, list[dict[str, str]], list[agentsweep.Config], list[agentsweep.Chunk], list[int]]:
    """Validate a sweep's settings and plan its chunks: (job, clean configs, agentcore configs (with
    a truthful person), chunks, crash points per configuration). Raises ValidationError."""
    job = _clean_settings(job_source, depth, runs, person, source_name)
    clean = _clean_configs(configs)
    # The crash points come from the uninterrupted run with a truthful person: a queue person
    # would suspend it at its first question (the points after an answer are the same).
    cfgs = [agentsweep.Config(job, _design(c["design"]), c["tracker"], runs, "scripted", c["name"]) for c in clean]
    plan: list[agentsweep.Chunk] = []
    npoints: list[int] = []
    for i, cfg in enumerate(cfgs):
        try:
            pts = agentsweep.points(cfg)
        except ValueError as e:
            raise ValidationError(str(e), code="job") from None
        npoints.append(len(pts))
        plan.extend(agentsweep.Chunk(i, n, kind, label) for n, (kind, label) in enumerate(pts, 1))
        if len(plan) > MAX_CHUNKS:
            raise ValidationError(
                f"this sweep has more than {MAX_CHUNKS} first crash points; sweep fewer configurations "
                f"or a smaller job", code="too_big")
    return job, clean, cfgs, plan, npoints


def sweep_check(*, job_source: str, configs: list[dict[str, str]], depth: int = 2, runs: int = 1,
                person: str = "scripted", source_name: str = "uploaded job") -> int:
    """Validate a sweep as sweep_create would (raises ValidationError), storing nothing; how many
    chunks it would have."""
    return len(_chunk_plan(job_source, configs, depth, runs, person, source_name)[3])


def sweep_create(*, user: Any, job_source: str, configs: list[dict[str, str]], depth: int = 2, runs: int = 1,
                 person: str = "scripted", request_token: str | None = None,
                 source_name: str = "uploaded job", name: str = "", notes: str = "") -> Sweep:
    """Validate, store the sweep and its chunks, and enqueue one task per chunk on commit.

    Bad input raises ValidationError and stores nothing. The same `request_token` twice gives the
    first sweep back (a double submit is one sweep). `name` and `notes` are the person's own words
    for the sweep (optional).
    """
    if request_token is not None:
        _check(isinstance(request_token, str) and 0 < len(request_token) <= 64, "bad request token")
        existing = Sweep.objects.filter(request_token=request_token).first()
        if existing is not None:
            return existing
    name, notes = _clean_name_notes(name, notes)
    job, clean, _, plan, npoints = _chunk_plan(job_source, configs, depth, runs, person, source_name)

    try:
        with transaction.atomic():
            sweep = Sweep.objects.create(
                job_name=job.name, job_source=job_source, configs=clean, depth=depth, runs=runs, person=person,
                created_by=user if getattr(user, "pk", None) else None, request_token=request_token,
                total_chunks=len(plan), name=name, notes=notes,
            )
            chunks = Chunk.objects.bulk_create(
                [Chunk(sweep=sweep, config=c.config, first_point=c.first, kind=c.kind[:40], label=c.label[:300])
                 for c in plan]
            )
            ids = [c.pk for c in chunks]
            if None in ids:  # a backend that does not return keys from bulk inserts: read them in plan order
                ids = list(Chunk.objects.filter(sweep=sweep).order_by("config", "first_point")
                           .values_list("pk", flat=True))
            # Heaviest first: an early first point has a long restart, so many twice scenarios.
            heavy = [pk for _, pk in sorted(zip((c.first - npoints[c.config] for c in plan), ids, strict=True))]
            transaction.on_commit(lambda: _enqueue(sweep, chunk_ids=heavy))
    except IntegrityError:
        if request_token is not None:  # two submits raced: the other one stored it
            existing = Sweep.objects.filter(request_token=request_token).first()
            if existing is not None:
                return existing
        raise
    return sweep


def _enqueue(sweep: Sweep, *, chunk_ids: Sequence[int] = (), question_ids: Sequence[int] = (),
             fail_sweep: bool = True) -> None:
    """Publish the tasks (called on commit), a few chunks per message (`chunk_ids` best heaviest
    first).

    A broker that cannot be reached leaves no sweep "running" forever: a launch or resume fails
    the sweep with a message saying so (and `sweep_resume` enqueues again once it is back), an
    answer notes it on the sweep; then the error is raised for the caller to report. The stall
    watchdog passes `fail_sweep=False`: its sweep stays running and its next round tries again."""
    from sweeps import tasks

    per_task = max(1, min(MAX_CHUNKS_PER_TASK, len(chunk_ids) // MIN_MESSAGES))
    # Chunks are dealt out like cards, to and fro (given heaviest first, every message gets a like
    # share of the work, so workers finish together); each message runs its chunks in ID order.
    messages = math.ceil(len(chunk_ids) / per_task)
    hands: list[list[int]] = [[] for _ in range(messages)]
    for n, pk in enumerate(chunk_ids):
        turn, seat = divmod(n, messages)
        hands[seat if turn % 2 == 0 else messages - 1 - seat].append(pk)
    try:
        with tasks.app.producer_or_acquire() as producer:
            for hand in hands:
                batch = sorted(hand)
                if len(batch) == 1:
                    tasks.run_chunk.apply_async((batch[0],), producer=producer)
                else:
                    tasks.run_chunks.apply_async((batch,), producer=producer)
            for qid in question_ids:
                tasks.resume_question.apply_async((qid,), producer=producer)
    except Exception as e:
        log.exception("sweep %s: cannot enqueue tasks", sweep.pk)
        msg = f"could not reach the task broker ({type(e).__name__}: {e}); resume the sweep once it is back"
        if fail_sweep and chunk_ids:
            Sweep.objects.filter(pk=sweep.pk).exclude(status=Sweep.Status.DONE).update(
                status=Sweep.Status.FAILED, error=msg)
            sweep.status, sweep.error = Sweep.Status.FAILED, msg
        elif fail_sweep:
            Sweep.objects.filter(pk=sweep.pk).update(error=msg)
        raise


# --- the planned size, before anything is enqueued ---------------------------------------------

# Counting a sweep's scenarios exactly plays every first crash point once, up to the end of its
# restart (a depth-2 chunk has one twice scenario per point the restart reaches): about n^2 steps
# for a configuration of n points. Up to PLAN_BUDGET steps in all, every point is played and the
# count is exact (the chapter's table: 15,954 steps, 0.09 s here); past it, each configuration plays
# evenly spaced first points (at least PLAN_MIN_SAMPLES) and the others are interpolated: "about".
PLAN_BUDGET = 40_000
PLAN_MIN_SAMPLES = 8


@dataclass(frozen=True, slots=True)
class Plan:
    """A sweep's planned size. `scenarios` is exact when `exact`, else an estimate."""

    chunks: int
    scenarios: int
    exact: bool
    configs: tuple[tuple[str, int, int], ...]  # (name, chunks, scenarios) per configuration


def _restart_points(cfg: agentsweep.Config, first: int) -> int:
    """How many points the restart reaches after a crash at `first`: the chunk's twice scenarios."""
    played = agentsweep.play(cfg, (first,), record=True)
    restart = played.processes[1].points if len(played.processes) > 1 else None
    return len(restart or ())


def _twice_count(cfg: agentsweep.Config, n: int, samples: int) -> int:
    """The twice scenarios of a configuration of n first points, from `samples` of them played
    (every one when samples >= n) and straight lines between them."""
    if samples >= n:
        return sum(_restart_points(cfg, f) for f in range(1, n + 1))
    at = sorted({round(1 + i * (n - 1) / (samples - 1)) for i in range(samples)})
    got = {f: _restart_points(cfg, f) for f in at}
    total = 0
    for a, b in itertools.pairwise(at):
        for f in range(a, b):
            total += got[a] + (got[b] - got[a]) * (f - a) / (b - a)
    return round(total + got[at[-1]])


@lru_cache(maxsize=32)
def _plan(job_source: str, configs: tuple[tuple[str, str, str], ...], depth: int, runs: int, person: str,
          budget: int, source_name: str) -> Plan:
    _, clean, cfgs, _, npoints = _chunk_plan(
        job_source, [{"name": n, "design": d, "tracker": t} for n, d, t in configs], depth, runs, person,
        source_name)
    sampled = depth == 2 and sum(n * n for n in npoints) > budget
    rows = []
    for c, cfg, n in zip(clean, cfgs, npoints, strict=True):
        twice = 0
        if depth == 2:
            twice = _twice_count(cfg, n, max(PLAN_MIN_SAMPLES, budget // (len(cfgs) * n)) if sampled else n)
        rows.append((c["name"], n, n + twice))
    # A queue person's scenarios stop at open questions and go on after answers: an estimate.
    return Plan(sum(npoints), sum(r[2] for r in rows), not sampled and person == Sweep.Person.SCRIPTED,
                tuple(rows))


def sweep_plan(*, job_source: str, configs: list[dict[str, str]], depth: int = 2, runs: int = 1,
               person: str = "scripted", source_name: str = "uploaded job", budget: int = PLAN_BUDGET) -> Plan:
    """The sweep's size as sweep_create would plan it: chunks (exact) and scenarios (exact or about,
    see PLAN_BUDGET), computed with agentcore; nothing is stored or enqueued. Bad input raises
    ValidationError as sweep_create does. Cached per process (the launch form asks on every change)."""
    _clean_settings(job_source, depth, runs, person, source_name)
    key = tuple((c["name"], c["design"], c["tracker"]) for c in _clean_configs(configs))
    return _plan(job_source, key, depth, runs, person, budget, source_name)


# --- running chunks --------------------------------------------------------------------------


# A scenario row's columns (attnames), in the order _scenario_row gives their values.
SCENARIO_COLUMNS = ("sweep_id", "config", "design", "tracker", "job", "runs", "first_point", "first_kind",
                    "first_label", "second_point", "second_kind", "second_label", "duplicates", "missing", "asks",
                    "approvals", "model_calls", "calls_plus", "status", "timeline", "effects")


def _scenario_row(sweep_id: int, config: int, r: Any, keep_timeline: bool, conn: Any) -> tuple[Any, ...]:
    """An agentcore record as INSERT parameters (a tuple: ~10,000 of these per sweep)."""
    timeline = effects = None
    if keep_timeline:  # JSON as the ORM would store it (text, or the driver's JSON adapter)
        timeline, effects = (None if v is None else Scenario._meta.get_field(name).get_db_prep_save(v, conn)
                             for name, v in (("timeline", r.timeline), ("effects", r.effects)))
    return (sweep_id, config, r.design, r.tracker, r.job[:200], r.runs, r.first_point, r.first_kind,
            r.first_label[:300], r.second_point or 0, r.second_kind or "", (r.second_label or "")[:300],
            *_outcome(r), r.status, timeline, effects)


OUTCOME_COLUMNS = ("duplicates", "missing", "asks", "approvals", "model_calls", "calls_plus")


def _outcome(r: Any) -> tuple[int, int, int, int, int, int]:
    """A record's duplicates, missing, asks, approvals, model_calls, calls_plus as stored: 0s for a
    waiting scenario, whose tallies so far are no outcome (it has not made its calls yet: its calls+
    would be negative), so that no sum over stored rows takes them for one."""
    if r.status == Scenario.Status.WAITING:
        return 0, 0, 0, 0, 0, 0
    return r.duplicates, r.missing, r.asks, r.approvals, r.model_calls, r.calls_plus


def _insert_scenarios(rows: list[tuple[Any, ...]]) -> None:
    """INSERT ... ON CONFLICT DO NOTHING of many rows in one executemany (SQLite and PostgreSQL).

    The same as bulk_create(ignore_conflicts=True), without building a model instance and
    preparing every field through the ORM for each of a sweep's ~10,000 rows (that cost more than
    playing the scenarios)."""
    conn = transaction.get_connection()
    qn = conn.ops.quote_name
    columns = ", ".join(qn(Scenario._meta.get_field(c).column) for c in SCENARIO_COLUMNS)
    sql = (f"INSERT INTO {qn(Scenario._meta.db_table)} ({columns}) "
           f"VALUES ({', '.join(['%s'] * len(SCENARIO_COLUMNS))}) ON CONFLICT DO NOTHING")
    with conn.cursor() as cur:
        cur.executemany(sql, rows)


_CLAIMED = "id, sweep_id, config, first_point, kind, label, attempts, second_from, second_to"
Claimed = tuple[int, int, int, int, str, str, int, int, int]  # a claimed chunk: the columns of _CLAIMED
# A condition on a chunk row (one parameter: the cancelled status): its sweep is not cancelled.
_NOT_CANCELLED = f"sweep_id NOT IN (SELECT id FROM {Sweep._meta.db_table} WHERE status = %s)"


def _claim(chunk_ids: Sequence[int], *, fresh: bool = False) -> list[Claimed]:
    """Count an attempt at each unstored chunk and read it, in one statement (in `chunk_ids`'
    order); with `fresh`, only if none of them was started before (else nothing is claimed). A chunk
    of a cancelled sweep is not claimed (no attempt counted: it is skipped, not failed), nor one of
    a deleted sweep (its row is gone)."""
    conn = transaction.get_connection()
    table = conn.ops.quote_name(Chunk._meta.db_table)
    ids = list(chunk_ids)
    marks = ", ".join(["%s"] * len(ids))
    sql = f"UPDATE {table} SET attempts = attempts + 1 WHERE id IN ({marks}) AND stored = %s"
    params: list[Any] = [*ids, False]
    if fresh:
        sql += f" AND NOT EXISTS (SELECT 1 FROM {table} WHERE id IN ({marks}) AND stored = %s AND attempts > 0)"
        params += params
    sql += f" AND {_NOT_CANCELLED}"
    params.append(Sweep.Status.CANCELLED.value)
    with conn.cursor() as cur:
        cur.execute(f"{sql} RETURNING {_CLAIMED}", params)
        rows = {r[0]: tuple(r) for r in cur.fetchall()}
    return [rows[i] for i in ids if i in rows]  # type: ignore[misc]


def _truth(question: dict[str, Any], durable: dict[str, Any]) -> bool:
    """Whether the call asked about had taken effect when it was asked: agentcore says so (the
    tracker's records at the ask); a question stored before it did is read off the tracker's records."""
    if "truth" in question:
        return bool(question["truth"])
    origin = [question["run"], question["call"]["id"]]
    return any(e.get("origin") == origin for e in durable["tracker"]["effects"])


def _question(sweep_id: int, scenario_id: int, question: dict[str, Any], durable: dict[str, Any]) -> Question:
    return Question(sweep_id=sweep_id, scenario_id=scenario_id, qid=str(question["id"])[:200], call=question["call"],
                    key=(question.get("key") or "")[:64], tried=question.get("tried") or "", durable=durable,
                    truth=_truth(question, durable))


def _mark_stored(chunk_id: int, scenarios: int, saves: int) -> bool:
    """The conditional UPDATE that makes one store of a chunk win: False if it was stored, or its
    sweep was cancelled (or deleted) while it played: then its rows are not stored either."""
    conn = transaction.get_connection()
    qn = conn.ops.quote_name
    with conn.cursor() as cur:
        cur.execute(f"UPDATE {qn(Chunk._meta.db_table)} SET stored = %s, scenarios = %s, saves = %s, stored_at = %s "
                    f"WHERE id = %s AND stored = %s AND {_NOT_CANCELLED}",
                    [True, scenarios, saves, conn.ops.adapt_datetimefield_value(timezone.now()), chunk_id, False,
                     Sweep.Status.CANCELLED.value])
        return cur.rowcount == 1


def _unstored(sweep_id: int) -> bool:
    conn = transaction.get_connection()
    with conn.cursor() as cur:
        cur.execute(f"SELECT 1 FROM {conn.ops.quote_name(Chunk._meta.db_table)} WHERE sweep_id = %s AND stored = %s "
                    "LIMIT 1", [sweep_id, False])
        return cur.fetchone() is not None


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
    sweep_id = claimed[0][1]
    assert all(c[1] == sweep_id for c in claimed), "a task's chunks belong to one sweep"
    over = [c for c in claimed if c[6] > MAX_CHUNK_ATTEMPTS]
    if over:
        chunk_failed(chunk_id=over[0][0], error=f"started {over[0][6]} times without being stored")
        return 0
    sweep = Sweep.objects.only("job_source", "configs", "depth", "runs", "person").filter(pk=sweep_id).first()
    if sweep is None:  # deleted since the claim: nothing to play, nothing to store
        return 0
    played: list[tuple[int, agentsweep.ChunkResult]] = []
    later = [c[0] for c in claimed if c[7]]  # chunks made after an answer replay it with their answers
    answers = dict(Chunk.objects.filter(pk__in=later).values_list("pk", "answers")) if later else {}
    try:
        for chunk_id, _, config, first_point, kind, label, _, second_from, second_to in claimed:
            # Timelines are kept only for waiting scenarios (their page needs them while they
            # wait); any other scenario's timeline is replayed on demand (scenario_timeline).
            chunk = agentsweep.Chunk(config, first_point, kind, label, second_from, second_to,
                                     answers.get(chunk_id) or {})
            played.append((chunk_id, agentsweep.run_chunk(agent_config(sweep, config), chunk, sweep.depth,
                                                          collect=sweep.person == Sweep.Person.QUEUE)))
    finally:
        stored = _store(sweep_id, played) if played else 0
    if stored and not _unstored(sweep_id):
        sweep_finalize(sweep_id=sweep_id)
    return stored


def _store(sweep_id: int, played: list[tuple[int, agentsweep.ChunkResult]]) -> int:
    """One transaction: each chunk's conditional UPDATE (a chunk another worker stored first is
    left out), then one INSERT of every row of the chunks won, then their questions."""
    with transaction.atomic():
        won = [(c, res) for c, res in played if _mark_stored(c, len(res.records), res.saves)]
        rows = []
        conn = transaction.get_connection()
        for _, res in won:
            waiting = {i for i, _, _ in res.waiting}
            rows += [_scenario_row(sweep_id, res.config, r, i in waiting, conn) for i, r in enumerate(res.records)]
        if rows:
            _insert_scenarios(rows)
        waiting = [res for _, res in won if res.waiting]
        if waiting:  # the new rows' IDs, in one read, for their questions
            ids = {(c, f, s): pk for c, f, s, pk in Scenario.objects.filter(
                sweep_id=sweep_id, config__in={res.config for res in waiting},
                first_point__in={res.first for res in waiting},
            ).values_list("config", "first_point", "second_point", "pk")}
            Question.objects.bulk_create(
                [_question(sweep_id, ids[res.config, res.first, res.records[i].second_point or 0], q, d)
                 for res in waiting for i, q, d in res.waiting], ignore_conflicts=True)
    return len(won)


def chunk_failed(*, chunk_id: int, error: str) -> None:
    """A chunk gave up (retries exhausted, too many attempts): fail its sweep, saying which chunk."""
    chunk = Chunk.objects.filter(pk=chunk_id).first()
    if chunk is None or chunk.stored:
        return
    msg = (f"chunk {chunk.pk} (configuration {chunk.config + 1}, first point {chunk.first_point}) failed: "
           f"{error}"[:2000])
    # A cancelled sweep stays cancelled: its chunks are skipped, never counted as failed.
    Sweep.objects.filter(pk=chunk.sweep_id).exclude(status__in=[Sweep.Status.DONE, Sweep.Status.CANCELLED]).update(
        status=Sweep.Status.FAILED, error=msg)


def chunks_failed(*, chunk_ids: Sequence[int], error: str) -> None:
    """The first of these chunks that is not stored failed: fail its sweep (see chunk_failed)."""
    first = Chunk.objects.filter(pk__in=list(chunk_ids), stored=False).order_by("pk").values_list("pk", flat=True)
    for pk in first[:1]:
        chunk_failed(chunk_id=pk, error=error)


def sweep_finalize(*, sweep_id: int) -> Sweep | None:
    """Derive the sweep's status from its rows; cache the table once it is done. Idempotent.

    A cancelled sweep becomes done only when everything is there: every chunk stored and no
    question left unresolved (the cancel came after the last chunk was stored); otherwise it stays
    cancelled, with its stored rows, until its resume button. None if the sweep was deleted."""
    sweep = Sweep.objects.filter(pk=sweep_id).first()
    if sweep is None or sweep.status == Sweep.Status.DONE:
        return sweep
    if Chunk.objects.filter(sweep_id=sweep_id, stored=False).exists():
        return sweep
    if Question.objects.filter(sweep_id=sweep_id).exclude(status=Question.Status.RESUMED).exists():
        if sweep.status == Sweep.Status.RUNNING:
            Sweep.objects.filter(pk=sweep_id, status=Sweep.Status.RUNNING).update(status=Sweep.Status.WAITING)
        sweep.refresh_from_db()
        return sweep
    table = [r.to_dict() for r in selectors.sweep_table(sweep)]
    Sweep.objects.filter(pk=sweep_id).exclude(status=Sweep.Status.DONE).update(
        status=Sweep.Status.DONE, finished_at=timezone.now(), table=table, error="")
    sweep.refresh_from_db()
    return sweep


def sweep_resume(*, sweep_id: int) -> int:
    """Enqueue again every chunk not stored and every answered question not resumed (a stalled
    sweep: killed workers, a lost message, a broker that was down). Returns how many tasks.

    The sweep page's resume button: a failed sweep runs again, and each missing chunk gets a fresh
    bound of MAX_CHUNK_ATTEMPTS. A cancelled sweep runs again (status running; finalize then
    derives waiting or done if nothing is missing). A broker that cannot be reached fails the sweep
    with a message and raises (kombu's OperationalError) for the page to report."""
    return _requeue(sweep_id, manual=True)


def _requeue(sweep_id: int, *, manual: bool, answered_before: Any = None) -> int:
    with transaction.atomic():
        sweep = Sweep.objects.select_for_update().get(pk=sweep_id)
        if not manual and sweep.status not in (Sweep.Status.RUNNING, Sweep.Status.WAITING):
            return 0  # failed (a chunk that keeps failing) or done since the watchdog looked
        chunk_ids = list(Chunk.objects.filter(sweep_id=sweep_id, stored=False).values_list("pk", flat=True))
        questions = Question.objects.filter(sweep_id=sweep_id, status=Question.Status.ANSWERED)
        if answered_before is not None:
            questions = questions.filter(answered_at__lt=answered_before)
        question_ids = list(questions.values_list("pk", flat=True))
        if chunk_ids and manual:
            Chunk.objects.filter(pk__in=chunk_ids).update(attempts=0)  # a fresh bound for each resume
        if (chunk_ids or question_ids) and sweep.status == Sweep.Status.FAILED:
            Sweep.objects.filter(pk=sweep_id).update(status=Sweep.Status.RUNNING, error="")
        if manual and sweep.status == Sweep.Status.CANCELLED:
            Sweep.objects.filter(pk=sweep_id).update(status=Sweep.Status.RUNNING, error="", finished_at=None)
        if chunk_ids or question_ids:
            transaction.on_commit(lambda: _enqueue(sweep, chunk_ids=chunk_ids, question_ids=question_ids,
                                                   fail_sweep=manual))
    if not chunk_ids and not question_ids:
        sweep_finalize(sweep_id=sweep_id)
    return len(chunk_ids) + len(question_ids)


# Per process: when the watchdog last queued a sweep's missing work (monotonic seconds), so that
# one process queues a stalled sweep at most once per `stalled_for` while its rows do not come.
_AUTO_RESUMED: dict[int, float] = {}


def sweeps_resume_stalled(*, stalled_for: float, sweep_id: int | None = None) -> int:
    """The stall watchdog: queue again the missing work of sweeps whose workers lost it.

    A running sweep that stored no chunk for `stalled_for` seconds (since its launch, its last
    stored chunk, or this process's last resume of it) gets its unstored chunks enqueued again;
    a running or waiting sweep gets the resume of every question answered more than `stalled_for`
    seconds ago and not resumed yet. Only when the task queue is empty: messages still queued
    will reach a worker (or no worker runs, and queueing more would not help). So it recovers the
    messages a SIGKILLed worker had taken (the filesystem broker deletes them on delivery; Redis
    gives them back only after its visibility timeout) and those of a broker that restarted empty.
    Keyed writes make an overlap with a late redelivery harmless. A running sweep with every chunk
    stored (its worker died before finalizing) is finalized. A failed sweep is left alone (its
    resume button is for people), and attempts are not reset: a chunk that keeps killing its worker
    still fails its sweep after MAX_CHUNK_ATTEMPTS. `sweep_id` limits it to one sweep. Returns how
    many tasks were enqueued; a broker or database that cannot be reached gives 0 (logged), never
    a failed sweep: the next round tries again."""
    _check(isinstance(stalled_for, int | float) and stalled_for > 0, "stalled_for must be a positive number")
    now, mono = timezone.now(), time.monotonic()
    cutoff = now - timedelta(seconds=stalled_for)
    sweeps = Sweep.objects.filter(status__in=[Sweep.Status.RUNNING, Sweep.Status.WAITING], created_at__lt=cutoff)
    if sweep_id is not None:
        sweeps = sweeps.filter(pk=sweep_id)
    candidates = sweeps.annotate(
        last=Max("chunks__stored_at"),
        unstored=Count("chunks", filter=Q(chunks__stored=False)),
    ).values_list("pk", "status", "last", "unstored")
    stalled = []
    for pk, status, last, unstored in candidates:
        if mono - _AUTO_RESUMED.get(pk, -math.inf) < stalled_for:
            continue
        quiet = last is None or last < cutoff
        if not unstored and status == Sweep.Status.RUNNING and quiet:
            # Every chunk stored, still "running": its last worker died between storing and
            # finalizing (a redelivered chunk finds itself stored and stops). Nothing to queue.
            sweep_finalize(sweep_id=pk)
        elif unstored and status == Sweep.Status.RUNNING and quiet:
            stalled.append(pk)
        elif Question.objects.filter(sweep_id=pk, status=Question.Status.ANSWERED, answered_at__lt=cutoff).exists():
            stalled.append(pk)
    if not stalled:
        return 0
    queued = _queued_messages()
    if queued is None or queued > 0:
        return 0
    n = 0
    for pk in stalled:
        try:
            k = _requeue(pk, manual=False, answered_before=cutoff)
        except Exception:  # noqa: BLE001 - the broker went away meanwhile: the next round tries again
            log.exception("sweep %s: the stall watchdog could not queue its missing work", pk)
            continue
        _AUTO_RESUMED[pk] = mono
        if k:
            log.warning("sweep %s: nothing stored for %g s and the queue is empty: %d missing chunk(s) and "
                        "answer(s) queued again", pk, stalled_for, k)
        n += k
    return n


def _queued_messages() -> int | None:
    """How many messages wait in the dashboard's task queue; None if the broker cannot be asked."""
    from kombu.exceptions import ChannelError

    from sweeps import tasks

    try:
        with tasks.app.connection_for_write() as conn, conn.channel() as channel:
            try:
                ok = channel.queue_declare(queue=str(tasks.app.conf.task_default_queue), passive=True)
            except (ChannelError, *conn.channel_errors):
                return 0  # no such queue: transports drop an empty queue, or none was declared yet
            return int(ok.message_count)
    except Exception as e:  # noqa: BLE001 - unreachable broker: ask again at the next round
        log.warning("the stall watchdog cannot read the task queue (%s: %s)", type(e).__name__, e)
        return None


# --- cancel, delete, name and notes ----------------------------------------------------------


def sweep_cancel(*, sweep_id: int) -> bool:
    """Cancel a running or waiting sweep; True if this call cancelled it (False: it is done, failed
    or cancelled already; a second click changes nothing).

    Its queued chunks are skipped by the workers (not stored, not counted as failed: `_claim`), a
    chunk playing at that moment is not stored (`_mark_stored`), answered questions wait, and the
    stall watchdog leaves it alone; the rows stored before stay. `sweep_resume` goes on from there."""
    return bool(Sweep.objects.filter(pk=sweep_id, status__in=[Sweep.Status.RUNNING, Sweep.Status.WAITING]).update(
        status=Sweep.Status.CANCELLED, finished_at=timezone.now()))


def sweep_delete(*, sweep_id: int) -> dict[str, int]:
    """Delete a sweep with its chunks, scenarios and questions; how many of each were removed
    (all zero if it was gone already). Its tasks still queued find no chunk and do nothing.

    Scenarios go in one DELETE statement: Django's cascade would read every row's ID first (a
    10-run table has 814,560)."""
    with transaction.atomic():
        if not Sweep.objects.select_for_update().filter(pk=sweep_id).exists():
            return {"sweeps": 0, "chunks": 0, "scenarios": 0, "questions": 0}
        questions = Question.objects.filter(sweep_id=sweep_id).delete()[0]
        conn = transaction.get_connection()
        with conn.cursor() as cur:
            cur.execute(f"DELETE FROM {conn.ops.quote_name(Scenario._meta.db_table)} WHERE sweep_id = %s",
                        [sweep_id])
            scenarios = cur.rowcount
        chunks = Chunk.objects.filter(sweep_id=sweep_id).delete()[0]
        Sweep.objects.filter(pk=sweep_id).delete()
    return {"sweeps": 1, "chunks": chunks, "scenarios": scenarios, "questions": questions}


def _clean_name_notes(name: Any, notes: Any) -> tuple[str, str]:
    _check(isinstance(name, str) and isinstance(notes, str), "the name and the notes must be text")
    name = name.strip()
    _check(len(name) <= MAX_NAME, f"the name must be at most {MAX_NAME} characters")
    _check(len(notes) <= MAX_NOTES, f"the notes must be at most {MAX_NOTES:,} characters")
    _check("\x00" not in name + notes, "the name and the notes must not contain a NUL character")
    return name, notes


def sweep_update_notes(*, sweep_id: int, name: str, notes: str) -> bool:
    """Set a sweep's name and notes (the person's words; the sweep itself is unchanged); False if
    the sweep is gone. Bad values raise ValidationError."""
    name, notes = _clean_name_notes(name, notes)
    return bool(Sweep.objects.filter(pk=sweep_id).update(name=name, notes=notes))


# --- questions -------------------------------------------------------------------------------


def question_answer(*, question_id: int, user: Any, happened: bool) -> tuple[Question, bool]:
    """Answer an open question; (question, True) the first time, (question, False) after that
    (the first answer is kept). The first answer enqueues the scenario's resume on commit."""
    with transaction.atomic():
        question = Question.objects.select_for_update().get(pk=question_id)
        won = Question.objects.filter(pk=question_id, status=Question.Status.OPEN).update(
            status=Question.Status.ANSWERED, answer=bool(happened),
            answered_by=user if getattr(user, "pk", None) else None, answered_at=timezone.now())
        question.refresh_from_db()
        if won:
            transaction.on_commit(lambda: _enqueue(question.sweep, question_ids=[question_id]))
    return question, bool(won)


def questions_answer_truthfully(*, sweep_id: int, user: Any) -> int:
    """Answer every open question of the sweep with what the tracker's records say; how many."""
    n = 0
    for qid, truth in Question.objects.filter(sweep_id=sweep_id, status=Question.Status.OPEN).values_list(
            "pk", "truth"):
        n += question_answer(question_id=qid, user=user, happened=bool(truth))[1]
    return n


_DURABLE_KEYS: dict[str, type | tuple[type, ...]] = {
    "tracker": dict, "attempts": list, "model_calls": int, "answers": dict, "asks": int, "prompts": int,
    "decisions": dict, "files": dict, "seq": int, "plan": list, "timeline": list,
}


def check_durable(durable: Any, name: str) -> dict[str, Any]:
    """A stored durable state, checked: a corrupt one raises CheckpointError naming `name`."""
    if not isinstance(durable, dict):
        raise CheckpointError(f"{name}: stored durable state is not an object")
    for key, kind in _DURABLE_KEYS.items():
        if not isinstance(durable.get(key), kind):
            raise CheckpointError(f"{name}: stored durable state: {key} is missing or of the wrong type")
    tracker = durable["tracker"]
    if tracker.get("mode") not in MODES or not isinstance(tracker.get("effects"), list):
        raise CheckpointError(f"{name}: stored durable state: the tracker records are corrupt")
    for fname, text in durable["files"].items():
        if not isinstance(text, str):
            raise CheckpointError(f"{name}: checkpoint {fname}: not text")
        # surrogatepass: a lone surrogate reaches the parser as bytes that are not UTF-8 (corrupt)
        parse_checkpoint(text.encode("utf-8", "surrogatepass"), f"{name}: checkpoint {fname}")
    return durable


def _points(sc: Scenario) -> tuple[tuple[int, str, str], tuple[int, str, str] | None]:
    first = (sc.first_point, sc.first_kind, sc.first_label)
    second = (sc.second_point, sc.second_kind, sc.second_label) if sc.second_point else None
    return first, second


def question_resume(*, question_id: int) -> bool:
    """Resume an answered question's scenario from its durable state and store the outcome.

    Idempotent: only an ANSWERED question resumes, and it becomes RESUMED in the same transaction
    that updates the scenario. A corrupt durable state raises CheckpointError (and is noted on
    the sweep)."""
    q = Question.objects.select_related("scenario", "sweep").filter(pk=question_id).first()
    if q is None or q.status != Question.Status.ANSWERED:
        return False
    if q.sweep.status == Sweep.Status.CANCELLED:
        return False  # stays answered: the sweep's resume button queues it again
    sc, sweep = q.scenario, q.sweep
    name = f"question {q.pk} (scenario {sc.pk})"
    try:
        durable = check_durable(q.durable, name)
        resumed = agentsweep.resume(agent_config(sweep, sc.config), durable, {q.qid: bool(q.answer)}, *_points(sc),
                                    depth=sweep.depth)
    except (CheckpointError, KeyError, TypeError, ValueError, AttributeError) as e:
        err = e if isinstance(e, CheckpointError) else CheckpointError(f"{name}: stored durable state is unusable "
                                                                        f"({type(e).__name__}: {e})")
        Sweep.objects.filter(pk=sweep.pk).update(error=str(err)[:2000])
        raise err from None
    record, played = resumed.record, resumed.played
    with transaction.atomic():
        if not Question.objects.filter(pk=q.pk, status=Question.Status.ANSWERED).update(
                status=Question.Status.RESUMED):
            transaction.set_rollback(True)
            return False
        Scenario.objects.filter(pk=sc.pk).update(
            **dict(zip(OUTCOME_COLUMNS, _outcome(record), strict=True)), status=record.status,
            timeline=record.timeline, effects=record.effects)
        if record.status == "waiting" and played.question is not None and played.durable is not None:
            Question.objects.bulk_create([_question(sweep.pk, sc.pk, played.question, played.durable)],
                                         ignore_conflicts=True)
        later = resumed.chunk(sc.config)
        if later is not None:
            _add_later_chunk(sweep, later)
    sweep_finalize(sweep_id=sweep.pk)
    return True


def _add_later_chunk(sweep: Sweep, chunk: agentsweep.Chunk) -> None:
    """In a resume's transaction: the twice scenarios at the restart points the answer let the once
    scenario reach, as a chunk of their own; counted in the sweep's total, which runs again until it
    is stored, and enqueued on commit. The resume that makes it wins its question's conditional
    UPDATE first, and the chunk's identity is unique: a redelivered resume makes nothing twice."""
    row, made = Chunk.objects.get_or_create(
        sweep_id=sweep.pk, config=chunk.config, first_point=chunk.first, second_from=chunk.second_from,
        defaults={"kind": chunk.kind[:40], "label": chunk.label[:300], "second_to": chunk.second_to,
                  "answers": chunk.answers})
    if not made:
        return
    Sweep.objects.filter(pk=sweep.pk).update(total_chunks=F("total_chunks") + 1)
    Sweep.objects.filter(pk=sweep.pk, status=Sweep.Status.WAITING).update(status=Sweep.Status.RUNNING)
    transaction.on_commit(lambda: _enqueue(sweep, chunk_ids=[row.pk]))


# --- timelines -------------------------------------------------------------------------------


def scenario_timeline(*, scenario_id: int) -> list[dict[str, Any]]:
    """The scenario's timeline: stored, or replayed with agentcore (deterministic) and stored.

    A waiting scenario's stored durable state is checked first: a corrupt one raises
    CheckpointError with a message fit for its page."""
    sc = Scenario.objects.select_related("sweep").get(pk=scenario_id)
    if sc.status == Scenario.Status.WAITING:
        pending = list(sc.questions.exclude(status=Question.Status.RESUMED))
        for q in pending:
            check_durable(q.durable, f"question {q.pk} (scenario {sc.pk})")
    if sc.timeline is not None:
        return sc.timeline
    timeline, effects = scenario_replay(sc)
    Scenario.objects.filter(pk=sc.pk, timeline__isnull=True).update(timeline=timeline, effects=effects)
    return timeline


def scenario_replay(sc: Scenario) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Play a stored scenario again with agentcore (its plan and any answers given): the
    timeline and the tracker's effects. Writes nothing."""
    def answers(**scenario: Any) -> dict[str, bool]:
        return {qid: bool(a) for qid, a in Question.objects.filter(answer__isnull=False, **scenario)
                .values_list("qid", "answer")}

    cfg = agent_config(sc.sweep, sc.config)
    once: dict[str, bool] = {}
    if sc.second_point and sc.sweep.person == Sweep.Person.QUEUE:  # its restart went on with these
        once = answers(scenario__sweep_id=sc.sweep_id, scenario__config=sc.config,
                       scenario__first_point=sc.first_point, scenario__second_point=0)
    played = agentsweep.replay(cfg, sc.first_point, sc.second_point or None, answers(scenario=sc), once)
    return played.timeline or [], played.effects or []
