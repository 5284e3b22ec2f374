"""The dashboard's audit (agentcore.harness.audit): launching one, running its units, finishing, recovering.

Rules:
- The judging, counting and witness choice are agentcore's (harness.audit's sweep_unit and
  shortest, checker.judge.tally, checker.render.verdict, checker.witness.link): this module only
  stores and reads them. Every cell is swept (the CLI's `every=True`), so the verdicts equal the
  CLI's and the table is whole.
- A unit (one world, design, tracker mode over every variant) is claimed (an attempt counted) by a
  conditional UPDATE of an unstored unit and stored by a conditional UPDATE `... WHERE stored = false`:
  a redelivered or raced unit stores once, a stored one is a no-op. Work happens outside transactions.
- "Done" is read from the database: every unit stored. The finish (idempotent: running -> done once)
  replays the candidates of each broken subject's first breaking world to find its witness, once;
  a witness the witness page would refuse for its work (WITNESS_STEPS) is stored without its link.
- Lost messages are found as a sweep's are. A unit is leased as a chunk is (workqueue/leases.py):
  its claim takes the lease, its store and a resume end it, and the watchdog's leader queues again,
  ahead of the queue, the units whose lease ran out with their worker's (a whole worker killed:
  workqueue/watchdog.py's `audit_units_requeue_lapsed`, within seconds), and those whose message was
  lost before any lease named it; publishing units is the queue's (workqueue/publish.py's
  `audit_units_enqueue`). `audits_resume_stalled` (the stall watchdog, and
  `manage.py audit --wait`) queues again the unstored units of a running audit that stored nothing
  and had no unit under a lease for a while, when the task queue is empty (a broker restarted
  empty). A unit that keeps failing fails its audit after MAX_CHUNK_ATTEMPTS.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import Count, F, Max, Q
from django.utils import timezone

import agentcore as agentaudit
from agentcore import MODES, ConfigError, JobError, parse_job
from sweeps import cost, replay, selectors
from sweeps.configs import check, design
from sweeps.errors import BadRequest
from sweeps.limits import ERROR_CHARS, MAX_CHUNK_ATTEMPTS, MAX_JOB_BYTES
from sweeps.models import Audit, AuditUnit, take
from sweeps.services import recovery
from sweeps.workqueue import leases, messages, publish, watchdog

log = logging.getLogger(__name__)


def _job(job_source: str, source_name: str = "the job") -> Any:
    try:
        return parse_job(job_source, source_name)
    except JobError as e:
        raise BadRequest(str(e)) from e


def audit_create(
    *,
    user: Any,
    job_source: str,
    designs: list[str],
    trackers: list[str],
    worlds: list[str] | None = None,
    source_name: str = "the job",
) -> Audit:
    """Check and store an audit and its units, and enqueue the units on commit. Raises
    BadRequest (nothing stored) for a bad job, design, tracker mode or world model."""
    check(
        isinstance(job_source, str) and 0 < len(job_source.encode()) <= MAX_JOB_BYTES,
        f"the job must be JSON text of at most {MAX_JOB_BYTES} bytes",
    )
    job = _job(job_source, source_name)
    check(bool(designs), "choose at least one design")
    check(bool(trackers), "choose at least one tracker mode")
    for name in designs:
        try:
            design(name)
        except ConfigError as e:
            raise BadRequest(str(e)) from e
    bad = [t for t in trackers if t not in MODES]
    check(not bad, f"unknown tracker mode {', '.join(map(repr, bad))} (choose from {', '.join(MODES)})")
    names = [w.name for w in agentaudit.WORLDS] if worlds is None else list(worlds)
    check(bool(names), "choose at least one world model")
    try:
        chosen = {agentaudit.world(n).name for n in names}
    except ConfigError as e:
        raise BadRequest(str(e)) from e
    ordered = [w.name for w in agentaudit.WORLDS if w.name in chosen]
    designs, trackers = list(dict.fromkeys(designs)), list(dict.fromkeys(trackers))
    with transaction.atomic():
        a = Audit.objects.create(
            job_name=job.name,
            job_source=job_source,
            designs=designs,
            trackers=trackers,
            worlds=ordered,
            created_by=user if getattr(user, "is_authenticated", False) else None,
        )
        units = AuditUnit.objects.bulk_create(
            [AuditUnit(audit=a, world=w, design=d, tracker=t) for w in ordered for d in designs for t in trackers]
        )
        ids = [u.pk for u in units]
        transaction.on_commit(lambda: publish.audit_units_enqueue(a, ids))
    return a


def _candidates(cell: agentaudit.Cell) -> list[dict[str, Any]]:
    return [
        {"promise": -p, "seen": -s, "variant": i, "record": r.to_dict()}
        for p, s, i, r in sorted(cell.candidates, reverse=True)
    ]


def audit_unit_run(*, unit_id: int) -> bool:
    """Sweep one unit and store its counts and candidates; False (a no-op) if it is stored already,
    gone, or its audit is not running. A unit past MAX_CHUNK_ATTEMPTS fails its audit."""
    claimed = AuditUnit.objects.filter(pk=unit_id, stored=False, audit__status=Audit.Status.RUNNING)
    if not claimed.update(
        attempts=F("attempts") + 1, holder=leases.HOLDER, lease_until=leases.lease_until(), received=messages.receipt()
    ):
        return False
    unit = AuditUnit.objects.select_related("audit").get(pk=unit_id)
    if unit.attempts > MAX_CHUNK_ATTEMPTS:
        audit_failed(
            audit_id=unit.audit_id,
            error=f"unit {unit.world}, {unit.design}, {unit.tracker}: {unit.attempts - 1} attempts did not finish",
        )
        return False
    made, _ = agentaudit.variants(_job(unit.audit.job_source))
    cell = agentaudit.sweep_unit(made, design(unit.design), unit.tracker, agentaudit.world(unit.world))
    with transaction.atomic():
        won = AuditUnit.objects.filter(pk=unit_id, stored=False).update(
            stored=True,
            scenarios=cell.scenarios,
            expected=cell.expected,
            breaks=cell.breaks,
            ok=cell.scenarios - cell.expected - cell.breaks,
            skipped=cell.skipped,
            candidates=_candidates(cell),
            stored_at=timezone.now(),
            holder="",
            lease_until=None,
        )
    if won:
        audit_finish(audit_id=unit.audit_id)
    return bool(won)


def audit_failed(*, audit_id: int, error: str) -> bool:
    return take(Audit, audit_id, Audit.Status.FAILED, error=error[:ERROR_CHARS])


def audit_unit_failed(*, unit_id: int, error: str) -> bool:
    """A unit whose task failed past its retries fails its audit with the message (unless the unit
    is stored: a late failure of a redelivery); the audit's resume runs it again."""
    unit = AuditUnit.objects.filter(pk=unit_id, stored=False).values_list("audit_id", "world", "design", "tracker")
    row = unit.first()
    if row is None:
        return False
    audit_id, world, design_name, tracker = row
    return audit_failed(audit_id=audit_id, error=f"unit {world}, {design_name}, {tracker}: {error}")


def _witness_link(wit: Any, cfg: Any) -> dict[str, str]:
    """The witness page's link, or where that page would refuse it for its work, no link but why
    (the page links only to what it shows)."""
    try:
        replay.witness_cost(cfg, wit.record.second_point)
    except cost.TooCostly as e:
        return {"link": "", "refused": " ".join(e.messages)}
    return {"link": wit.link}


def audit_finish(*, audit_id: int, site: str = "") -> bool:
    """If every unit is stored: find each broken subject's witness (replaying its first breaking
    world's candidates) and take the audit running -> done once. Whether it finished now."""
    a = Audit.objects.get(pk=audit_id)
    units = list(a.units.all())
    if a.status != Audit.Status.RUNNING or any(not u.stored for u in units):
        return False
    made, _ = agentaudit.variants(_job(a.job_source))
    names = [v.name for v in made]
    witnesses = {}
    for s in selectors.audit_subjects(a, units):
        if s.broken:
            w = agentaudit.world(s.broken)
            configs = agentaudit.unit_configs(made, s.design, s.tracker, w)
            wit = agentaudit.shortest(w, configs, names, s.cells[s.broken].candidates, site, a.pk)
            s.witness = wit
            witnesses[s.name] = {
                "world": wit.world,
                "variant": wit.variant,
                "record": wit.record.to_dict(),
                "events": len(wit.timeline),
                "needed": wit.needed,
                **_witness_link(wit, configs[names.index(wit.variant)]),
                "lines": agentaudit.witness_lines(wit),
            }
    return take(
        Audit,
        audit_id,
        Audit.Status.DONE,
        sources=[Audit.Status.RUNNING],
        witnesses=witnesses,
        finished_at=timezone.now(),
    )


def audit_resume(*, audit_id: int, manual: bool = True) -> int:
    """Enqueue again every unit not stored (a failed audit runs again, with a fresh bound of
    attempts); finishes an audit with every unit stored. Returns how many units were queued."""
    with transaction.atomic():
        a = Audit.objects.select_for_update().get(pk=audit_id)
        if a.status == Audit.Status.DONE or (not manual and a.status != Audit.Status.RUNNING):
            return 0
        ids = list(a.units.filter(stored=False).values_list("pk", flat=True))
        if ids:  # queued now: no lease to run out (a worker holding one renews it)
            leases.end(a.units.filter(pk__in=ids), **({"attempts": 0} if manual else {}))  # a fresh bound
        if a.status == Audit.Status.FAILED:
            take(Audit, audit_id, Audit.Status.RUNNING, sources=[Audit.Status.FAILED], error="")
        if ids:
            transaction.on_commit(lambda: publish.audit_units_enqueue(a, ids, fail=manual))
    if not ids:
        audit_finish(audit_id=audit_id)
    return len(ids)


_AUTO_RESUMED: dict[int, float] = {}


def audits_resume_stalled(*, stalled_for: float, audit_id: int | None = None) -> int:
    """The stall watchdog for audits (as recovery.sweeps_resume_stalled for sweeps): a running audit
    that stored no unit for `stalled_for` seconds (since its launch, its last stored unit or this
    process's last resume of it) and had no unit under a lease in that time gets its unstored units
    queued again, only when the task queue is empty; one with every unit stored is finished.
    Returns how many units were queued."""
    check(isinstance(stalled_for, int | float) and stalled_for > 0, "stalled_for must be a positive number")
    now, mono = timezone.now(), time.monotonic()
    cutoff = now - timedelta(seconds=stalled_for)
    rows = Audit.objects.filter(status=Audit.Status.RUNNING, created_at__lt=cutoff)
    if audit_id is not None:
        rows = rows.filter(pk=audit_id)
    stalled = []
    for pk, last, unstored, leased in rows.annotate(
        last=Max("units__stored_at"),
        unstored=Count("units", filter=Q(units__stored=False)),
        leased=Max("units__lease_until", filter=Q(units__stored=False)),
    ).values_list("pk", "last", "unstored", "leased"):
        # A lease live or ended within the period: a worker plays one of its units (a long one stores
        # nothing for a while) or its worker died just now (the lease rule's to queue again).
        if (
            mono - _AUTO_RESUMED.get(pk, -math.inf) < stalled_for
            or (last is not None and last >= cutoff)
            or (leased is not None and leased >= cutoff)
        ):
            continue
        if unstored:
            stalled.append(pk)
        else:
            audit_finish(audit_id=pk)
    if not stalled or watchdog.queued_messages() != 0:
        return 0
    n = 0
    for pk in stalled:
        try:
            n += audit_resume(audit_id=pk, manual=False)
        except Exception:  # noqa: BLE001 - the broker went away meanwhile: the next round tries again
            log.exception("audit %s: the stall watchdog could not queue its missing units", pk)
            continue
        _AUTO_RESUMED[pk] = mono
    return n


def audit_wait(audit_id: int, *, stalled_for: float, timeout: float | None, check_alive: Callable[[], None]) -> Audit:
    """Wait until the audit is done or failed, or `timeout` seconds have passed (`manage.py audit
    --wait`), running the watchdog's rules for audits as recovery.wait_for says; the audit as it is then."""
    return recovery.wait_for(
        lambda: Audit.objects.get(pk=audit_id),
        lambda a: a.status != Audit.Status.RUNNING,
        lambda: (
            watchdog.audit_units_requeue_lapsed()
            + watchdog.audit_units_requeue_lost()
            + audits_resume_stalled(stalled_for=stalled_for, audit_id=audit_id)
        ),
        stalled_for=stalled_for,
        timeout=timeout,
        check_alive=check_alive,
    )
