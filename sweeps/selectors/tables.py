"""The sweep tables' reads: a sweep's table (final or live, with its waiting counts) and two
sweeps' tables compared."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db.models import Count, Q, Sum

from agentcore import COLUMNS, DEPTH_COLUMNS, TableRow, records
from agentcore.port.sampled import Rate
from sweeps import pagecache, targets
from sweeps.limits import COMPARE_CHOICES
from sweeps.models import Question, Scenario, Sweep

# Each table column (agentcore.records.COLUMNS, then thrice) as an aggregate over a configuration's
# scenario rows. A thrice scenario (depth 3) has a second point too: twice counts those without a third.
_TABLE_AGGREGATES = {
    "once": Count("id", filter=Q(second_point=0)),
    "twice": Count("id", filter=Q(second_point__gt=0, third_point=0)),
    "with_dups": Count("id", filter=Q(duplicates__gt=0)),
    "dups": Sum("duplicates"),
    "missing": Sum("missing"),
    "wrong": Sum("wrong"),
    "gave_up": Sum("gave_up"),
    "denied_ran": Sum("denied_ran"),
    "asks": Sum("asks"),
    "avoidable": Sum("avoidable"),
    "calls_plus": Sum("calls_plus"),
}
assert tuple(_TABLE_AGGREGATES) == COLUMNS, "one aggregate per column of agentcore's table"
_DEPTH_AGGREGATES = {"thrice": Count("id", filter=Q(third_point__gt=0))}
assert tuple(_DEPTH_AGGREGATES) == DEPTH_COLUMNS


def sweep_table(sweep: Sweep) -> list[TableRow]:
    """The chapter's table for a sweep, one row per configuration, from the stored scenario rows
    (agentcore's TableRow: thrice is counted at depth 3, 0 below it)."""
    aggregates = {**_TABLE_AGGREGATES, **(_DEPTH_AGGREGATES if sweep.depth == 3 else {})}
    agg = Scenario.objects.filter(sweep=sweep).values("config").annotate(**aggregates)
    by_config = {a["config"]: a for a in agg}
    rows = [
        TableRow(cfg["name"], **{c: by_config.get(i, {}).get(c) or 0 for c in aggregates})
        for i, cfg in enumerate(sweep.configs)
    ]
    return _merged_passes(sweep.configs, rows)


def row_configs(configs: Sequence[dict[str, Any]]) -> list[list[int]]:
    """The configurations behind each table row, in order: one each, but a sampled target's passes
    (configurations of one target design and name: sweeps.targets) share one row."""
    groups: list[list[int]] = []
    seen: dict[tuple[str, str], int] = {}
    for i, cfg in enumerate(configs):
        key = (cfg["design"], cfg["name"])
        if targets.is_target(cfg) and key in seen:
            groups[seen[key]].append(i)
            continue
        seen[key] = len(groups)
        groups.append([i])
    return groups


def _merged_passes(configs: Sequence[dict[str, Any]], rows: list[TableRow]) -> list[TableRow]:
    """A sampled target's passes as one row, their counts summed: the row of the sample, never one
    pass's count shown as exact."""
    out = []
    for group in row_configs(configs):
        first = rows[group[0]]
        out.append(
            TableRow(
                first.name, **{c: sum(getattr(rows[i], c) or 0 for i in group) for c in (*COLUMNS, *DEPTH_COLUMNS)}
            )
            if len(group) > 1
            else first
        )
    return out


def sampled_rates(sweep: Sweep) -> list[dict[str, Any]]:
    """Each sampled target's row (sweeps.targets) as rates with their 95% Wilson intervals:
    [{"name", "samples", "scenarios", "rates": [text, ...]}] (none for a sweep of exact rows)."""
    passes: dict[str, list[int]] = {}
    for i, cfg in enumerate(sweep.configs):
        if targets.is_target(cfg) and "[sampled" in cfg["name"]:
            passes.setdefault(cfg["name"], []).append(i)
    out = []
    for name, indexes in passes.items():
        agg = Scenario.objects.filter(sweep=sweep, config__in=indexes).aggregate(
            n=Count("id"),
            dups=Count("id", filter=Q(duplicates__gt=0)),
            missing=Count("id", filter=Q(missing__gt=0)),
            wrong=Count("id", filter=Q(wrong__gt=0)),
        )
        if not agg["n"]:
            continue
        what = (("with duplicates", "dups"), ("with missing effects", "missing"), ("with wrong effects", "wrong"))
        out.append(
            {
                "name": name,
                "samples": len(indexes),
                "scenarios": agg["n"],
                "rates": [Rate(label, agg[key], agg["n"]).text() for label, key in what],
            }
        )
    return out


def table_columns(*sweeps: Sweep) -> tuple[str, ...]:
    """The columns the pages show for these sweeps' tables: agentcore's COLUMNS, with thrice after
    twice when one of them has depth 3 (agentcore.records.columns shows it when a row has some; a
    page shows it from the start, so that the live poll has its cells to fill)."""
    return records.columns(thrice=any(s.depth == 3 for s in sweeps))


def sweep_table_rows(sweep: Sweep) -> list[TableRow]:
    """The table: the finalize step's cached copy when there is one, else aggregated now."""
    if sweep.table:
        return [TableRow(**r) for r in sweep.table]
    return sweep_table(sweep)


def waiting_by_config(sweep: Sweep) -> dict[int, int]:
    """How many scenarios of each configuration wait for a person. A waiting scenario has exactly
    one question not resumed (open, or answered and on its way to a worker), so this reads the
    questions (hundreds of rows), not the scenario rows (whose status no index covers)."""
    return dict(
        Question.objects.filter(sweep=sweep)
        .exclude(status=Question.Status.RESUMED)
        .order_by()
        .values("scenario__config")
        .annotate(n=Count("id"))
        .values_list("scenario__config", "n")
    )


# The columns an answer can still change: a waiting scenario has not made its calls or its effects
# yet (its calls+ is negative, its effects missing), and its restart's later points are not crashed.
ANSWER_DEPENDENT = frozenset(COLUMNS + DEPTH_COLUMNS) - {"once"}


def sweep_table_live(sweep: Sweep) -> dict[str, Any]:
    """The table as the sweep page draws it and its progress poll sends it:
    {"partial", "waiting", "rows": [{"name", "waiting", "values": {column: number or None}}]}, the
    columns table_columns's.

    Until the sweep is done the table is partial (its counts grow as chunks are stored). A row
    with scenarios waiting for an answer has None for each column an answer can change: a number
    that is not final is not shown as one. Once per version of the rows (sweeps.pagecache)."""
    return pagecache.cached(sweep, "table", None, lambda: _table_live(sweep))


def _table_live(sweep: Sweep) -> dict[str, Any]:
    rows = sweep_table_rows(sweep)
    waiting = {} if sweep.status == Sweep.Status.DONE else waiting_by_config(sweep)
    return {
        "partial": sweep.status != Sweep.Status.DONE,
        "waiting": sum(waiting.values()),
        "rows": [
            {
                "name": row.name,
                "waiting": waiting.get(i, 0),
                "values": {
                    c: None if waiting.get(i) and c in ANSWER_DEPENDENT else getattr(row, c)
                    for c in table_columns(sweep)
                },
            }
            for i, row in enumerate(rows)
        ],
    }


def compare_tables(
    rows_a: Sequence[TableRow], rows_b: Sequence[TableRow], columns: Sequence[str] = COLUMNS
) -> list[dict[str, Any]]:
    """Two tables' rows matched by configuration name (the k-th row of a name in A with the k-th of
    that name in B): A's rows in A's order, then the rows only B has, in B's order. Each:
    {"name", "a": TableRow or None, "b": TableRow or None, "changed": bool,
     "cells": [{"column", "a", "b", "diff" (b - a, None unless both are numbers), "changed"}, ...]}
    in `columns` order. A row in only one table is "changed" (and its cells' other side is None)."""

    def keyed(rows: Sequence[TableRow]) -> list[tuple[tuple[str, int], TableRow]]:
        seen: dict[str, int] = {}
        out = []
        for r in rows:
            seen[r.name] = seen.get(r.name, 0) + 1
            out.append(((r.name, seen[r.name]), r))
        return out

    a_rows, b_rows = keyed(rows_a), keyed(rows_b)
    b_by_key = dict(b_rows)
    pairs = [(a, b_by_key.get(k)) for k, a in a_rows]
    a_keys = {k for k, _ in a_rows}
    pairs += [(None, b) for k, b in b_rows if k not in a_keys]
    out = []
    for a, b in pairs:
        cells = []
        for col in columns:
            va, vb = getattr(a, col, None), getattr(b, col, None)
            both = isinstance(va, int) and isinstance(vb, int)
            # A number not final yet (None in a row both tables have) is no difference.
            cells.append(
                {
                    "column": col,
                    "a": va,
                    "b": vb,
                    "diff": vb - va if both else None,
                    "changed": va != vb and (both or a is None or b is None),
                }
            )
        out.append(
            {
                "name": (a or b).name,
                "a": a,
                "b": b,
                "cells": cells,
                "changed": a is None or b is None or any(c["changed"] for c in cells),
            }
        )
    return out


def _final_rows(sweep: Sweep) -> list[TableRow]:
    """The table's rows with None for each number an answer can still change (see sweep_table_live)."""
    return [TableRow(r["name"], **r["values"]) for r in sweep_table_live(sweep)["rows"]]


def sweep_compare(a: Sweep, b: Sweep) -> list[dict[str, Any]]:
    """The two sweeps' tables side by side, matched by configuration name (see compare_tables), in
    table_columns(a, b); a number that is not final yet (scenarios wait for answers) is None, never
    compared."""
    return compare_tables(_final_rows(a), _final_rows(b), table_columns(a, b))


def same_job(a: Sweep, b: Sweep) -> bool:
    """Whether the two sweeps ran the very same job file (its JSON text)."""
    sources = dict(Sweep.objects.filter(pk__in=[a.pk, b.pk]).values_list("pk", "job_source"))
    return sources.get(a.pk) == sources.get(b.pk)


def compare_choices(also: Sequence[int] = (), limit: int = COMPARE_CHOICES) -> list[tuple[int, str]]:
    """The latest sweeps and those of `also`, (ID, a short description), for the compare page's selects."""
    fields = ("id", "name", "job_name", "status")
    rows = list(Sweep.objects.order_by("-created_at", "-id").values_list(*fields)[:limit])
    listed = {r[0] for r in rows}
    if any(pk not in listed for pk in also):
        rows += list(Sweep.objects.filter(pk__in=[pk for pk in also if pk not in listed]).values_list(*fields))
    return [(pk, f"{pk}: {name or job}, {status}") for pk, name, job, status in rows]
