"""Exports: the table once final (made in the request), the scenario rows (a file a worker makes).

Rules:
- The table's and the comparison's exports are made in the request: one row per configuration,
  at most MAX_SYNC_EXPORT_ROWS (refused beyond it, which launching's MAX_CONFIGS rules out).
- The scenario rows of a sweep can be 800,000 lines: a web process never writes them. Asking for
  them (POST to the export URL, with the filters in its query) finds or makes the export of the
  rows as they are now and queues its build (services/export_files.py); its page shows the
  progress and reloads itself (a meta refresh: no script) until the file is ready, then links to it.
  A GET of the export URL serves the ready file of the rows as they are now, or goes to the page of
  the export under way, or offers the button that asks for it. No view waits for a build.
- Every export is read access as the pages with call arguments are (viewer_access): any user who
  may read the sweep's scenario rows may ask for and fetch their export, whoever asked first.
"""

from __future__ import annotations

import json
from datetime import timedelta

from django.http import FileResponse, Http404, HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import redirect, render
from django.template.defaultfilters import pluralize
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_safe

from sweeps import exports, selectors
from sweeps.configs import conditions_of
from sweeps.limits import EXPORT_REFRESH_SECONDS, EXPORT_STALL_SECONDS
from sweeps.models import Export, Sweep
from sweeps.services import export_files
from sweeps.views._common import bad_request, filter_form, sweep_or_404, too_many_rows, viewer_access


@require_safe
@viewer_access
def export_table(request: HttpRequest, sweep_id: int, fmt: str) -> HttpResponse:
    if fmt not in exports.TABLE_FORMATS:
        raise Http404(f"no table format {fmt!r}")
    sweep = sweep_or_404(sweep_id)
    if sweep.status != Sweep.Status.DONE:  # a file would show partial counts as the table
        waiting = sum(selectors.waiting_by_config(sweep).values())
        why = (
            f"{waiting} scenario{pluralize(waiting)} wait{pluralize(waiting, 's,')} for an answer"
            if waiting
            else ("its counts grow until every chunk is stored")
        )
        return render(
            request,
            "sweeps/bad_request.html",
            {
                "title": "Not final yet",
                "message": f"sweep {sweep.pk} is {sweep.status}: its table is not final ({why}); export it once the "
                "sweep is done. The scenario rows can be exported now.",
            },
            status=409,
        )
    rows = selectors.sweep_table_rows(sweep)
    refused = too_many_rows(request, len(rows))
    if refused is not None:
        return refused
    text = exports.table_text(rows, fmt, conditions_of(sweep))
    response = HttpResponse(text, content_type=exports.TABLE_FORMATS[fmt][1])
    response["Content-Disposition"] = f'attachment; filename="{exports.filename(sweep.pk, "table", fmt)}"'
    return response


@require_http_methods(["GET", "HEAD", "POST"])
@viewer_access
def export_scenarios(request: HttpRequest, sweep_id: int, fmt: str) -> HttpResponseBase:
    if fmt not in exports.ROW_FORMATS:
        raise Http404(f"no scenario format {fmt!r}")
    sweep = sweep_or_404(sweep_id)
    form = filter_form(request, sweep)
    if not form.is_valid():
        return bad_request(request, "bad filter values", form)
    filters = form.filters()
    if request.method == "POST":
        export = export_files.export_request(user=request.user, sweep_id=sweep.pk, fmt=fmt, filters=filters)
        return redirect("sweeps:export", export.pk)
    export = export_files.export_find(sweep_id=sweep.pk, fmt=fmt, filters=filters)
    if export is not None and export.status == Export.Status.READY:
        return _file(export)
    if export is not None:
        return redirect("sweeps:export", export.pk)
    query = request.GET.urlencode()
    return render(
        request,
        "sweeps/export.html",
        {
            "sweep": sweep,
            "fmt": fmt,
            "export": None,
            "filters": filters,
            "action": request.path + (f"?{query}" if query else ""),
        },
    )


def _export_or_404(export_id: int) -> Export:
    export = (
        Export.objects.select_related("sweep").defer("sweep__job_source", "sweep__table").filter(pk=export_id).first()
    )
    if export is None:
        raise Http404(f"no export {export_id}")
    return export


@require_http_methods(["GET", "HEAD", "POST"])
@viewer_access
def export_detail(request: HttpRequest, export_id: int) -> HttpResponse:
    """The export's progress, reloading itself until ready; POST asks for it again (the same rows
    and filters, as they are now): a failed or lost one is queued again."""
    export = _export_or_404(export_id)
    if request.method == "POST":
        again = export_files.export_request(
            user=request.user, sweep_id=export.sweep_id, fmt=export.fmt, filters=json.loads(export.query or "{}")
        )
        return redirect("sweeps:export", again.pk)
    waiting = export.status in (Export.Status.PENDING, Export.Status.RUNNING)
    still = (timezone.now() - export.beat_at) if waiting and export.beat_at else timedelta(0)
    return render(
        request,
        "sweeps/export.html",
        {
            "sweep": export.sweep,
            "fmt": export.fmt,
            "export": export,
            "filters": json.loads(export.query or "{}"),
            "refresh": EXPORT_REFRESH_SECONDS if waiting else None,
            "lost": waiting and still.total_seconds() > EXPORT_STALL_SECONDS,
            "still": int(still.total_seconds()),
        },
    )


@require_safe
@viewer_access
def export_file(request: HttpRequest, export_id: int) -> HttpResponseBase:
    """The ready file (read from disk as it is sent); the export's page while it is not ready."""
    export = _export_or_404(export_id)
    if export.status != Export.Status.READY:
        return redirect("sweeps:export", export.pk)
    return _file(export)


def _file(export: Export) -> FileResponse:
    try:
        handle = export_files.file_path(export).open("rb")
    except FileNotFoundError:
        raise Http404(f"export {export.pk}: its file is gone") from None
    return FileResponse(
        handle,
        as_attachment=True,
        content_type=exports.ROW_FORMATS[export.fmt],
        filename=exports.filename(export.sweep_id, "scenarios", export.fmt),
    )
