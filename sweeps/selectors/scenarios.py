"""A sweep's scenarios and questions: the heatmaps' cells, filtered lists and totals, the export's
rows, the question queues."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import Count, F, Q, QuerySet, Sum

from sweeps import pagecache, targets
from sweeps.limits import EXPORT_PAGE_ROWS
from sweeps.models import Chunk, Question, Scenario, Sweep
from sweeps.schema import LIST_FIELDS, SCENARIO_ORDER, row_fields

# Summed per heatmap cell and over a scenario list: the record's outcome counts, the chapter's first.
METRICS = ("duplicates", "asks", "calls_plus", "missing", "wrong", "gave_up", "denied_ran", "avoidable")


def heatmap_config_first(sweep: Sweep) -> list[dict[str, Any]]:
    """One cell per (config, first point): every metric summed over its scenarios, in one GROUP BY
    (the page switches metrics without asking again): {"config", "first_point", "duplicates", ...}."""
    rows = (
        Scenario.objects.filter(sweep=sweep)
        .order_by()
        .values("config", "first_point")
        .annotate(**{f"sum_{m}": Sum(m) for m in METRICS})  # an annotation cannot take a field's name
        .order_by("config", "first_point")
    )
    return [
        {"config": r["config"], "first_point": r["first_point"], **{m: r[f"sum_{m}"] for m in METRICS}} for r in rows
    ]


def heatmap_first_second(sweep: Sweep, config: int) -> list[dict[str, Any]]:
    """One cell per twice scenario of one config: {"id", "first_point", "second_point", "second_label"}
    and every metric's value."""
    fields = ("id", "first_point", "second_point", "second_label", *METRICS)
    qs = Scenario.objects.filter(sweep=sweep, config=config, second_point__gt=0, third_point=0)
    return [
        dict(zip(fields, row, strict=True)) for row in qs.order_by("first_point", "second_point").values_list(*fields)
    ]


def heatmap_third(sweep: Sweep, config: int, first: int, second: int) -> list[dict[str, Any]]:
    """One cell per thrice scenario of one (first, second) pair of a config: {"id", "third_point",
    "third_label"} and every metric's value, by third point (the identity's index: a few hundred
    rows at most)."""
    fields = ("id", "third_point", "third_label", *METRICS)
    qs = Scenario.objects.filter(sweep=sweep, config=config, first_point=first, second_point=second, third_point__gt=0)
    return [dict(zip(fields, row, strict=True)) for row in qs.order_by("third_point").values_list(*fields)]


def point_labels(sweep: Sweep) -> dict[tuple[int, int], str]:
    """(config, first point) -> the first crash point's label, from the chunks (or the once rows if none)."""
    rows = list(Chunk.objects.filter(sweep=sweep).order_by().values_list("config", "first_point", "label"))
    if not rows:
        rows = list(
            Scenario.objects.filter(sweep=sweep, second_point=0)
            .order_by()
            .values_list("config", "first_point", "first_label")
        )
    return {(c, f): label for c, f, label in rows}


def _column(config: dict[str, Any], name: str) -> Any:
    """A configuration's value as its scenario rows store it (a target's design: its name)."""
    return targets.design_column(config) if name == "design" else config.get(name)


def scenario_filter(sweep: Sweep, filters: Mapping[str, Any]) -> QuerySet[Scenario]:
    """A sweep's scenarios narrowed by the list's filters (None or "" means no filter)."""
    qs = Scenario.objects.filter(sweep=sweep)
    exact = {
        k: filters.get(k)
        for k in ("config", "design", "tracker", "first_kind", "first_point", "second_point", "third_point", "status")
    }
    qs = qs.filter(**{k: v for k, v in exact.items() if v not in (None, "")})
    # A configuration has one design and one tracker mode: saying which configurations match lets
    # the database walk the (sweep, config, ...) index instead of every row of the sweep.
    wanted = {k: exact[k] for k in ("design", "tracker") if exact[k] not in (None, "")}
    if wanted:
        qs = qs.filter(
            config__in=[i for i, c in enumerate(sweep.configs) if all(_column(c, k) == v for k, v in wanted.items())]
        )
    flags = {
        "twice": Q(second_point__gt=0),
        "thrice": Q(third_point__gt=0),
        "has_dups": Q(duplicates__gt=0),
        "asked": Q(asks__gt=0),
        "missing": Q(missing__gt=0),
        "extra_calls": ~Q(calls_plus=0),
        "has_wrong": Q(wrong__gt=0),
        "gave_up": Q(gave_up__gt=0),
        "denied_ran": Q(denied_ran__gt=0),
        "avoidable": Q(avoidable__gt=0),
    }
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


def scenario_page(
    sweep: Sweep, filters: Mapping[str, Any], page: int, per_page: int = 50, count: int | None = None
) -> tuple[Page, list[Scenario]]:
    """One page of the filtered list (ordered as stored), without the JSON columns.

    The paginator walks IDs only (an index-only scan for OFFSET), then the page's rows are read by ID.
    `count`, when the caller has it already (scenario_totals), spares the paginator its COUNT query.
    Raises django.core.paginator.InvalidPage for a page out of range.
    """
    pg = scenario_pager(sweep, filters, page, per_page, count)
    return pg, page_scenarios(pg)


def scenario_pager(
    sweep: Sweep, filters: Mapping[str, Any], page: int, per_page: int = 50, count: int | None = None
) -> Page:
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


def scenario_export_rows(
    sweep: Sweep, filters: Mapping[str, Any], chunk_size: int = EXPORT_PAGE_ROWS
) -> Iterator[dict[str, Any]]:
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
            yield {
                "sweep": sweep.pk,
                "config": cfg,
                "config_name": names[cfg]["name"] if 0 <= cfg < len(names) else "",
                **row_fields(d),
            }
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
    return qs.select_related("answered_by", "scenario", "sweep").defer(
        "durable", "scenario__timeline", "scenario__effects", "sweep__job_source", "sweep__table"
    )


def question_durables(question_ids: list[int]) -> dict[int, Any]:
    """The stored durable state of these questions (to check before offering an answer)."""
    return dict(Question.objects.filter(pk__in=question_ids).values_list("pk", "durable"))


def question_counts(sweep: Sweep | None, avoidable: bool | None = None) -> dict[str, int]:
    """Open, answered and rightly answered questions of one sweep (or all), of the avoidable or the
    necessary ones when `avoidable` says which."""
    qs = Question.objects.all() if sweep is None else Question.objects.filter(sweep=sweep)
    if avoidable is not None:
        qs = qs.filter(avoidable=avoidable)
    agg = qs.aggregate(
        open=Count("id", filter=Q(status=Question.Status.OPEN)),
        answered=Count("id", filter=~Q(status=Question.Status.OPEN)),
        right=Count("id", filter=~Q(status=Question.Status.OPEN) & Q(answer=F("truth"))),
    )
    return {k: v or 0 for k, v in agg.items()}
