"""The sweeps list with its launch form, the planned size (JSON), and the launch itself."""

from __future__ import annotations

from functools import partial
from typing import Any

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from sweeps import configs, limits, roles, selectors
from sweeps import plan as planning
from sweeps.errors import ServiceUnreachable, reaching
from sweeps.forms.jobfiles import new_request_token
from sweeps.forms.launch import LaunchForm
from sweeps.forms.lists import PageForm
from sweeps.services import launch
from sweeps.views import errors
from sweeps.views._common import allow, bad_request, page_or_none, read_access


@require_safe
@read_access
def sweep_list(request: HttpRequest) -> HttpResponse:
    form = plan = None
    if roles.may(request.user, "launch"):
        form = LaunchForm(initial={"request_token": new_request_token()})
        # The default form's planned size (cached per process); the page's script asks again on changes.
        plan = _plan_summary(
            planning.sweep_plan(
                job_source=configs.builtin_job_source("triage"),
                configs=configs.table_configs_for(),
                depth=form.fields["depth"].initial,
                runs=form.fields["runs"].initial,
                person=form.fields["person"].initial,
            ),
            form.fields["depth"].initial,
            form.fields["runs"].initial,
        )
    return _render_list(request, form, plan=plan)


def _render_list(
    request: HttpRequest, form: LaunchForm | None, status: int = 200, plan: dict[str, Any] | None = None
) -> HttpResponse:
    pf = PageForm(request.GET)
    if not pf.is_valid():
        return bad_request(request, "bad page number", pf)
    number = pf.cleaned_data.get("page")
    paginator = Paginator(selectors.sweep_list(), limits.SWEEPS_PER_PAGE)
    page = page_or_none(paginator, number)
    if page is None:
        return bad_request(request, f"there is no page {number} (pages 1 to {paginator.num_pages})")
    # The role is named only to a user who may not launch (a template calls it then: one query less).
    # A bound form (a launch refused) shows what was sent and why: never kept in the page cache.
    return render(
        request,
        "sweeps/sweep_list.html",
        {
            "page": page,
            "form": form,
            "plan": plan,
            "role": partial(roles.role_name, request.user),
            "launch_form_seconds": 0 if form is None or form.is_bound else limits.PAGE_CACHE_SECONDS,
        },
        status=status,
    )


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{max(round(seconds), 1)} s"
    if seconds < 90 * 60:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


def _plan_summary(plan: planning.Plan, depth: int, runs: int) -> dict[str, Any]:
    """The planned size with the time estimate from selectors.measured_rate, and a line saying both."""
    rate, sweeps, which = selectors.measured_rate(depth=depth, runs=runs)
    seconds = plan.scenarios / rate
    shown = plan.shown
    basis = (
        f"measured over {sweeps} finished sweep{'s' * (sweeps != 1)} here{'' if which == 'any' else ' (' + which + ')'}"
        if sweeps
        else "the default rate: no sweep has finished here yet"
    )
    text = (
        f"{plan.chunks:,} chunk{'s' * (plan.chunks != 1)} · {'' if plan.exact else 'about '}{shown:,} "
        f"scenario{'s' * (shown != 1)} · about {_duration(seconds)} at {rate:,.0f} scenarios/s, {basis}"
    )
    return {
        "chunks": plan.chunks,
        "scenarios": plan.scenarios,
        "exact": plan.exact,
        "seconds": round(seconds, 1),
        "rate": round(rate, 1),
        "rate_sweeps": sweeps,
        "rate_basis": which,
        "text": text,
        "configs": [{"name": n, "chunks": c, "scenarios": k} for n, c, k in plan.configs],
    }


@require_http_methods(["GET", "HEAD", "POST"])
def sweep_launch(request: HttpRequest) -> HttpResponse:
    """POST launches; GET (a reload of the address the form posted to) goes to the form."""
    if request.method != "POST":
        return HttpResponseRedirect(reverse("sweeps:list") + "#launch")
    return _launch(request)


@require_POST
def sweep_plan(request: HttpRequest) -> JsonResponse:
    """The launch form's planned size, as JSON, from the form's fields (nothing stored or enqueued):
    {"chunks", "scenarios", "exact", "seconds", "text", ...}, or 400 with {"errors": [...]}."""
    allow(request, "launch")
    form = LaunchForm(request.POST, request.FILES)
    asked = form.launch_request() if form.is_valid() else None
    if asked is None:
        problems = [f"{'' if field == '__all__' else field + ': '}{m}" for field, ms in form.errors.items() for m in ms]
        return JsonResponse({"errors": problems}, status=400)
    return JsonResponse(_plan_summary(asked.plan, asked.depth, asked.runs))


def _launch(request: HttpRequest) -> HttpResponse:
    allow(request, "launch")
    form = LaunchForm(request.POST, request.FILES)
    if not form.is_valid():
        if "request_token" in form.errors:  # a mangled form: give the next submit a fresh token
            form.data = form.data.copy()
            form.data["request_token"] = new_request_token()
        return _render_list(request, form, status=400)
    asked = form.launch_request()
    if asked is None:
        return _render_list(request, form, status=400)
    try:
        with reaching():
            sweep = launch.sweep_create(
                user=request.user, request_token=form.cleaned_data["request_token"], asked=asked
            )
    except ValidationError as e:
        for message in e.messages:
            form.add_error(None, message)
        return _render_list(request, form, status=400)
    except launch.StoredUnqueued as e:  # stored, and partly queued: the message says what and how to go on
        form.add_error(None, f"the sweep did not start in full: {e}")
        return _render_list(request, form, status=507)
    except ServiceUnreachable as e:  # rolled back: nothing is stored
        form.add_error(
            None, errors.unreachable("the sweep could not be started", e, then="launch it again (nothing was stored)")
        )
        return _render_list(request, form, status=errors.unreachable_status(e))
    messages.success(request, f"sweep {sweep.pk} launched")
    return redirect("sweeps:detail", sweep_id=sweep.pk)
