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
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST, require_safe
from kombu.exceptions import OperationalError as BrokerError

from agentcore.checkpoint import CheckpointError
from agentcore.jobs import JobError
from agentcore.records import COLUMNS
from agentcore.report import TITLES
from sweeps import charts, exports, selectors, services
from sweeps.forms import (
    AnswerForm,
    HeatmapForm,
    LaunchForm,
    PageForm,
    QuestionListForm,
    ScenarioFilterForm,
    new_request_token,
    printable,
)
from sweeps.models import Question, Scenario, Sweep

SWEEPS_PER_PAGE = 20
SCENARIOS_PER_PAGE = 50
QUESTIONS_PER_PAGE = 25
# A running sweep that stored no chunk for this long is offered the resume button.
STALL_SECONDS = 60
# The table's columns and the scenario filter each number links to.
COLUMN_FILTERS = {
    "once": {"twice": "no"},
    "twice": {"twice": "yes"},
    "with_dups": {"has_dups": "yes"},
    "dups": {"has_dups": "yes"},
    "missing": {"missing": "yes"},
    "asks": {"asked": "yes"},
    "calls_plus": {"extra_calls": "yes"},
}

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
    form = LaunchForm(initial={"request_token": new_request_token()}) if request.user.is_authenticated else None
    return _render_list(request, form)


def _render_list(request: HttpRequest, form: LaunchForm | None, status: int = 200) -> HttpResponse:
    pf = PageForm(request.GET)
    if not pf.is_valid():
        return _bad_request(request, "bad page number", pf)
    number = pf.cleaned_data.get("page")
    paginator = Paginator(selectors.sweep_list(), SWEEPS_PER_PAGE)
    page = _page(paginator, number)
    if page is None:
        return _bad_request(request, f"there is no page {number} (pages 1 to {paginator.num_pages})")
    return render(request, "sweeps/sweep_list.html", {"page": page, "form": form}, status=status)


@require_POST
@login_for_post
def sweep_launch(request: HttpRequest) -> HttpResponse:
    form = LaunchForm(request.POST, request.FILES)
    if not form.is_valid():
        if "request_token" in form.errors:  # a mangled form: give the next submit a fresh token
            form.data = form.data.copy()
            form.data["request_token"] = new_request_token()
        return _render_list(request, form, status=400)
    data = form.cleaned_data
    if data["preset"] == "table":
        configs = services.table_configs_for(data["job_obj"])
    else:
        configs = services.configs_for(data["designs"], data["trackers"])
    try:
        sweep = services.sweep_create(user=request.user, job_source=data["job_source"], configs=configs,
                                      depth=data["depth"], runs=data["runs"], person=data["person"],
                                      request_token=data["request_token"])
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
    base = reverse("sweeps:scenarios", args=[sweep.pk])
    rows = []
    for i, row in enumerate(selectors.sweep_table_rows(sweep)):
        cells = []
        for col in COLUMNS:
            query = "&".join(f"{k}={v}" for k, v in {"config": i, **COLUMN_FILTERS[col]}.items())
            cells.append({"value": getattr(row, col), "url": f"{base}?{query}"})
        rows.append({"name": row.name, "config": i, "url": f"{base}?config={i}", "cells": cells})
    progress = selectors.sweep_progress(sweep)
    return render(request, "sweeps/sweep_detail.html", {
        "sweep": sweep, "rows": rows, "titles": TITLES, "progress": progress,
        "stalled": _stalled(sweep, progress),
    })


def _stalled(sweep: Sweep, progress: dict[str, Any]) -> bool:
    """Chunks are missing and nothing will store them: the sweep failed, or no chunk was stored for a while."""
    if progress["chunks_stored"] >= progress["total_chunks"]:
        return False
    return sweep.status == Sweep.Status.FAILED or (
        sweep.status == Sweep.Status.RUNNING and progress["idle_seconds"] >= STALL_SECONDS)


@require_safe
@read_access
def sweep_progress(request: HttpRequest, sweep_id: int) -> JsonResponse:
    sweep = _sweep_or_404(sweep_id)
    return JsonResponse(selectors.sweep_progress(sweep))


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
        messages.success(request, f"{n} missing chunk(s) queued again" if n else "nothing to resume")
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
    fig1 = charts.design_first_figure(selectors.heatmap_config_first(sweep, metric), names, labels, metric)
    fig2 = None
    if names and sweep.depth == 2:
        cells = selectors.heatmap_first_second(sweep, config, metric)
        labels = {f: label for (c, f), label in labels.items() if c == config}
        if cells:
            fig2 = charts.first_second_figure(cells, labels, names[config], metric)
    return render(request, "sweeps/heatmap.html", {
        "sweep": sweep, "form": form, "metric": metric, "config": config, "configs": list(enumerate(names)),
        "metric_options": [(m, charts.METRIC_TITLES[m]) for m in selectors.METRICS],
        "fig1_json": _script_json(charts.to_json(fig1)),
        "fig2_json": _script_json(charts.to_json(fig2)) if fig2 else None,
        "scenarios_url": reverse("sweeps:scenarios", args=[sweep.pk]), "needs_plotly": True,
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
    try:
        page, scenarios = selectors.scenario_page(sweep, filters, number, SCENARIOS_PER_PAGE)
    except InvalidPage:
        return _bad_request(request, f"there is no page {number} with these filters")
    query = request.GET.copy()
    query.pop("page", None)
    names = [c["name"] for c in sweep.configs]
    for s in scenarios:
        s.config_name = names[s.config] if 0 <= s.config < len(names) else str(s.config)  # type: ignore[attr-defined]
    return render(request, "sweeps/scenario_list.html", {
        "sweep": sweep, "form": form, "page": page, "scenarios": scenarios, "query": query.urlencode(),
        "filtered": bool(filters),
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
    crashes = 0
    events = []
    for n, ev in enumerate(timeline, 1):
        kind = str(ev.get("kind", ""))
        if kind == "crash":
            crashes += 1
        events.append({"n": n, "kind": kind, "text": ev.get("text", ""), "crash_no": crashes if kind == "crash" else 0})
    cfgs = scenario.sweep.configs
    return render(request, "sweeps/scenario_detail.html", {
        "sweep": scenario.sweep, "scenario": scenario, "events": events, "error": error, "effects": effect_rows,
        "config_name": cfgs[scenario.config]["name"] if 0 <= scenario.config < len(cfgs) else scenario.config,
        "questions": scenario.questions.select_related("answered_by").defer("durable"),
    })


# --- 5. questions ------------------------------------------------------------------------------


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
        messages.success(request, f"{n} open question(s) answered from the tracker's records")
    return redirect("sweeps:sweep_questions", sweep_id=sweep.pk)


# --- 6. exports --------------------------------------------------------------------------------

@require_safe
@login_required
def export_table(request: HttpRequest, sweep_id: int, fmt: str) -> HttpResponse:
    if fmt not in exports.TABLE_FORMATS:
        raise Http404(f"no table format {fmt!r}")
    sweep = _sweep_or_404(sweep_id)
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
