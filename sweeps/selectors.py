"""Every read the pages, exports and commands need. No writes here (those are in services.py)."""

from __future__ import annotations

from django.db.models import Count, Q, Sum

from agentcore.records import TableRow
from sweeps.models import Scenario, Sweep


def sweep_table(sweep: Sweep) -> list[TableRow]:
    """The chapter's table for a sweep, one row per configuration, from the stored scenario rows."""
    agg = (
        Scenario.objects.filter(sweep=sweep)
        .values("config")
        .annotate(
            once=Count("id", filter=Q(second_point=0)),
            twice=Count("id", filter=Q(second_point__gt=0)),
            with_dups=Count("id", filter=Q(duplicates__gt=0)),
            dups=Sum("duplicates"),
            missing=Sum("missing"),
            asks=Sum("asks"),
            calls_plus=Sum("calls_plus"),
        )
    )
    by_config = {a["config"]: a for a in agg}
    rows = []
    for i, cfg in enumerate(sweep.configs):
        a = by_config.get(i, {})
        rows.append(TableRow(cfg["name"], *(a.get(c) or 0 for c in
                                            ("once", "twice", "with_dups", "dups", "missing", "asks", "calls_plus"))))
    return rows
