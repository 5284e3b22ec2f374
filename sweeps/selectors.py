"""Every read the pages, exports and commands need. No writes here (those are in services.py)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import Count, F, Max, OuterRef, Q, QuerySet, Subquery, Sum
from django.utils import timezone

from agentcore.records import TableRow
from sweeps.models import Chunk, Question, Scenario, Sweep


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


# --- pages, exports and charts ---------------------------------------------------------------

METRICS = ("duplicates", "asks", "calls_plus", "missing")
# The columns a scenario list or export reads: never the JSON columns (timeline, effects).
LIST_FIELDS = ("id", "sweep_id", "config", "design", "tracker", "job", "runs", "first_point", "first_kind",
               "first_label", "second_point", "second_kind", "second_label", "duplicates", "missing", "asks",
               "approvals", "model_calls", "calls_plus", "status")
# An export row's fields: the agentcore record's, in its order (second_* are None in a once scenario).
RECORD_FIELDS = ("job", "design", "tracker", "runs", "first_point", "first_kind", "first_label", "second_point",
                 "second_kind", "second_label", "duplicates", "missing", "asks", "approvals", "model_calls",
                 "calls_plus", "status")


def sweep_list() -> QuerySet[Sweep]:
    """Sweeps, newest first, without the job text or cached table; with their stored chunk counts."""
    stored = Chunk.objects.filter(sweep=OuterRef("pk"), stored=True).order_by().values("sweep")
    return (Sweep.objects.defer("job_source", "table")
            .select_related("created_by")
            .annotate(chunks_stored=Subquery(stored.annotate(n=Count("id")).values("n")[:1])))


def sweep_get(sweep_id: int) -> Sweep:
    """One sweep (raises Sweep.DoesNotExist)."""
    return Sweep.objects.defer("job_source").select_related("created_by").get(pk=sweep_id)


def sweep_progress(sweep: Sweep, now: datetime | None = None) -> dict[str, Any]:
    """Chunks stored of the total, scenarios stored, rate (scenarios per second), ETA, and how long no
    chunk was stored, all read from the stored rows."""
    agg = Chunk.objects.filter(sweep=sweep).aggregate(
        stored=Count("id", filter=Q(stored=True)), planned=Count("id"), last=Max("stored_at"))
    scenarios = Scenario.objects.filter(sweep=sweep).count()
    total = max(sweep.total_chunks, agg["planned"])
    stored = agg["stored"]
    now = now or timezone.now()
    end = sweep.finished_at or (agg["last"] if stored >= total and agg["last"] else now)
    elapsed = max((end - sweep.created_at).total_seconds(), 0.0)
    rate = scenarios / elapsed if elapsed > 0 and scenarios else 0.0
    eta = None
    if 0 < stored < total and elapsed > 0:
        eta = round(elapsed / stored * (total - stored), 1)
    open_questions = Question.objects.filter(sweep=sweep, status=Question.Status.OPEN).count()
    idle = max((now - (agg["last"] or sweep.created_at)).total_seconds(), 0.0)
    return {
        "status": sweep.status, "error": sweep.error, "chunks_stored": stored, "total_chunks": total,
        "percent": round(100 * stored / total, 1) if total else 0.0, "scenarios": scenarios,
        "rate": round(rate, 1), "eta_seconds": eta, "elapsed_seconds": round(elapsed, 1),
        "open_questions": open_questions, "finished": sweep.status in (Sweep.Status.DONE, Sweep.Status.FAILED),
        "idle_seconds": round(idle, 1),  # since the last chunk was stored (or the launch)
    }


def sweep_table_rows(sweep: Sweep) -> list[TableRow]:
    """The table: the finalize step's cached copy when there is one, else aggregated now."""
    if sweep.table:
        return [TableRow(**r) for r in sweep.table]
    return sweep_table(sweep)


def heatmap_config_first(sweep: Sweep, metric: str) -> list[dict[str, Any]]:
    """One cell per (config, first point): the metric summed over its scenarios (GROUP BY in SQL)."""
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}")
    return list(Scenario.objects.filter(sweep=sweep).order_by().values("config", "first_point")
                .annotate(value=Sum(metric)).order_by("config", "first_point"))


def heatmap_first_second(sweep: Sweep, config: int, metric: str) -> list[tuple[int, int, int, str]]:
    """One cell per twice scenario of one config: (first point, second point, metric, second label)."""
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}")
    return list(Scenario.objects.filter(sweep=sweep, config=config, second_point__gt=0).order_by()
                .values_list("first_point", "second_point", metric, "second_label")
                .order_by("first_point", "second_point"))


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
                                         "second_point", "status")}
    qs = qs.filter(**{k: v for k, v in exact.items() if v not in (None, "")})
    # A configuration has one design and one tracker mode: saying which configurations match lets
    # the database walk the (sweep, config, ...) index instead of every row of the sweep.
    wanted = {k: exact[k] for k in ("design", "tracker") if exact[k] not in (None, "")}
    if wanted:
        qs = qs.filter(config__in=[i for i, c in enumerate(sweep.configs)
                                   if all(c.get(k) == v for k, v in wanted.items())])
    flags = {"twice": Q(second_point__gt=0), "has_dups": Q(duplicates__gt=0), "asked": Q(asks__gt=0),
             "missing": Q(missing__gt=0), "extra_calls": ~Q(calls_plus=0)}
    for name, cond in flags.items():
        v = filters.get(name)
        if v is True:
            qs = qs.filter(cond)
        elif v is False:
            qs = qs.exclude(cond)
    return qs


def scenario_page(sweep: Sweep, filters: Mapping[str, Any], page: int,
                  per_page: int = 50) -> tuple[Page, list[Scenario]]:
    """One page of the filtered list (ordered as stored), without the JSON columns.

    The paginator walks IDs only (an index-only scan for OFFSET), then the page's rows are read by ID.
    Raises django.core.paginator.InvalidPage for a page out of range.
    """
    ids = scenario_filter(sweep, filters).order_by("config", "first_point", "second_point").values_list("id", flat=True)
    pg = Paginator(ids, per_page).page(page)
    by_id = {s.id: s for s in Scenario.objects.filter(id__in=list(pg.object_list)).only(*LIST_FIELDS)}
    return pg, [by_id[i] for i in pg.object_list if i in by_id]


def scenario_export_rows(sweep: Sweep, filters: Mapping[str, Any], chunk_size: int = 2000) -> Iterator[dict[str, Any]]:
    """The filtered scenario rows as agentcore record dicts (without timeline/effects), streamed."""
    names = sweep.configs
    qs = (scenario_filter(sweep, filters).order_by("config", "first_point", "second_point")
          .values_list(*LIST_FIELDS[2:]))
    for row in qs.iterator(chunk_size=chunk_size):
        d = dict(zip(LIST_FIELDS[2:], row, strict=True))
        twice = d["second_point"] > 0
        cfg = d.pop("config")
        yield {
            "sweep": sweep.pk, "config": cfg,
            "config_name": names[cfg]["name"] if 0 <= cfg < len(names) else "",
            **{k: d[k] for k in RECORD_FIELDS},
            "second_point": d["second_point"] if twice else None,
            "second_kind": d["second_kind"] if twice else None,
            "second_label": d["second_label"] if twice else None,
        }



def scenario_get(scenario_id: int) -> Scenario:
    """One scenario with its sweep (raises Scenario.DoesNotExist)."""
    return Scenario.objects.select_related("sweep").defer("sweep__job_source", "sweep__table").get(pk=scenario_id)


def question_list(sweep: Sweep | None, status: str) -> QuerySet[Question]:
    """Questions of one sweep (or all), open or answered, with who answered and the scenario's identity."""
    qs = Question.objects.all() if sweep is None else Question.objects.filter(sweep=sweep)
    if status == "open":
        qs = qs.filter(status=Question.Status.OPEN).order_by("created_at", "id")
    else:
        qs = qs.exclude(status=Question.Status.OPEN).order_by("-answered_at", "-id")
    return (qs.select_related("answered_by", "scenario", "sweep").defer(
        "durable", "scenario__timeline", "scenario__effects", "sweep__job_source", "sweep__table"))


def question_durables(question_ids: list[int]) -> dict[int, Any]:
    """The stored durable state of these questions (to check before offering an answer)."""
    return dict(Question.objects.filter(pk__in=question_ids).values_list("pk", "durable"))


def question_counts(sweep: Sweep | None) -> dict[str, int]:
    qs = Question.objects.all() if sweep is None else Question.objects.filter(sweep=sweep)
    agg = qs.aggregate(open=Count("id", filter=Q(status=Question.Status.OPEN)),
                       answered=Count("id", filter=~Q(status=Question.Status.OPEN)),
                       right=Count("id", filter=~Q(status=Question.Status.OPEN) & Q(answer=F("truth"))))
    return {k: v or 0 for k, v in agg.items()}
