"""Exports: the table once final, the scenario rows (streamed)."""

from __future__ import annotations

from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseBase,
    StreamingHttpResponse,
)
from django.shortcuts import render
from django.template.defaultfilters import pluralize
from django.views.decorators.http import require_safe

from sweeps import exports, selectors
from sweeps.configs import conditions_of
from sweeps.models import Sweep
from sweeps.views._common import (
    bad_request,
    filter_form,
    sweep_or_404,
    viewer_access,
)


@require_safe
@viewer_access
def export_table(request: HttpRequest, sweep_id: int, fmt: str) -> HttpResponse:
    if fmt not in exports.TABLE_FORMATS:
        raise Http404(f"no table format {fmt!r}")
    sweep = sweep_or_404(sweep_id)
    if sweep.status != Sweep.Status.DONE:  # a file would show partial counts as the table
        waiting = sum(selectors.waiting_by_config(sweep).values())
        why = f"{waiting} scenario{pluralize(waiting)} wait{pluralize(waiting, 's,')} for an answer" if waiting else (
            "its counts grow until every chunk is stored")
        return render(request, "sweeps/bad_request.html", {
            "title": "Not final yet",
            "message": f"sweep {sweep.pk} is {sweep.status}: its table is not final ({why}); export it once the "
                       "sweep is done. The scenario rows can be exported now."}, status=409)
    text = exports.table_text(selectors.sweep_table_rows(sweep), fmt, conditions_of(sweep))
    response = HttpResponse(text, content_type=exports.TABLE_FORMATS[fmt][1])
    response["Content-Disposition"] = f'attachment; filename="{exports.filename(sweep.pk, "table", fmt)}"'
    return response


@require_safe
@viewer_access
def export_scenarios(request: HttpRequest, sweep_id: int, fmt: str) -> HttpResponseBase:
    if fmt not in exports.ROW_FORMATS:
        raise Http404(f"no scenario format {fmt!r}")
    sweep = sweep_or_404(sweep_id)
    form = filter_form(request, sweep)
    if not form.is_valid():
        return bad_request(request, "bad filter values", form)
    rows = selectors.scenario_export_rows(sweep, form.filters())
    rows_text = exports.rows_csv if fmt == "csv" else exports.rows_jsonl
    body = rows_text(rows, conditions_of(sweep), sweep.depth)
    response = StreamingHttpResponse(body, content_type=exports.ROW_FORMATS[fmt])
    response["Content-Disposition"] = f'attachment; filename="{exports.filename(sweep.pk, "scenarios", fmt)}"'
    return response
