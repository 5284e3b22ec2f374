"""Two sweeps compared: the page and its CSV."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from agentcore import COLUMNS, CONDITIONS
from sweeps import exports, selectors
from sweeps.configs import conditions_of
from sweeps.forms.lists import CompareForm
from sweeps.models import Sweep
from sweeps.views._common import bad_request, read_access, sweep_or_404, table_titles, too_many_rows, viewer_access


def _compare_pair(request: HttpRequest) -> tuple[CompareForm, tuple[Sweep, Sweep] | None, HttpResponse | None]:
    """The compare form, the two sweeps when both were chosen, or the 400 page for bad values
    (an unknown sweep raises Http404)."""
    form = CompareForm(request.GET)
    if not form.is_valid():
        form.offer(selectors.compare_choices())
        return form, None, bad_request(request, "bad sweep IDs to compare", form)
    ids = form.pair()
    form.offer(
        selectors.compare_choices(
            [i for i in (form.cleaned_data.get("a"), form.cleaned_data.get("b")) if i is not None]
        )
    )
    if ids is None:
        return form, None, None
    return form, (sweep_or_404(ids[0]), sweep_or_404(ids[1])), None


@require_safe
@read_access
def compare(request: HttpRequest) -> HttpResponse:
    form, pair, bad = _compare_pair(request)
    if bad is not None:
        return bad
    columns = selectors.table_columns(*pair) if pair is not None else COLUMNS
    context: dict[str, Any] = {
        "form": form,
        "titles": table_titles(columns),
        "side_columns": len(columns),
        "all_columns": 1 + 2 * len(columns),
    }
    if pair is not None:
        a, b = pair
        rows = selectors.sweep_compare(a, b)
        setup = [
            (what, getattr(a, field), getattr(b, field))
            for what, field in (("job", "job_name"), ("depth", "depth"), ("job runs", "runs"), ("person", "person"))
        ]
        setup += [(c.title, c.text(getattr(a, c.name)), c.text(getattr(b, c.name))) for c in CONDITIONS]
        context.update(
            {
                "a": a,
                "b": b,
                "rows": rows,
                "changed": sum(r["changed"] for r in rows),
                "only_a": sum(r["b"] is None for r in rows),
                "only_b": sum(r["a"] is None for r in rows),
                "setup_differs": [s for s in setup if s[1] != s[2]],
                "same_job": selectors.same_job(a, b),
                "query": request.GET.urlencode(),
            }
        )
    return render(request, "sweeps/compare.html", context)


@require_safe
@viewer_access
def compare_export(request: HttpRequest) -> HttpResponse:
    form, pair, bad = _compare_pair(request)
    if bad is not None:
        return bad
    if pair is None:
        return bad_request(request, "choose two sweeps to compare (a and b)", form)
    a, b = pair
    rows = selectors.sweep_compare(a, b)
    refused = too_many_rows(request, len(rows))
    if refused is not None:
        return refused
    response = HttpResponse(
        exports.compare_csv(rows, a.pk, b.pk, conditions_of(a), conditions_of(b), selectors.table_columns(a, b)),
        content_type="text/csv; charset=utf-8",
    )
    response["Content-Disposition"] = f'attachment; filename="compare-sweep-{a.pk}-with-{b.pk}.csv"'
    return response
