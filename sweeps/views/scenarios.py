"""Heatmaps, the scenario list, a scenario's timeline, and an audit's witness scenario (played
again from its parameters: agentcore.checker.witness.link links to it)."""

from __future__ import annotations

import json
from typing import Any

from django.core.exceptions import ValidationError
from django.core.paginator import InvalidPage, Page
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.functional import SimpleLazyObject
from django.views.decorators.http import require_safe

from agentcore import BadInput, jobs
from sweeps import charts, cost, limits, pagecache, replay, selectors, swimlanes
from sweeps.forms.lists import HeatmapForm
from sweeps.forms.witness import WitnessForm
from sweeps.models import Audit, Scenario, Sweep
from sweeps.services import timelines
from sweeps.views import errors
from sweeps.views._common import (
    back_url,
    bad_request,
    filter_form,
    read_access,
    script_json,
    sweep_or_404,
    viewer_access,
)

# The scenario list's metric columns and its totals line: each metric's title as the table's column
# of the same count says it, in the table's order.
LIST_METRIC_TITLES = {
    "duplicates": "dups",
    "missing": "missing",
    "wrong": "wrong",
    "gave_up": "gave up",
    "denied_ran": "denied ran",
    "asks": "asks",
    "avoidable": "avoidable",
    "calls_plus": "calls+",
}
assert set(LIST_METRIC_TITLES) == set(selectors.METRICS), "a list column per metric"


@require_safe
@read_access
def heatmap(request: HttpRequest, sweep_id: int) -> HttpResponse:
    sweep = sweep_or_404(sweep_id)
    form = HeatmapForm(request.GET, sweep=sweep)
    if not form.is_valid():
        return bad_request(request, "bad heatmap options", form)
    metric, config = form.cleaned_data["metric"], form.cleaned_data["config"]
    names = [c["name"] for c in sweep.configs]
    pair = form.pair()
    figures = pagecache.cached(
        sweep,
        "heatmap",
        [metric, config, pair],
        lambda: _figures(sweep, names, metric, config, pair),
        every_status=True,
    )
    return render(
        request,
        "sweeps/heatmap.html",
        {
            "sweep": sweep,
            "form": form,
            "metric": metric,
            "config": config,
            "configs": list(enumerate(names)),
            "metric_options": [(m, charts.METRIC_TITLES[m]) for m in selectors.METRICS],
            **figures,
            "scenarios_url": reverse("sweeps:scenarios", args=[sweep.pk]),
            "needs_plotly": True,
            "scenario_url": reverse("sweeps:scenario", args=[0]),  # the page puts a cell's scenario ID for the 0
            "kind_codes": sorted((code, kind) for kind, code in charts.KIND_CODES.items()),
        },
    )


def _figures(sweep: Sweep, names: list[str], metric: str, config: int, pair: tuple[int, int] | None) -> dict[str, Any]:
    """The heatmap page's figures as JSON for its scripts (fig1_json, fig2_json; a depth-3 sweep's
    third map too): what the page reads of the rows, all of it."""
    labels = selectors.point_labels(sweep)
    fig1 = charts.design_first_figure(selectors.heatmap_config_first(sweep), names, labels, metric)
    fig2, cells = None, []
    if names and sweep.depth >= 2:
        cells = selectors.heatmap_first_second(sweep, config)
        labels = {f: label for (c, f), label in labels.items() if c == config}
        if cells:
            fig2 = charts.first_second_figure(cells, labels, names[config], metric)
    third = _third(sweep, config, pair, names, metric, cells, labels) if names and sweep.depth == 3 else {}
    return {
        "fig1_json": script_json(charts.to_json(fig1)),
        "fig2_json": script_json(charts.to_json(fig2)) if fig2 else None,
        **third,
    }


def _third(
    sweep: Any,
    config: int,
    pair: tuple[int, int] | None,
    names: list[str],
    metric: str,
    twice_cells: list[dict[str, Any]],
    first_labels: dict[int, str],
) -> dict[str, Any]:
    """A depth-3 sweep's third map: the thrice scenarios of the chosen (first, second) pair, with the
    pair's twice scenario (its labels, and a link to it: the second map's cell), or what is missing."""
    if pair is None:
        return {"third": {"pair": None}}
    cell = next((c for c in twice_cells if (c["first_point"], c["second_point"]) == pair), None)
    twice = cell and {
        "id": cell["id"],
        "first_label": first_labels.get(pair[0], ""),
        "second_label": cell["second_label"],
    }
    cells = selectors.heatmap_third(sweep, config, *pair) if twice else []
    fig = (
        charts.third_figure(cells, names[config], pair, (twice["first_label"], twice["second_label"]), metric)
        if twice and cells
        else None
    )
    return {
        "third": {"pair": pair, "twice": twice, "cells": len(cells)},
        "fig3_json": script_json(charts.to_json(fig)) if fig else None,
    }


@require_safe
@read_access
def scenario_list(request: HttpRequest, sweep_id: int) -> HttpResponse:
    sweep = sweep_or_404(sweep_id)
    form = filter_form(request, sweep)
    if not form.is_valid():
        return bad_request(request, "bad filter values", form)
    filters = form.filters()
    number = form.cleaned_data.get("page") or 1
    totals = selectors.scenario_totals(sweep, filters)
    try:
        page = selectors.scenario_pager(sweep, filters, number, limits.SCENARIOS_PER_PAGE, count=totals["count"])
    except InvalidPage:
        return bad_request(request, f"there is no page {number} with these filters")
    query = request.GET.copy()
    query.pop("page", None)
    here = request.get_full_path()
    summed = form.cleaned_data.get("sum") or ""
    return render(
        request,
        "sweeps/scenario_list.html",
        {
            "sweep": sweep,
            "form": form,
            "page": page,
            "query": query.urlencode(),
            # Read only when the rows' fragment is not in the page cache (sweeps.pagecache).
            "scenarios": SimpleLazyObject(lambda: _listed(sweep, page)),
            "filters_cache": pagecache.fragment(sweep, "filters", sorted(query.lists())),
            "rows_cache": pagecache.fragment(sweep, "rows", here),
            "filtered": bool(filters),
            "here": here,
            "summed": summed,
            "summed_title": charts.METRIC_TITLES.get(summed, ""),
            "summed_total": totals.get(summed, 0),
            "totals": [(m, title, totals[m]) for m, title in LIST_METRIC_TITLES.items()],
            "metric_titles": list(LIST_METRIC_TITLES.items()),
        },
    )


def _listed(sweep: Sweep, page: Page) -> list[Scenario]:
    """The page's scenarios, each with its configuration's name and its metrics in the list's order."""
    names = [c["name"] for c in sweep.configs]
    scenarios = selectors.page_scenarios(page)
    for s in scenarios:
        s.config_name = names[s.config] if 0 <= s.config < len(names) else str(s.config)  # type: ignore[attr-defined]
        s.metric_values = [(m, getattr(s, m)) for m in LIST_METRIC_TITLES]  # type: ignore[attr-defined]
    return scenarios


def _list_of_dicts(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, dict) for v in value)


@require_safe
@viewer_access
def scenario_detail(request: HttpRequest, scenario_id: int) -> HttpResponse:
    try:
        scenario = selectors.scenario_get(scenario_id)
    except Scenario.DoesNotExist:
        raise Http404(f"no scenario {scenario_id}") from None
    error, status = "", 200
    timeline: Any = []
    try:
        timeline = timelines.scenario_timeline(scenario_id=scenario.pk)
    except cost.TooCostly as e:  # the page without its timeline, answered as bad input is
        error, status = " ".join(e.messages), 400
    except errors.STATE_ERRORS as e:  # a corrupt stored state; a stored job or sweep that no longer fits
        error = errors.state_error(e)
    if not _list_of_dicts(timeline):
        error = error or f"scenario {scenario.pk}: the stored timeline is corrupt (not a list of events)"
        timeline = []
    effects = Scenario.objects.filter(pk=scenario.pk).values_list("effects", flat=True).first() or []
    if not _list_of_dicts(effects):
        error = error or f"scenario {scenario.pk}: the stored tracker records are corrupt (not a list of effects)"
        effects = []
    shown = _timeline_context(timeline, effects)
    cfgs = scenario.sweep.configs
    return render(
        request,
        "sweeps/scenario_detail.html",
        {
            "sweep": scenario.sweep,
            "scenario": scenario,
            "error": error,
            **shown,
            "config_name": cfgs[scenario.config]["name"] if 0 <= scenario.config < len(cfgs) else scenario.config,
            "questions": scenario.questions.select_related("answered_by").defer("durable"),
            "back": back_url(request, reverse("sweeps:scenarios", args=[scenario.sweep_id])),
        },
        status=status,
    )


def _timeline_context(timeline: list[dict[str, Any]], effects: list[dict[str, Any]]) -> dict[str, Any]:
    """A timeline and the tracker's effects as the timeline's template shows them: numbered events
    (crashes counted, the ones that made a duplicate marked), effect rows, and the lanes' picture."""
    counts: dict[str, int] = {}
    for e in effects:
        key = json.dumps(e.get("origin"))
        counts[key] = counts.get(key, 0) + 1
    effect_rows = [
        {
            "effect": e,
            "origin": e.get("origin"),
            "args": json.dumps(e.get("args"), sort_keys=True),
            "answer": json.dumps(e.get("answer"), sort_keys=True),
            "duplicate": counts[json.dumps(e.get("origin"))] > 1,
        }
        for e in effects
    ]
    lanes = swimlanes.timeline_lanes(timeline, effects)
    dup_events = set(lanes["duplicates"])
    crashes = 0
    events = []
    for n, ev in enumerate(timeline, 1):
        kind = str(ev.get("kind", ""))
        if kind == "crash":
            crashes += 1
        events.append(
            {
                "n": n,
                "kind": kind,
                "text": ev.get("text", ""),
                "crash_no": crashes if kind == "crash" else 0,
                "duplicate": n in dup_events,
            }
        )
    return {"events": events, "effects": effect_rows, "lanes": lanes if events else None}


@require_safe
@viewer_access
def witness(request: HttpRequest) -> HttpResponse:
    """One scenario of `python -m agentcore audit` (agentcore.checker.witness.link's parameters), played again
    with agentcore: sweeps are deterministic, so nothing needs to be stored to show it."""
    form = WitnessForm(request.GET)
    if not form.is_valid():
        return bad_request(request, "; ".join(f"{k}: {' '.join(v)}" for k, v in form.errors.items()))
    d = form.cleaned_data
    try:
        job = jobs.load(d["job"]) if d["job"] else selectors.audit_job(d["audit"])
    except Audit.DoesNotExist:
        raise Http404("no such audit") from None
    try:
        cfg, played = replay.witness_replay(
            job, d["variant"], d["design"], d["tracker"], d["runs"], d["first"], d["second"], d["conditions"]
        )
    except ValidationError as e:  # a variant or crash point the job has not (a BadRequest), or too costly
        return bad_request(request, " ".join(e.messages))
    except BadInput as e:  # agentcore refused what the link asks for
        return bad_request(request, str(e))
    return render(
        request,
        "sweeps/witness.html",
        {
            "cfg": cfg,
            "played": played,
            "d": d,
            "job_name": job.name,
            "conditions": cfg.conditions,
            "error": "",
            **_timeline_context(played.timeline or [], played.effects or []),
        },
    )
