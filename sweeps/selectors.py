"""Every read the pages, exports and commands need. No writes here (those are in sweeps/services/)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from django.core.paginator import Page, Paginator
from django.db.models import Count, F, Max, OuterRef, Q, QuerySet, Subquery, Sum
from django.utils import timezone

import agentcore as agentaudit
from agentcore import COLUMNS, DEPTH_COLUMNS, Job, ScenarioRecord, TableRow, parse_job, records
from sweeps import pagecache
from sweeps.configs import design
from sweeps.limits import (
    COMPARE_CHOICES,
    DEFAULT_RATE,
    ETA_MIN_SECONDS,
    ETA_MIN_SHARE,
    ETA_RANGE,
    ETA_WINDOW,
    EXPORT_PAGE_ROWS,
    RATE_SWEEPS,
    RESUME_OFFER_SECONDS,
)
from sweeps.models import Audit, AuditUnit, Chunk, Question, Scenario, Sweep
from sweeps.schema import LIST_FIELDS, SCENARIO_ORDER, row_fields

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
    return [TableRow(cfg["name"], **{c: by_config.get(i, {}).get(c) or 0 for c in aggregates})
            for i, cfg in enumerate(sweep.configs)]


def table_columns(*sweeps: Sweep) -> tuple[str, ...]:
    """The columns the pages show for these sweeps' tables: agentcore's COLUMNS, with thrice after
    twice when one of them has depth 3 (agentcore.records.columns shows it when a row has some; a
    page shows it from the start, so that the live poll has its cells to fill)."""
    return records.columns(thrice=any(s.depth == 3 for s in sweeps))


# --- pages, exports and charts ---------------------------------------------------------------

# Summed per heatmap cell and over a scenario list: the record's outcome counts, the chapter's first.
METRICS = ("duplicates", "asks", "calls_plus", "missing", "wrong", "gave_up", "denied_ran", "avoidable")


def sweep_list() -> QuerySet[Sweep]:
    """Sweeps, newest first, without the job text or cached table; with their stored chunk counts."""
    stored = Chunk.objects.filter(sweep=OuterRef("pk"), stored=True).order_by().values("sweep")
    return (Sweep.objects.defer("job_source", "table")
            .select_related("created_by")
            .annotate(chunks_stored=Subquery(stored.annotate(n=Count("id")).values("n")[:1])))


def measured_rate(*, depth: int, runs: int) -> tuple[float, int, str]:
    """Scenarios per second that finished sweeps here achieved, for the launch form's estimate:
    (rate, how many sweeps, which ones). The latest RATE_SWEEPS done sweeps with a scripted person
    (a queue sweep's time is the people's) of this depth and job runs (a scenario of 10 job runs costs
    about 3 times one of 1), else of this depth, else any; their scenarios over their seconds, launch
    to finish (a sweep cancelled and resumed counts its pause too). DEFAULT_RATE if none."""
    done = Sweep.objects.filter(status=Sweep.Status.DONE, person=Sweep.Person.SCRIPTED, finished_at__isnull=False)
    for qs, which in ((done.filter(depth=depth, runs=runs), f"depth {depth}, {runs} run{'s' * (runs != 1)}"),
                      (done.filter(depth=depth), f"depth {depth}"), (done, "any")):
        rows = list(qs.order_by("-finished_at").annotate(n=Sum("chunks__scenarios"))
                    .values_list("n", "created_at", "finished_at")[:RATE_SWEEPS])
        scenarios = sum(n or 0 for n, _, _ in rows)
        seconds = sum(max((end - start).total_seconds(), 0.001) for _, start, end in rows)
        if scenarios and seconds:
            return scenarios / seconds, len(rows), which
    return DEFAULT_RATE, 0, "default"


def sweep_contents(sweep: Sweep) -> dict[str, int]:
    """What deleting the sweep removes: its chunks, scenarios and questions, counted."""
    return {"chunks": Chunk.objects.filter(sweep=sweep).count(),
            "scenarios": Scenario.objects.filter(sweep=sweep).count(),
            "questions": Question.objects.filter(sweep=sweep).count()}


class SweepState(NamedTuple):
    status: str
    error: str
    chunks_stored: int


def sweep_state(sweep_id: int) -> SweepState:
    """A sweep's status, error and stored chunks, in two small reads (a command polls it)."""
    status, error = Sweep.objects.filter(pk=sweep_id).values_list("status", "error").get()
    return SweepState(status, error, Chunk.objects.filter(sweep_id=sweep_id, stored=True).count())


def sweep_get(sweep_id: int) -> Sweep:
    """One sweep (raises Sweep.DoesNotExist)."""
    return Sweep.objects.defer("job_source").select_related("created_by").get(pk=sweep_id)


def sweep_progress(sweep: Sweep, now: datetime | None = None) -> dict[str, Any]:
    """Chunks stored of the total, scenarios stored, rate (scenarios per second), ETA, and how long no
    chunk was stored, all read from the stored rows (their counts once per version of the rows:
    sweeps.pagecache)."""
    counts = pagecache.cached(sweep, "progress", None, lambda: _progress_counts(sweep))
    agg, scenarios, open_questions = counts["chunks"], counts["scenarios"], counts["open_questions"]
    total = max(sweep.total_chunks, agg["planned"])
    stored = agg["stored"]
    now = now or timezone.now()
    end = sweep.finished_at or (agg["last"] if stored >= total and agg["last"] else now)
    elapsed = max((end - sweep.created_at).total_seconds(), 0.0)
    rate = scenarios / elapsed if elapsed > 0 and scenarios else 0.0
    eta = _eta(sweep, elapsed, now) if 0 < stored < total and sweep.status == Sweep.Status.RUNNING else None
    idle = max((now - (agg["last"] or sweep.created_at)).total_seconds(), 0.0)
    return {
        "status": sweep.status, "error": sweep.error, "chunks_stored": stored, "total_chunks": total,
        "percent": round(100 * stored / total, 1) if total else 0.0, "scenarios": scenarios,
        "rate": round(rate, 1), "eta_seconds": eta and eta[1], "eta_range": eta and [eta[0], eta[2]],
        "elapsed_seconds": round(elapsed, 1), "open_questions": open_questions,
        "finished": sweep.status in (Sweep.Status.DONE, Sweep.Status.FAILED, Sweep.Status.CANCELLED),
        "idle_seconds": round(idle, 1),  # since the last chunk was stored (or the launch)
    }


def _progress_counts(sweep: Sweep) -> dict[str, Any]:
    """sweep_progress's reads: the chunks' counts and last store, the scenarios, the open questions."""
    return {"chunks": Chunk.objects.filter(sweep=sweep).aggregate(
                stored=Count("id", filter=Q(stored=True)), planned=Count("id"), last=Max("stored_at")),
            "scenarios": Scenario.objects.filter(sweep=sweep).count(),
            "open_questions": Question.objects.filter(sweep=sweep, status=Question.Status.OPEN).count()}


def _eta(sweep: Sweep, elapsed: float, now: datetime) -> tuple[float, float, float] | None:
    """(low, estimate, high) seconds left, or None while it is not stable yet: before 15 % of the work
    is stored and 3 s have passed, the workers' start and the first messages' round trips dominate
    (an early ETA said 964 s for a 399 s sweep). Shown as a range, ETA_RANGE times the estimate: on a
    3-run table (22 s, 2 workers) the estimate ran from 1.3 times the time left at 15 % to 0.7 times
    it near the end (the last messages finish one worker at a time).

    Work is weighed per chunk, not counted in chunks: at depth 2 a chunk holds one twice scenario per
    point its restart reaches, about n - f + 1 for first point f of a configuration of n points (1 per
    chunk at depth 1); at depth 3 as many thrice scenarios for each of those, about (n - f + 1)^2
    (taskqueue.chunk_cost, by which messages are dealt). Left = (weight left) / (weight stored in the
    last ETA_WINDOW seconds, or since the launch if that is shorter, per second)."""
    window = min(ETA_WINDOW, elapsed)
    recent = Q(stored=True, stored_at__gte=now - timedelta(seconds=window))
    squared = F("first_point") * F("first_point")
    # The first chunks only: a queue sweep's later chunks come with people's answers, not on a schedule.
    rows = (Chunk.objects.filter(sweep=sweep, second_from=0).order_by().values("config")
            .annotate(points=Max("first_point"), chunks=Count("id"), chunks_stored=Count("id", filter=Q(stored=True)),
                      firsts_stored=Sum("first_point", filter=Q(stored=True)), chunks_recent=Count("id", filter=recent),
                      firsts_recent=Sum("first_point", filter=recent),
                      squares_stored=Sum(squared, filter=Q(stored=True)), squares_recent=Sum(squared, filter=recent)))
    done = total = lately = 0
    for r in rows:
        n = r["points"]
        if sweep.depth == 3:  # sum of (n + 1 - f)^2 over the chunks' first points f
            total += n * (n + 1) * (2 * n + 1) // 6
            done += _squares(n, r["chunks_stored"], r["firsts_stored"], r["squares_stored"])
            lately += _squares(n, r["chunks_recent"], r["firsts_recent"], r["squares_recent"])
        elif sweep.depth == 2:
            total += n * (n + 1) // 2
            done += r["chunks_stored"] * (n + 1) - (r["firsts_stored"] or 0)
            lately += r["chunks_recent"] * (n + 1) - (r["firsts_recent"] or 0)
        else:
            total += r["chunks"]
            done += r["chunks_stored"]
            lately += r["chunks_recent"]
    if not total or not lately or done < ETA_MIN_SHARE * total or elapsed < ETA_MIN_SECONDS or done >= total:
        return None
    left = window * (total - done) / lately
    return round(left * ETA_RANGE[0], 1), round(left, 1), round(left * ETA_RANGE[1], 1)


def _squares(n: int, chunks: int, firsts: int | None, squares: int | None) -> int:
    """The sum of (n + 1 - f)^2 over `chunks` first points f whose sum is `firsts` and whose squares sum
    to `squares`."""
    return chunks * (n + 1) ** 2 - 2 * (n + 1) * (firsts or 0) + (squares or 0)


def sweep_table_rows(sweep: Sweep) -> list[TableRow]:
    """The table: the finalize step's cached copy when there is one, else aggregated now."""
    if sweep.table:
        return [TableRow(**r) for r in sweep.table]
    return sweep_table(sweep)


def waiting_by_config(sweep: Sweep) -> dict[int, int]:
    """How many scenarios of each configuration wait for a person. A waiting scenario has exactly
    one question not resumed (open, or answered and on its way to a worker), so this reads the
    questions (hundreds of rows), not the scenario rows (whose status no index covers)."""
    return dict(Question.objects.filter(sweep=sweep).exclude(status=Question.Status.RESUMED).order_by()
                .values("scenario__config").annotate(n=Count("id")).values_list("scenario__config", "n"))


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
    return {"partial": sweep.status != Sweep.Status.DONE, "waiting": sum(waiting.values()), "rows": [
        {"name": row.name, "waiting": waiting.get(i, 0),
         "values": {c: None if waiting.get(i) and c in ANSWER_DEPENDENT else getattr(row, c)
                    for c in table_columns(sweep)}}
        for i, row in enumerate(rows)]}


def compare_tables(rows_a: Sequence[TableRow], rows_b: Sequence[TableRow],
                   columns: Sequence[str] = COLUMNS) -> list[dict[str, Any]]:
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
            cells.append({"column": col, "a": va, "b": vb, "diff": vb - va if both else None,
                          "changed": va != vb and (both or a is None or b is None)})
        out.append({"name": (a or b).name, "a": a, "b": b, "cells": cells,
                    "changed": a is None or b is None or any(c["changed"] for c in cells)})
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


def heatmap_config_first(sweep: Sweep) -> list[dict[str, Any]]:
    """One cell per (config, first point): every metric summed over its scenarios, in one GROUP BY
    (the page switches metrics without asking again): {"config", "first_point", "duplicates", ...}."""
    rows = (Scenario.objects.filter(sweep=sweep).order_by().values("config", "first_point")
            .annotate(**{f"sum_{m}": Sum(m) for m in METRICS})  # an annotation cannot take a field's name
            .order_by("config", "first_point"))
    return [{"config": r["config"], "first_point": r["first_point"], **{m: r[f"sum_{m}"] for m in METRICS}}
            for r in rows]


def heatmap_first_second(sweep: Sweep, config: int) -> list[dict[str, Any]]:
    """One cell per twice scenario of one config: {"id", "first_point", "second_point", "second_label"}
    and every metric's value."""
    fields = ("id", "first_point", "second_point", "second_label", *METRICS)
    qs = Scenario.objects.filter(sweep=sweep, config=config, second_point__gt=0, third_point=0)
    return [dict(zip(fields, row, strict=True)) for row in
            qs.order_by("first_point", "second_point").values_list(*fields)]


def heatmap_third(sweep: Sweep, config: int, first: int, second: int) -> list[dict[str, Any]]:
    """One cell per thrice scenario of one (first, second) pair of a config: {"id", "third_point",
    "third_label"} and every metric's value, by third point (the identity's index: a few hundred
    rows at most)."""
    fields = ("id", "third_point", "third_label", *METRICS)
    qs = Scenario.objects.filter(sweep=sweep, config=config, first_point=first, second_point=second,
                                 third_point__gt=0)
    return [dict(zip(fields, row, strict=True)) for row in qs.order_by("third_point").values_list(*fields)]


def point_labels(sweep: Sweep) -> dict[tuple[int, int], str]:
    """(config, first point) -> the first crash point's label, from the chunks (or the once rows if none)."""
    rows = list(Chunk.objects.filter(sweep=sweep).order_by().values_list("config", "first_point", "label"))
    if not rows:
        rows = list(Scenario.objects.filter(sweep=sweep, second_point=0).order_by()
                    .values_list("config", "first_point", "first_label"))
    return {(c, f): label for c, f, label in rows}


def scenario_filter(sweep: Sweep, filters: Mapping[str, Any]) -> QuerySet[Scenario]:
    """A sweep's scenarios narrowed by the list's filters (None or "" means no filter)."""
    qs = Scenario.objects.filter(sweep=sweep)
    exact = {k: filters.get(k) for k in ("config", "design", "tracker", "first_kind", "first_point",
                                         "second_point", "third_point", "status")}
    qs = qs.filter(**{k: v for k, v in exact.items() if v not in (None, "")})
    # A configuration has one design and one tracker mode: saying which configurations match lets
    # the database walk the (sweep, config, ...) index instead of every row of the sweep.
    wanted = {k: exact[k] for k in ("design", "tracker") if exact[k] not in (None, "")}
    if wanted:
        qs = qs.filter(config__in=[i for i, c in enumerate(sweep.configs)
                                   if all(c.get(k) == v for k, v in wanted.items())])
    flags = {"twice": Q(second_point__gt=0), "thrice": Q(third_point__gt=0), "has_dups": Q(duplicates__gt=0),
             "asked": Q(asks__gt=0),
             "missing": Q(missing__gt=0), "extra_calls": ~Q(calls_plus=0), "has_wrong": Q(wrong__gt=0),
             "gave_up": Q(gave_up__gt=0), "denied_ran": Q(denied_ran__gt=0), "avoidable": Q(avoidable__gt=0)}
    for name, cond in flags.items():
        v = filters.get(name)
        if v is True:
            qs = qs.filter(cond)
        elif v is False:
            qs = qs.exclude(cond)
    return qs


def scenario_totals(sweep: Sweep, filters: Mapping[str, Any]) -> dict[str, int]:
    """How many scenarios the filters keep and each metric summed over them, in one aggregate query
    (once per version of the rows: sweeps.pagecache): {"count", and each of METRICS} (0 when none match)."""
    def totals() -> dict[str, int]:
        agg = scenario_filter(sweep, filters).order_by().aggregate(count=Count("id"), **{m: Sum(m) for m in METRICS})
        return {k: v or 0 for k, v in agg.items()}

    return pagecache.cached(sweep, "totals", dict(filters), totals)


def scenario_page(sweep: Sweep, filters: Mapping[str, Any], page: int,
                  per_page: int = 50, count: int | None = None) -> tuple[Page, list[Scenario]]:
    """One page of the filtered list (ordered as stored), without the JSON columns.

    The paginator walks IDs only (an index-only scan for OFFSET), then the page's rows are read by ID.
    `count`, when the caller has it already (scenario_totals), spares the paginator its COUNT query.
    Raises django.core.paginator.InvalidPage for a page out of range.
    """
    pg = scenario_pager(sweep, filters, page, per_page, count)
    return pg, page_scenarios(pg)


def scenario_pager(sweep: Sweep, filters: Mapping[str, Any], page: int,
                   per_page: int = 50, count: int | None = None) -> Page:
    """scenario_page's page, its rows not read yet (with `count` given, no query at all); raises
    django.core.paginator.InvalidPage for a page out of range."""
    ids = scenario_filter(sweep, filters).order_by(*SCENARIO_ORDER).values_list("id", flat=True)
    paginator = Paginator(ids, per_page)
    if count is not None:
        paginator.count = count  # a cached_property: set, it is not computed again
    return paginator.page(page)


def page_scenarios(pg: Page) -> list[Scenario]:
    """The scenarios of a scenario_pager page, in its order."""
    by_id = {s.id: s for s in Scenario.objects.filter(id__in=list(pg.object_list)).only(*LIST_FIELDS)}
    return [by_id[i] for i in pg.object_list if i in by_id]


def scenario_export_rows(sweep: Sweep, filters: Mapping[str, Any],
                         chunk_size: int = EXPORT_PAGE_ROWS) -> Iterator[dict[str, Any]]:
    """The filtered scenario rows as agentcore record dicts (without timeline/effects, see
    sweeps.schema.row_fields), streamed, after their sweep, configuration and its name.

    Read in pages of `chunk_size` rows, each its own query for the rows after the last one read in
    SCENARIO_ORDER (the identity, unique in a sweep: a keyset walking its index). No read stays open
    between pages: the caller may write between them (on SQLite a connection holding an old read
    cannot write once another has), and a running sweep's rows stored meanwhile after the place
    reached are in the export, each row once."""
    names = sweep.configs
    base = scenario_filter(sweep, filters).order_by(*SCENARIO_ORDER).values_list(*LIST_FIELDS[2:])
    table = Scenario._meta.db_table
    after = "({}) > (%s, %s, %s, %s)".format(", ".join(f'"{table}"."{c}"' for c in SCENARIO_ORDER))
    last: list[Any] | None = None
    while True:
        page = list((base if last is None else base.extra(where=[after], params=last))[:chunk_size])
        for row in page:
            d = dict(zip(LIST_FIELDS[2:], row, strict=True))
            cfg = d["config"]
            yield {"sweep": sweep.pk, "config": cfg,
                   "config_name": names[cfg]["name"] if 0 <= cfg < len(names) else "", **row_fields(d)}
        if len(page) < chunk_size:
            return
        d = dict(zip(LIST_FIELDS[2:], page[-1], strict=True))
        last = [d[c] for c in SCENARIO_ORDER]


def scenario_get(scenario_id: int) -> Scenario:
    """One scenario with its sweep (raises Scenario.DoesNotExist)."""
    return Scenario.objects.select_related("sweep").defer("sweep__job_source", "sweep__table").get(pk=scenario_id)


def question_list(sweep: Sweep | None, status: str, avoidable: bool | None = None) -> QuerySet[Question]:
    """Questions of one sweep (or all), open or answered, with who answered and the scenario's identity;
    only the avoidable ones (a key or a lookup would have settled them) or only the necessary ones
    when `avoidable` says which."""
    qs = Question.objects.all() if sweep is None else Question.objects.filter(sweep=sweep)
    if avoidable is not None:
        qs = qs.filter(avoidable=avoidable)
    if status == "open":
        qs = qs.filter(status=Question.Status.OPEN).order_by("created_at", "id")
    else:
        qs = qs.exclude(status=Question.Status.OPEN).order_by("-answered_at", "-id")
    return (qs.select_related("answered_by", "scenario", "sweep").defer(
        "durable", "scenario__timeline", "scenario__effects", "sweep__job_source", "sweep__table"))


def question_durables(question_ids: list[int]) -> dict[int, Any]:
    """The stored durable state of these questions (to check before offering an answer)."""
    return dict(Question.objects.filter(pk__in=question_ids).values_list("pk", "durable"))


def question_counts(sweep: Sweep | None, avoidable: bool | None = None) -> dict[str, int]:
    """Open, answered and rightly answered questions of one sweep (or all), of the avoidable or the
    necessary ones when `avoidable` says which."""
    qs = Question.objects.all() if sweep is None else Question.objects.filter(sweep=sweep)
    if avoidable is not None:
        qs = qs.filter(avoidable=avoidable)
    agg = qs.aggregate(open=Count("id", filter=Q(status=Question.Status.OPEN)),
                       answered=Count("id", filter=~Q(status=Question.Status.OPEN)),
                       right=Count("id", filter=~Q(status=Question.Status.OPEN) & Q(answer=F("truth"))))
    return {k: v or 0 for k, v in agg.items()}


def _cell(u: AuditUnit) -> agentaudit.Cell:
    return agentaudit.Cell(u.scenarios, u.breaks, u.expected, u.skipped,
                           [(-c["promise"], -c["seen"], c["variant"], ScenarioRecord.from_dict(c["record"]))
                            for c in u.candidates])


def audit_subjects(a: Audit, units: list[AuditUnit]) -> list[agentaudit.Subject]:
    """The audit's stored units as agentcore.audit Subjects (cells by world, first breaking world),
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
    return Audit.objects.annotate(units_stored=Count("units", filter=Q(units__stored=True)),
                                  units_total=Count("units")).order_by("-created_at")


def audit_job(audit_id: int) -> Job:
    """The job an audit swept, parsed from its stored text (Audit.DoesNotExist if there is none)."""
    a = Audit.objects.only("job_name", "job_source").get(pk=audit_id)
    return parse_job(a.job_source, a.job_name)


def audit_report(audit_id: int) -> dict[str, Any]:
    """An audit's page: progress, the design x world table (the CLI's Markdown cells) and one verdict
    line per (design, tracker mode) as agentcore.audit.verdict prints it, with its witness."""
    a = Audit.objects.get(pk=audit_id)
    units = list(a.units.all())
    subs = audit_subjects(a, units)
    stored = sum(u.stored for u in units)
    rows = [{"name": s.name, "cells": [s.cells[w].text if w in s.cells else "…" for w in a.worlds],
             "verdict": agentaudit.verdict(s) if stored == len(units) else "",
             "witness": (a.witnesses or {}).get(s.name)} for s in subs]
    last = max([u.stored_at for u in units if u.stored_at] + [a.created_at])
    idle = (timezone.now() - last).total_seconds()
    resumable = a.status == Audit.Status.FAILED or (
        a.status == Audit.Status.RUNNING and idle >= RESUME_OFFER_SECONDS)
    return {"audit": a, "stored": stored, "total": len(units), "worlds": a.worlds, "rows": rows,
            "scenarios": sum(u.scenarios for u in units), "resumable": resumable}
