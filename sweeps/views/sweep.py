"""A sweep's page: its table and progress (and the progress poll), resume, cancel, delete, name and
notes."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
from django.shortcuts import redirect, render
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from agentcore import COLUMNS, DEPTH_COLUMNS
from sweeps import limits, roles, selectors, targets
from sweeps.forms.lists import SweepNotesForm
from sweeps.models import Sweep
from sweeps.services import lifecycle, recovery
from sweeps.views import errors
from sweeps.views._common import allow, bad_request, read_access, sweep_or_404, table_titles

# The table's columns and the scenario filter each number links to. A count column's number is the
# list's count; a sum column names its metric (`sum`), whose total over the list the list states.
COLUMN_FILTERS = {
    "once": {"twice": "no"},
    "twice": {"twice": "yes"},
    "with_dups": {"has_dups": "yes"},
    "dups": {"has_dups": "yes", "sum": "duplicates"},
    "missing": {"missing": "yes", "sum": "missing"},
    "wrong": {"has_wrong": "yes", "sum": "wrong"},
    "gave_up": {"gave_up": "yes", "sum": "gave_up"},
    "denied_ran": {"denied_ran": "yes", "sum": "denied_ran"},
    "asks": {"asked": "yes", "sum": "asks"},
    "avoidable": {"avoidable": "yes", "sum": "avoidable"},
    "calls_plus": {"extra_calls": "yes", "sum": "calls_plus"},
    "thrice": {"thrice": "yes"},
}
assert tuple(COLUMN_FILTERS) == COLUMNS + DEPTH_COLUMNS, "a link per column of agentcore's table"
# At depth 3 a thrice scenario has a second point too: the twice column's scenarios have no third.
DEPTH3_FILTERS = {"twice": {"twice": "yes", "thrice": "no"}}


@require_safe
@read_access
def sweep_detail(request: HttpRequest, sweep_id: int) -> HttpResponse:
    sweep = sweep_or_404(sweep_id)
    table = _table(sweep)
    columns = selectors.table_columns(sweep)
    progress = selectors.sweep_progress(sweep)
    may = roles.sweep_actions(request.user, sweep.created_by_id)
    return render(
        request,
        "sweeps/sweep_detail.html",
        {
            "sweep": sweep,
            "table": table,
            "rows": table["rows"],
            "titles": table_titles(columns),
            "progress": progress,
            "stalled": _stalled(sweep, progress),
            "may": may,
            "cancellable": sweep.status in (Sweep.Status.RUNNING, Sweep.Status.WAITING),
            "notes_form": SweepNotesForm(instance=sweep) if may["edit"] else None,
            "sampled": selectors.sampled_rates(sweep),
        },
    )


def _table(sweep: Sweep) -> dict[str, Any]:
    """The comparison table, for the sweep page and for its progress poll alike: {"partial",
    "waiting", "rows"}, each row with its cells, a number (None when it is not final) and the link
    to the scenarios behind it (COLUMN_FILTERS), and with how many of its scenarios wait."""
    table = selectors.sweep_table_live(sweep)
    base = reverse("sweeps:scenarios", args=[sweep.pk])
    rows = []
    groups = selectors.row_configs(sweep.configs)
    for i, row in enumerate(table["rows"]):
        # A sampled target's row stands for its passes' configurations: its numbers open all of them.
        which = (
            {"config": groups[i][0]}
            if len(groups[i]) == 1
            else {"design": targets.design_column(sweep.configs[groups[i][0]])}
        )
        waiting = row["waiting"]
        not_final = (
            f"not final: {waiting} scenario{pluralize(waiting)} of this row wait{pluralize(waiting, 's,')} "
            "for an answer"
            if waiting
            else ""
        )
        cells = []
        for col in row["values"]:
            linked = (DEPTH3_FILTERS if sweep.depth == 3 else {}).get(col) or COLUMN_FILTERS[col]
            query = "&".join(f"{k}={v}" for k, v in {**which, **linked}.items())
            value = row["values"][col]
            cells.append(
                {"col": col, "value": value, "url": f"{base}?{query}", "title": not_final if value is None else ""}
            )
        rows.append(
            {
                "name": row["name"],
                "config": groups[i][0],
                "url": f"{base}?" + "&".join(f"{k}={v}" for k, v in which.items()),
                "cells": cells,
                "waiting": waiting,
                "waiting_url": f"{base}?config={groups[i][0]}&status=waiting",
                "runtime": sweep.configs[groups[i][0]].get("runtime", ""),
            }
        )
    return {"partial": table["partial"], "waiting": table["waiting"], "rows": rows}


def _stalled(sweep: Sweep, progress: dict[str, Any]) -> bool:
    """Chunks are missing and nothing will store them: the sweep failed or was cancelled, or no chunk
    was stored for a while. (A cancelled sweep is always offered its resume.)"""
    if sweep.status == Sweep.Status.CANCELLED:
        return True
    if progress["chunks_stored"] >= progress["total_chunks"]:
        return False
    return sweep.status == Sweep.Status.FAILED or (
        sweep.status == Sweep.Status.RUNNING and progress["idle_seconds"] >= limits.RESUME_OFFER_SECONDS
    )


@require_safe
@read_access
def sweep_progress(request: HttpRequest, sweep_id: int) -> JsonResponse:
    """The progress box's numbers and the comparison table (the page updates both in place)."""
    sweep = sweep_or_404(sweep_id)
    return JsonResponse({**selectors.sweep_progress(sweep), "table": _table(sweep)})


@require_POST
def sweep_resume(request: HttpRequest, sweep_id: int) -> HttpResponse:
    """Its owner (operator) or staff; refused when the owner is at the limit of unfinished sweeps."""
    sweep = sweep_or_404(sweep_id)
    allow(request, "resume", sweep.created_by_id)
    ok, n = errors.action(request, lambda: recovery.sweep_resume(sweep_id=sweep.pk, limit=True), "could not resume")
    if ok:
        messages.success(request, f"{n} missing chunk{pluralize(n)} queued again" if n else "nothing to resume")
    return redirect("sweeps:detail", sweep_id=sweep.pk)


@require_POST
def sweep_cancel(request: HttpRequest, sweep_id: int) -> HttpResponse:
    """Its owner (operator) or staff (it loses nothing: stored rows stay, resume goes on)."""
    sweep = sweep_or_404(sweep_id)
    allow(request, "cancel", sweep.created_by_id)
    ok, cancelled = errors.action(
        request, lambda: lifecycle.sweep_cancel(sweep_id=sweep.pk), "could not cancel", queue=False
    )
    if ok:
        if cancelled:
            messages.success(
                request,
                f"sweep {sweep.pk} cancelled: its queued chunks are skipped and the rows "
                "stored so far are kept; resume goes on from there",
            )
        else:
            messages.info(request, f"sweep {sweep.pk} is {sweep.status}: there is nothing to cancel")
    return redirect("sweeps:detail", sweep_id=sweep.pk)


@require_http_methods(["GET", "HEAD", "POST"])
def sweep_delete(request: HttpRequest, sweep_id: int) -> HttpResponseBase:
    """GET: the confirm page (what goes: scenarios, questions); POST: delete, then the list. The
    sweep's owner (operator) or staff only (others 403); anonymous: a GET goes to log in (an
    anonymous POST never gets here: sweepsite.request_guards refuses it)."""
    if not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    sweep = sweep_or_404(sweep_id)
    allow(request, "delete", sweep.created_by_id)
    if request.method != "POST":
        return render(
            request, "sweeps/sweep_delete.html", {"sweep": sweep, "contents": selectors.sweep_contents(sweep)}
        )
    ok, removed = errors.action(
        request, lambda: lifecycle.sweep_delete(sweep_id=sweep.pk), "could not delete", queue=False
    )
    if not ok or removed is None:
        return redirect("sweeps:detail", sweep_id=sweep.pk)
    messages.success(
        request,
        f"sweep {sweep.pk} deleted with its {removed['scenarios']:,} scenario"
        f"{pluralize(removed['scenarios'])} and {removed['questions']:,} question"
        f"{pluralize(removed['questions'])}",
    )
    return redirect("sweeps:list")


@require_POST
def sweep_edit(request: HttpRequest, sweep_id: int) -> HttpResponse:
    """Save the sweep's name and notes (its owner (operator) or staff)."""
    sweep = sweep_or_404(sweep_id)
    allow(request, "edit", sweep.created_by_id)
    form = SweepNotesForm(request.POST, instance=sweep)
    if not form.is_valid():
        return bad_request(request, "bad name or notes", form)
    lifecycle.sweep_update_notes(sweep_id=sweep.pk, name=form.cleaned_data["name"], notes=form.cleaned_data["notes"])
    messages.success(request, "name and notes saved")
    return redirect("sweeps:detail", sweep_id=sweep.pk)
