"""The dashboard's pages. Reads go through selectors.py, writes through services.py.

Access: reading is public when settings.SWEEPSITE_PUBLIC_READ is true, else it needs a login;
launching, answering, resuming and exporting always need one (an anonymous POST gets 403, an
anonymous export is sent to the login page). Every parameter goes through a form: bad values give a
400 page, unknown IDs a 404, never a 500.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from functools import wraps
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import InvalidPage, Paginator
from django.db import DatabaseError
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseBase,
    HttpResponseRedirect,
    JsonResponse,
    StreamingHttpResponse,
)
from django.shortcuts import get_object_or_404, redirect, render
from django.template.defaultfilters import pluralize
from django.urls import Resolver404, resolve, reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods, require_POST, require_safe
from kombu.exceptions import OperationalError as BrokerError

from agentcore.checkpoint import CheckpointError
from agentcore.jobs import JobError
from agentcore.records import COLUMNS
from agentcore.report import TITLES
from sweeps import charts, exports, selectors, services
from sweeps.forms import (
    AnswerForm,
    BackForm,
    CompareForm,
    HeatmapForm,
    LaunchForm,
    PageForm,
    QuestionListForm,
    ScenarioFilterForm,
    SweepNotesForm,
    new_request_token,
    printable,
)
from sweeps.models import Question, Scenario, Sweep

SWEEPS_PER_PAGE = 20
SCENARIOS_PER_PAGE = 50
QUESTIONS_PER_PAGE = 25
# A running sweep that stored no chunk for this long is offered the resume button.
STALL_SECONDS = 60
# The table's columns and the scenario filter each number links to. A count column's number is the
# list's count; a sum column names its metric (`sum`), whose total over the list the list states.
COLUMN_FILTERS = {
    "once": {"twice": "no"},
    "twice": {"twice": "yes"},
    "with_dups": {"has_dups": "yes"},
    "dups": {"has_dups": "yes", "sum": "duplicates"},
    "missing": {"missing": "yes", "sum": "missing"},
    "asks": {"asked": "yes", "sum": "asks"},
    "calls_plus": {"extra_calls": "yes", "sum": "calls_plus"},
}

# The scenario list's totals line: each metric's name as the list's own columns title it, in their order.
LIST_METRIC_TITLES = {"duplicates": "dups", "missing": "missing", "asks": "asks", "calls_plus": "calls+"}

View = Callable[..., HttpResponseBase]
log = logging.getLogger(__name__)


def read_access(view: View) -> View:
    """Public when SWEEPSITE_PUBLIC_READ, else logged-in users only (read at request time)."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if not settings.SWEEPSITE_PUBLIC_READ and not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        return view(request, *args, **kwargs)

    return wrapped


def login_for_post(view: View) -> View:
    """A POST by an anonymous user is refused with 403 (no redirect that would drop the form)."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if not request.user.is_authenticated:
            raise PermissionDenied("log in to do this")
        return view(request, *args, **kwargs)

    return wrapped


def _bad_request(request: HttpRequest, message: str, form: Any = None) -> HttpResponse:
    return render(request, "sweeps/bad_request.html", {"message": message, "form": form}, status=400)


def _sweep_or_404(sweep_id: int) -> Sweep:
    try:
        return selectors.sweep_get(sweep_id)
    except Sweep.DoesNotExist:
        raise Http404(f"no sweep {sweep_id}") from None


def _script_json(text: str) -> str:
    """JSON text safe inside <script type="application/json"> (as django's json_script escapes it)."""
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _page(paginator: Paginator, number: int | None) -> Any:
    try:
        return paginator.page(number or 1)
    except InvalidPage:
        return None


# --- 1. sweeps list and launch -----------------------------------------------------------------

@require_safe
@read_access
def sweep_list(request: HttpRequest) -> HttpResponse:
    form = plan = None
    if request.user.is_authenticated:
        form = LaunchForm(initial={"request_token": new_request_token()})
        # The default form's planned size (cached per process); the page's script asks again on changes.
        plan = _plan_summary(services.sweep_plan(
            job_source=services.builtin_job_source("triage"), configs=services.table_configs_for(),
            depth=form.fields["depth"].initial, runs=form.fields["runs"].initial,
            person=form.fields["person"].initial), form.fields["depth"].initial, form.fields["runs"].initial)
    return _render_list(request, form, plan=plan)


def _render_list(request: HttpRequest, form: LaunchForm | None, status: int = 200,
                 plan: dict[str, Any] | None = None) -> HttpResponse:
    pf = PageForm(request.GET)
    if not pf.is_valid():
        return _bad_request(request, "bad page number", pf)
    number = pf.cleaned_data.get("page")
    paginator = Paginator(selectors.sweep_list(), SWEEPS_PER_PAGE)
    page = _page(paginator, number)
    if page is None:
        return _bad_request(request, f"there is no page {number} (pages 1 to {paginator.num_pages})")
    return render(request, "sweeps/sweep_list.html", {"page": page, "form": form, "plan": plan}, status=status)


def _launch_configs(data: dict[str, Any]) -> list[dict[str, str]]:
    """The configurations a valid launch form asks for."""
    if data["preset"] == "table":
        return services.table_configs_for(data["job_obj"])
    return services.configs_for(data["designs"], data["trackers"])


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{max(round(seconds), 1)} s"
    if seconds < 90 * 60:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


def _plan_summary(plan: services.Plan, depth: int, runs: int) -> dict[str, Any]:
    """The planned size with the time estimate from selectors.measured_rate, and a line saying both."""
    rate, sweeps, which = selectors.measured_rate(depth=depth, runs=runs)
    seconds = plan.scenarios / rate
    # An estimated count is given to 3 significant figures: more would claim a precision it has not.
    shown = plan.scenarios if plan.exact else int(float(f"{plan.scenarios:.3g}"))
    basis = (f"measured over {sweeps} finished sweep{'s' * (sweeps != 1)} here"
             f"{'' if which == 'any' else ' (' + which + ')'}" if sweeps
             else "the default rate: no sweep has finished here yet")
    text = (f"{plan.chunks:,} chunk{'s' * (plan.chunks != 1)} · {'' if plan.exact else 'about '}{shown:,} "
            f"scenario{'s' * (shown != 1)} · about {_duration(seconds)} at {rate:,.0f} scenarios/s, {basis}")
    return {"chunks": plan.chunks, "scenarios": plan.scenarios, "exact": plan.exact, "seconds": round(seconds, 1),
            "rate": round(rate, 1), "rate_sweeps": sweeps, "rate_basis": which, "text": text,
            "configs": [{"name": n, "chunks": c, "scenarios": k} for n, c, k in plan.configs]}


@require_http_methods(["GET", "HEAD", "POST"])
def sweep_launch(request: HttpRequest) -> HttpResponse:
    """POST launches; GET (a reload of the address the form posted to) goes to the form."""
    if request.method != "POST":
        return HttpResponseRedirect(reverse("sweeps:list") + "#launch")
    return _launch(request)


@require_POST
@login_for_post
def sweep_plan(request: HttpRequest) -> JsonResponse:
    """The launch form's planned size, as JSON, from the form's fields (nothing stored or enqueued):
    {"chunks", "scenarios", "exact", "seconds", "text", ...}, or 400 with {"errors": [...]}."""
    form = LaunchForm(request.POST, request.FILES)
    if not form.is_valid():
        errors = [f"{'' if field == '__all__' else field + ': '}{m}" for field, ms in form.errors.items() for m in ms]
        return JsonResponse({"errors": errors}, status=400)
    data = form.cleaned_data
    try:
        plan = services.sweep_plan(job_source=data["job_source"], configs=_launch_configs(data), depth=data["depth"],
                                   runs=data["runs"], person=data["person"])
    except ValidationError as e:
        return JsonResponse({"errors": e.messages}, status=400)
    except DatabaseError as e:
        return JsonResponse({"errors": [f"the database is unreachable ({e})"]}, status=503)
    return JsonResponse(_plan_summary(plan, data["depth"], data["runs"]))


@login_for_post
def _launch(request: HttpRequest) -> HttpResponse:
    form = LaunchForm(request.POST, request.FILES)
    if not form.is_valid():
        if "request_token" in form.errors:  # a mangled form: give the next submit a fresh token
            form.data = form.data.copy()
            form.data["request_token"] = new_request_token()
        return _render_list(request, form, status=400)
    data = form.cleaned_data
    configs = _launch_configs(data)
    try:
        sweep = services.sweep_create(user=request.user, job_source=data["job_source"], configs=configs,
                                      depth=data["depth"], runs=data["runs"], person=data["person"],
                                      request_token=data["request_token"], name=data["name"],
                                      notes=data["notes"])
    except ValidationError as e:
        for message in e.messages:
            form.add_error(None, message)
        return _render_list(request, form, status=400)
    except (BrokerError, DatabaseError, OSError) as e:
        form.add_error(None, f"the sweep could not be started: the queue or the database is unreachable ({e})")
        return _render_list(request, form, status=503)
    messages.success(request, f"sweep {sweep.pk} launched")
    return redirect("sweeps:detail", sweep_id=sweep.pk)


# --- 2. sweep page -----------------------------------------------------------------------------

@require_safe
@read_access
def sweep_detail(request: HttpRequest, sweep_id: int) -> HttpResponse:
    sweep = _sweep_or_404(sweep_id)
    table = _table(sweep)
    progress = selectors.sweep_progress(sweep)
    may_change = selectors.may_change(request.user, sweep, "change")
    return render(request, "sweeps/sweep_detail.html", {
        "sweep": sweep, "table": table, "rows": table["rows"], "titles": TITLES, "progress": progress,
        "stalled": _stalled(sweep, progress),
        "cancellable": sweep.status in (Sweep.Status.RUNNING, Sweep.Status.WAITING),
        "may_delete": selectors.may_change(request.user, sweep, "delete"),
        "notes_form": SweepNotesForm(instance=sweep) if may_change else None,
    })


def _table(sweep: Sweep) -> dict[str, Any]:
    """The comparison table, for the sweep page and for its progress poll alike: {"partial",
    "waiting", "rows"}, each row with its cells, a number (None when it is not final) and the link
    to the scenarios behind it (COLUMN_FILTERS), and with how many of its scenarios wait."""
    table = selectors.sweep_table_live(sweep)
    base = reverse("sweeps:scenarios", args=[sweep.pk])
    rows = []
    for i, row in enumerate(table["rows"]):
        waiting = row["waiting"]
        not_final = (f"not final: {waiting} scenario{pluralize(waiting)} of this row wait{pluralize(waiting, 's,')} "
                     "for an answer" if waiting else "")
        cells = []
        for col in COLUMNS:
            query = "&".join(f"{k}={v}" for k, v in {"config": i, **COLUMN_FILTERS[col]}.items())
            value = row["values"][col]
            cells.append({"col": col, "value": value, "url": f"{base}?{query}",
                          "title": not_final if value is None else ""})
        rows.append({"name": row["name"], "config": i, "url": f"{base}?config={i}", "cells": cells,
                     "waiting": waiting, "waiting_url": f"{base}?config={i}&status=waiting"})
    return {"partial": table["partial"], "waiting": table["waiting"], "rows": rows}


def _stalled(sweep: Sweep, progress: dict[str, Any]) -> bool:
    """Chunks are missing and nothing will store them: the sweep failed or was cancelled, or no chunk
    was stored for a while. (A cancelled sweep is always offered its resume.)"""
    if sweep.status == Sweep.Status.CANCELLED:
        return True
    if progress["chunks_stored"] >= progress["total_chunks"]:
        return False
    return sweep.status == Sweep.Status.FAILED or (
        sweep.status == Sweep.Status.RUNNING and progress["idle_seconds"] >= STALL_SECONDS)


@require_safe
@read_access
def sweep_progress(request: HttpRequest, sweep_id: int) -> JsonResponse:
    """The progress box's numbers and the comparison table (the page updates both in place)."""
    sweep = _sweep_or_404(sweep_id)
    return JsonResponse({**selectors.sweep_progress(sweep), "table": _table(sweep)})


@require_POST
@login_for_post
def sweep_resume(request: HttpRequest, sweep_id: int) -> HttpResponse:
    sweep = _sweep_or_404(sweep_id)
    try:
        n = services.sweep_resume(sweep_id=sweep.pk)
    except ValidationError as e:
        messages.error(request, " ".join(e.messages))
    except (BrokerError, DatabaseError, OSError) as e:
        messages.error(request, f"could not resume: the queue or the database is unreachable ({e})")
    else:
        messages.success(request, f"{n} missing chunk{pluralize(n)} queued again" if n else "nothing to resume")
    return redirect("sweeps:detail", sweep_id=sweep.pk)


@require_POST
@login_for_post
def sweep_cancel(request: HttpRequest, sweep_id: int) -> HttpResponse:
    """Any logged-in user may cancel (as resume, it loses nothing: stored rows stay, resume goes on)."""
    sweep = _sweep_or_404(sweep_id)
    try:
        cancelled = services.sweep_cancel(sweep_id=sweep.pk)
    except DatabaseError as e:
        messages.error(request, f"could not cancel: the database is unreachable ({e})")
    else:
        if cancelled:
            messages.success(request, f"sweep {sweep.pk} cancelled: its queued chunks are skipped and the rows "
                                      "stored so far are kept; resume goes on from there")
        else:
            messages.info(request, f"sweep {sweep.pk} is {sweep.status}: there is nothing to cancel")
    return redirect("sweeps:detail", sweep_id=sweep.pk)


def _owner_or_staff(request: HttpRequest, sweep: Sweep, action: str) -> None:
    if not selectors.may_change(request.user, sweep, action):
        raise PermissionDenied(f"only the sweep's owner or staff may {action} it")


@require_http_methods(["GET", "HEAD", "POST"])
def sweep_delete(request: HttpRequest, sweep_id: int) -> HttpResponseBase:
    """GET: the confirm page (what goes: scenarios, questions); POST: delete, then the list. The
    sweep's owner or staff only (others 403); anonymous: a GET goes to log in, a POST is 403."""
    if not request.user.is_authenticated:
        if request.method == "POST":
            raise PermissionDenied("log in to do this")
        return redirect_to_login(request.get_full_path())
    sweep = _sweep_or_404(sweep_id)
    _owner_or_staff(request, sweep, "delete")
    if request.method != "POST":
        return render(request, "sweeps/sweep_delete.html", {"sweep": sweep,
                                                            "contents": selectors.sweep_contents(sweep)})
    try:
        removed = services.sweep_delete(sweep_id=sweep.pk)
    except DatabaseError as e:
        messages.error(request, f"could not delete: the database is unreachable ({e})")
        return redirect("sweeps:detail", sweep_id=sweep.pk)
    messages.success(request, f"sweep {sweep.pk} deleted with its {removed['scenarios']:,} scenario"
                              f"{pluralize(removed['scenarios'])} and {removed['questions']:,} question"
                              f"{pluralize(removed['questions'])}")
    return redirect("sweeps:list")


@require_POST
@login_for_post
def sweep_edit(request: HttpRequest, sweep_id: int) -> HttpResponse:
    """Save the sweep's name and notes (its owner or staff)."""
    sweep = _sweep_or_404(sweep_id)
    _owner_or_staff(request, sweep, "change")
    form = SweepNotesForm(request.POST, instance=sweep)
    if not form.is_valid():
        return _bad_request(request, "bad name or notes", form)
    services.sweep_update_notes(sweep_id=sweep.pk, name=form.cleaned_data["name"], notes=form.cleaned_data["notes"])
    messages.success(request, "name and notes saved")
    return redirect("sweeps:detail", sweep_id=sweep.pk)


# --- 3. heatmaps -------------------------------------------------------------------------------

@require_safe
@read_access
def heatmap(request: HttpRequest, sweep_id: int) -> HttpResponse:
    sweep = _sweep_or_404(sweep_id)
    form = HeatmapForm(request.GET, sweep=sweep)
    if not form.is_valid():
        return _bad_request(request, "bad heatmap options", form)
    metric, config = form.cleaned_data["metric"], form.cleaned_data["config"]
    names = [c["name"] for c in sweep.configs]
    labels = selectors.point_labels(sweep)
    fig1 = charts.design_first_figure(selectors.heatmap_config_first(sweep), names, labels, metric)
    fig2 = None
    if names and sweep.depth == 2:
        cells = selectors.heatmap_first_second(sweep, config)
        labels = {f: label for (c, f), label in labels.items() if c == config}
        if cells:
            fig2 = charts.first_second_figure(cells, labels, names[config], metric)
    return render(request, "sweeps/heatmap.html", {
        "sweep": sweep, "form": form, "metric": metric, "config": config, "configs": list(enumerate(names)),
        "metric_options": [(m, charts.METRIC_TITLES[m]) for m in selectors.METRICS],
        "fig1_json": _script_json(charts.to_json(fig1)),
        "fig2_json": _script_json(charts.to_json(fig2)) if fig2 else None,
        "scenarios_url": reverse("sweeps:scenarios", args=[sweep.pk]), "needs_plotly": True,
        "scenario_url": reverse("sweeps:scenario", args=[0]),  # the page puts a cell's scenario ID for the 0
        "kind_codes": sorted((code, kind) for kind, code in charts.KIND_CODES.items()),
    })


# --- 4. scenarios ------------------------------------------------------------------------------

def _filter_form(request: HttpRequest, sweep: Sweep) -> ScenarioFilterForm:
    return ScenarioFilterForm(request.GET, sweep=sweep)


@require_safe
@read_access
def scenario_list(request: HttpRequest, sweep_id: int) -> HttpResponse:
    sweep = _sweep_or_404(sweep_id)
    form = _filter_form(request, sweep)
    if not form.is_valid():
        return _bad_request(request, "bad filter values", form)
    filters = form.filters()
    number = form.cleaned_data.get("page") or 1
    totals = selectors.scenario_totals(sweep, filters)
    try:
        page, scenarios = selectors.scenario_page(sweep, filters, number, SCENARIOS_PER_PAGE, count=totals["count"])
    except InvalidPage:
        return _bad_request(request, f"there is no page {number} with these filters")
    query = request.GET.copy()
    query.pop("page", None)
    names = [c["name"] for c in sweep.configs]
    for s in scenarios:
        s.config_name = names[s.config] if 0 <= s.config < len(names) else str(s.config)  # type: ignore[attr-defined]
    summed = form.cleaned_data.get("sum") or ""
    return render(request, "sweeps/scenario_list.html", {
        "sweep": sweep, "form": form, "page": page, "scenarios": scenarios, "query": query.urlencode(),
        "filtered": bool(filters), "here": request.get_full_path(), "summed": summed,
        "summed_title": charts.METRIC_TITLES.get(summed, ""), "summed_total": totals.get(summed, 0),
        "totals": [(m, title, totals[m]) for m, title in LIST_METRIC_TITLES.items()],
    })


# What reading a corrupt stored state can raise (a scenario's page shows it instead of a 500).
STATE_ERRORS = (CheckpointError, ValueError, RecursionError, KeyError, IndexError, TypeError, AttributeError)


def _state_error(e: BaseException, what: str) -> str:
    """A message for the page: agentcore's own errors name the file and field; others get a prefix."""
    if isinstance(e, (CheckpointError, JobError)):
        message = str(e)
    else:
        log.warning("%s: unusable stored state", what, exc_info=e)
        message = f"{what}: the stored state cannot be used ({type(e).__name__}: {e})"
    return printable(message)


def _list_of_dicts(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, dict) for v in value)


@require_safe
@read_access
def scenario_detail(request: HttpRequest, scenario_id: int) -> HttpResponse:
    try:
        scenario = selectors.scenario_get(scenario_id)
    except Scenario.DoesNotExist:
        raise Http404(f"no scenario {scenario_id}") from None
    error = ""
    timeline: Any = []
    try:
        timeline = services.scenario_timeline(scenario_id=scenario.pk)
    except STATE_ERRORS as e:  # a corrupt stored state; a stored job or sweep that no longer fits
        error = _state_error(e, f"scenario {scenario.pk}")
    if not _list_of_dicts(timeline):
        error = error or f"scenario {scenario.pk}: the stored timeline is corrupt (not a list of events)"
        timeline = []
    effects = Scenario.objects.filter(pk=scenario.pk).values_list("effects", flat=True).first() or []
    if not _list_of_dicts(effects):
        error = error or f"scenario {scenario.pk}: the stored tracker records are corrupt (not a list of effects)"
        effects = []
    counts: dict[str, int] = {}
    for e in effects:
        key = json.dumps(e.get("origin"))
        counts[key] = counts.get(key, 0) + 1
    effect_rows = [{"effect": e, "origin": e.get("origin"), "args": json.dumps(e.get("args"), sort_keys=True),
                    "answer": json.dumps(e.get("answer"), sort_keys=True),
                    "duplicate": counts[json.dumps(e.get("origin"))] > 1} for e in effects]
    lanes = charts.timeline_lanes(timeline, effects)
    dup_events = set(lanes["duplicates"])
    crashes = 0
    events = []
    for n, ev in enumerate(timeline, 1):
        kind = str(ev.get("kind", ""))
        if kind == "crash":
            crashes += 1
        events.append({"n": n, "kind": kind, "text": ev.get("text", ""), "crash_no": crashes if kind == "crash" else 0,
                       "duplicate": n in dup_events})
    cfgs = scenario.sweep.configs
    return render(request, "sweeps/scenario_detail.html", {
        "sweep": scenario.sweep, "scenario": scenario, "events": events, "error": error, "effects": effect_rows,
        "config_name": cfgs[scenario.config]["name"] if 0 <= scenario.config < len(cfgs) else scenario.config,
        "questions": scenario.questions.select_related("answered_by").defer("durable"),
        "lanes": lanes if events else None,
        "back": _back_url(request, reverse("sweeps:scenarios", args=[scenario.sweep_id])),
    })


# The pages a scenario's "back" link may return to (the pages that link to a scenario).
BACK_PAGES = {"sweeps:scenarios", "sweeps:heatmap", "sweeps:sweep_questions", "sweeps:questions", "sweeps:detail"}


def _back_url(request: HttpRequest, fallback: str) -> str:
    """The `back` parameter when it is a path of this site to one of BACK_PAGES, else the fallback."""
    form = BackForm(request.GET)
    candidate = form.cleaned_data.get("back") if form.is_valid() else None
    url = _next_url(request, candidate, "")
    if not url:
        return fallback
    try:
        match = resolve(urlsplit(url).path)
    except Resolver404:
        return fallback
    return url if match.view_name in BACK_PAGES else fallback


# --- compare two sweeps ------------------------------------------------------------------------

def _compare_pair(request: HttpRequest) -> tuple[CompareForm, tuple[Sweep, Sweep] | None, HttpResponse | None]:
    """The compare form, the two sweeps when both were chosen, or the 400 page for bad values
    (an unknown sweep raises Http404)."""
    form = CompareForm(request.GET)
    if not form.is_valid():
        form.offer(selectors.compare_choices())
        return form, None, _bad_request(request, "bad sweep IDs to compare", form)
    ids = form.pair()
    form.offer(selectors.compare_choices([i for i in (form.cleaned_data.get("a"), form.cleaned_data.get("b"))
                                          if i is not None]))
    if ids is None:
        return form, None, None
    return form, (_sweep_or_404(ids[0]), _sweep_or_404(ids[1])), None


@require_safe
@read_access
def compare(request: HttpRequest) -> HttpResponse:
    form, pair, bad = _compare_pair(request)
    if bad is not None:
        return bad
    context: dict[str, Any] = {"form": form, "titles": TITLES, "side_columns": len(COLUMNS),
                               "all_columns": 1 + 2 * len(COLUMNS)}
    if pair is not None:
        a, b = pair
        rows = selectors.sweep_compare(a, b)
        setup = [(what, getattr(a, field), getattr(b, field)) for what, field in
                 (("job", "job_name"), ("depth", "depth"), ("job runs", "runs"), ("person", "person"))]
        context.update({
            "a": a, "b": b, "rows": rows, "changed": sum(r["changed"] for r in rows),
            "only_a": sum(r["b"] is None for r in rows), "only_b": sum(r["a"] is None for r in rows),
            "setup_differs": [s for s in setup if s[1] != s[2]],
            "same_job": selectors.same_job(a, b),
            "query": request.GET.urlencode(),
        })
    return render(request, "sweeps/compare.html", context)


@require_safe
@login_required
def compare_export(request: HttpRequest) -> HttpResponse:
    form, pair, bad = _compare_pair(request)
    if bad is not None:
        return bad
    if pair is None:
        return _bad_request(request, "choose two sweeps to compare (a and b)", form)
    a, b = pair
    response = HttpResponse(exports.compare_csv(selectors.sweep_compare(a, b), a.pk, b.pk),
                            content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="compare-sweep-{a.pk}-with-{b.pk}.csv"'
    return response


# --- 5. questions ------------------------------------------------------------------------------


def run_name(qid: str) -> str:
    """The job run a question ID ("0:call_1": run index, call) names, as timelines name it: "run-1"."""
    head = str(qid).split(":", 1)[0]
    return f"run-{int(head) + 1}" if head.isdigit() else str(qid)


def _durable_problems(question_ids: list[int]) -> dict[int, str]:
    """Open questions whose stored durable state (checkpoint files, tracker records) is corrupt:
    answering them could not resume their scenario. question ID -> the error."""
    problems = {}
    for pk, durable in selectors.question_durables(question_ids).items():
        try:
            services.check_durable(durable, f"question {pk}")
        except STATE_ERRORS as e:
            problems[pk] = _state_error(e, f"question {pk}")
    return problems


def _question_page(request: HttpRequest, sweep: Sweep | None) -> HttpResponse:
    form = QuestionListForm(request.GET)
    if not form.is_valid():
        return _bad_request(request, "bad question list parameters", form)
    status = form.cleaned_data["status"]
    paginator = Paginator(selectors.question_list(sweep, status), QUESTIONS_PER_PAGE)
    page = _page(paginator, form.cleaned_data.get("page"))
    if page is None:
        return _bad_request(request, f"there is no page {form.cleaned_data.get('page')}")
    problems = _durable_problems([q.pk for q in page.object_list if q.status == Question.Status.OPEN])
    for q in page.object_list:
        q.args_json = json.dumps(q.call.get("args") if isinstance(q.call, dict) else q.call, sort_keys=True)
        q.state_error = problems.get(q.pk, "")
        q.run_name = run_name(q.qid)
    return render(request, "sweeps/question_list.html", {
        "sweep": sweep, "status": status, "page": page, "counts": selectors.question_counts(sweep),
        "here": request.get_full_path(),
    })


@require_safe
@read_access
def question_list(request: HttpRequest) -> HttpResponse:
    return _question_page(request, None)


@require_safe
@read_access
def sweep_questions(request: HttpRequest, sweep_id: int) -> HttpResponse:
    return _question_page(request, _sweep_or_404(sweep_id))


def _next_url(request: HttpRequest, candidate: str | None, fallback: str) -> str:
    """`next` if it is a path on this site ("/..."), else the fallback. (A bare word would be taken
    for a URL name by redirect(), a relative path would depend on the current URL.)"""
    if candidate and candidate.startswith("/") and url_has_allowed_host_and_scheme(
            candidate, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        return candidate
    return fallback


@require_POST
@login_for_post
def question_answer(request: HttpRequest, question_id: int) -> HttpResponse:
    question = get_object_or_404(Question.objects.only("id", "sweep_id"), pk=question_id)
    form = AnswerForm(request.POST)
    if not form.is_valid():
        return _bad_request(request, "choose \"it happened\" or \"it did not happen\"", form)
    fallback = reverse("sweeps:sweep_questions", args=[question.sweep_id])
    try:
        q, changed = services.question_answer(question_id=question.pk, user=request.user,
                                              happened=form.cleaned_data["happened"])
    except ValidationError as e:
        messages.error(request, " ".join(e.messages))
    except (BrokerError, DatabaseError, OSError) as e:
        messages.error(request, f"the answer could not be stored: the queue or the database is unreachable ({e})")
    else:
        if changed:
            messages.success(request, f"answer stored: {'it happened' if q.answer else 'it did not happen'}; "
                                      "the scenario resumes on a worker")
        else:
            who = q.answered_by.get_username() if q.answered_by else "someone"
            messages.warning(request, f"this question was already answered by {who}; the first answer was kept")
    return HttpResponseRedirect(_next_url(request, form.cleaned_data.get("next"), fallback))


@require_POST
@login_for_post
def questions_answer_all(request: HttpRequest, sweep_id: int) -> HttpResponse:
    sweep = _sweep_or_404(sweep_id)
    try:
        n = services.questions_answer_truthfully(sweep_id=sweep.pk, user=request.user)
    except ValidationError as e:
        messages.error(request, " ".join(e.messages))
    except (BrokerError, DatabaseError, OSError) as e:
        messages.error(request, f"the answers could not be stored: the queue or the database is unreachable ({e})")
    else:
        messages.success(request, f"{n} open question{pluralize(n)} answered from the tracker's records")
    return redirect("sweeps:sweep_questions", sweep_id=sweep.pk)


# --- 6. exports --------------------------------------------------------------------------------

@require_safe
@login_required
def export_table(request: HttpRequest, sweep_id: int, fmt: str) -> HttpResponse:
    if fmt not in exports.TABLE_FORMATS:
        raise Http404(f"no table format {fmt!r}")
    sweep = _sweep_or_404(sweep_id)
    if sweep.status != Sweep.Status.DONE:  # a file would show partial counts as the table
        waiting = sum(selectors.waiting_by_config(sweep).values())
        why = f"{waiting} scenario{pluralize(waiting)} wait{pluralize(waiting, 's,')} for an answer" if waiting else (
            "its counts grow until every chunk is stored")
        return render(request, "sweeps/bad_request.html", {
            "title": "Not final yet",
            "message": f"sweep {sweep.pk} is {sweep.status}: its table is not final ({why}); export it once the "
                       "sweep is done. The scenario rows can be exported now."}, status=409)
    text = exports.table_text(selectors.sweep_table_rows(sweep), fmt)
    response = HttpResponse(text, content_type=exports.TABLE_FORMATS[fmt][1])
    response["Content-Disposition"] = f'attachment; filename="{exports.filename(sweep.pk, "table", fmt)}"'
    return response


@require_safe
@login_required
def export_scenarios(request: HttpRequest, sweep_id: int, fmt: str) -> HttpResponseBase:
    if fmt not in exports.ROW_FORMATS:
        raise Http404(f"no scenario format {fmt!r}")
    sweep = _sweep_or_404(sweep_id)
    form = _filter_form(request, sweep)
    if not form.is_valid():
        return _bad_request(request, "bad filter values", form)
    rows = selectors.scenario_export_rows(sweep, form.filters())
    body = exports.rows_csv(rows) if fmt == "csv" else exports.rows_jsonl(rows)
    response = StreamingHttpResponse(body, content_type=exports.ROW_FORMATS[fmt])
    response["Content-Disposition"] = f'attachment; filename="{exports.filename(sweep.pk, "scenarios", fmt)}"'
    return response
