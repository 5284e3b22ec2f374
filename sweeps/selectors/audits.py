"""An audit's reads: its list, its job and its report from the stored units."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Q, QuerySet
from django.utils import timezone

import agentcore as agentaudit
from agentcore import Job, ScenarioRecord, parse_job
from sweeps.configs import design
from sweeps.limits import RESUME_OFFER_SECONDS
from sweeps.models import Audit, AuditUnit


def _cell(u: AuditUnit) -> agentaudit.Cell:
    return agentaudit.Cell(
        u.scenarios,
        u.breaks,
        u.expected,
        u.skipped,
        [(-c["promise"], -c["seen"], c["variant"], ScenarioRecord.from_dict(c["record"])) for c in u.candidates],
    )


def audit_subjects(a: Audit, units: list[AuditUnit]) -> list[agentaudit.Subject]:
    """The audit's stored units as agentcore.checker.judge Subjects (cells by world, first breaking world),
    in the order of its designs and tracker modes; no witness."""
    by = {(u.design, u.tracker, u.world): u for u in units}
    out = []
    for d in a.designs:
        for t in a.trackers:
            s = agentaudit.Subject(design(d), t)
            for w in a.worlds:
                u = by.get((d, t, w))
                if u is not None and u.stored:
                    s.cells[w] = _cell(u)
                    if s.cells[w].breaks and not s.broken:
                        s.broken = w
            out.append(s)
    return out


def audit_list() -> QuerySet[Audit]:
    """Audits, newest first, with their units stored and in all."""
    return Audit.objects.annotate(
        units_stored=Count("units", filter=Q(units__stored=True)), units_total=Count("units")
    ).order_by("-created_at")


def audit_job(audit_id: int) -> Job:
    """The job an audit swept, parsed from its stored text (Audit.DoesNotExist if there is none)."""
    a = Audit.objects.only("job_name", "job_source").get(pk=audit_id)
    return parse_job(a.job_source, a.job_name)


def audit_report(audit_id: int) -> dict[str, Any]:
    """An audit's page: progress, the design x world table (the CLI's Markdown cells) and one verdict
    line per (design, tracker mode) as agentcore.checker.render.verdict prints it, with its witness."""
    a = Audit.objects.get(pk=audit_id)
    units = list(a.units.all())
    subs = audit_subjects(a, units)
    stored = sum(u.stored for u in units)
    rows = [
        {
            "name": s.name,
            "cells": [s.cells[w].text if w in s.cells else "…" for w in a.worlds],
            "verdict": agentaudit.verdict(s) if stored == len(units) else "",
            "witness": (a.witnesses or {}).get(s.name),
        }
        for s in subs
    ]
    last = max([u.stored_at for u in units if u.stored_at] + [a.created_at])
    idle = (timezone.now() - last).total_seconds()
    resumable = a.status == Audit.Status.FAILED or (a.status == Audit.Status.RUNNING and idle >= RESUME_OFFER_SECONDS)
    return {
        "audit": a,
        "stored": stored,
        "total": len(units),
        "worlds": a.worlds,
        "rows": rows,
        "scenarios": sum(u.scenarios for u in units),
        "resumable": resumable,
    }
