"""What every page module shares: access decorators, the 400 page, the 413 page of a table too large
to export in a request, a sweep or 404, safe `next` and `back` parameters."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from functools import wraps
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.core.paginator import InvalidPage, Paginator
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import render
from django.urls import Resolver404, resolve
from django.utils.http import url_has_allowed_host_and_scheme

from agentcore import COLUMNS
from agentcore import TABLE_TITLES as TITLES
from sweeps import roles, selectors
from sweeps.forms.lists import BackForm, ScenarioFilterForm
from sweeps.limits import MAX_SYNC_EXPORT_ROWS
from sweeps.models import Sweep

View = Callable[..., HttpResponseBase]


log = logging.getLogger(__name__)


# The table's header on the sweep and compare pages: the configuration, then every column in
# agentcore's titles. The pages show every column (text and Markdown hide the ones no row has): a
# number the live poll fills in always has its cell, and two compared tables the same columns
# (thrice with a depth-3 sweep: selectors.table_columns).
def table_titles(columns: Sequence[str] = COLUMNS) -> tuple[str, ...]:
    return ("design", *(TITLES[c] for c in columns))


def _reading(view: View, *, public: bool) -> View:
    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if not request.user.is_authenticated:
            if public and settings.SWEEPSITE_PUBLIC_READ:
                return view(request, *args, **kwargs)
            return redirect_to_login(request.get_full_path())
        if not roles.may_read(request.user):
            raise PermissionDenied(roles.read_refusal(request.user))
        return view(request, *args, **kwargs)

    return wrapped


def read_access(view: View) -> View:
    """A page without call arguments or keys: the viewer role or more, or anyone when
    SWEEPSITE_PUBLIC_READ is on (read at request time)."""
    return _reading(view, public=True)


def viewer_access(view: View) -> View:
    """A page or file with call arguments or keys (questions, timelines, witnesses, exports): the
    viewer role or more, whatever SWEEPSITE_PUBLIC_READ says."""
    return _reading(view, public=False)


def allow(request: HttpRequest, action: str, owner_id: int | None = None) -> None:
    """403 with the reason unless the user's role allows `action` (sweeps.roles) on a sweep or audit
    owned by `owner_id`."""
    if not roles.may(request.user, action, owner_id):
        raise PermissionDenied(roles.refusal(request.user, action))


def bad_request(request: HttpRequest, message: str, form: Any = None) -> HttpResponse:
    return render(request, "sweeps/bad_request.html", {"message": message, "form": form}, status=400)


def too_many_rows(request: HttpRequest, rows: int) -> HttpResponse | None:
    """The 413 page if a table to export in the request has more rows than MAX_SYNC_EXPORT_ROWS."""
    if rows <= MAX_SYNC_EXPORT_ROWS:
        return None
    return render(
        request,
        "sweeps/bad_request.html",
        {"title": "Too large", "message": f"{rows} rows: more than the {MAX_SYNC_EXPORT_ROWS} exported in a request"},
        status=413,
    )


def sweep_or_404(sweep_id: int) -> Sweep:
    try:
        return selectors.sweep_get(sweep_id)
    except Sweep.DoesNotExist:
        raise Http404(f"no sweep {sweep_id}") from None


def script_json(text: str) -> str:
    """JSON text safe inside <script type="application/json"> (as django's json_script escapes it)."""
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def page_or_none(paginator: Paginator, number: int | None) -> Any:
    try:
        return paginator.page(number or 1)
    except InvalidPage:
        return None


def next_url(request: HttpRequest, candidate: str | None, fallback: str) -> str:
    """`next` if it is a path on this site ("/..."), else the fallback. (A bare word would be taken
    for a URL name by redirect(), a relative path would depend on the current URL.)"""
    if (
        candidate
        and candidate.startswith("/")
        and url_has_allowed_host_and_scheme(
            candidate, allowed_hosts={request.get_host()}, require_https=request.is_secure()
        )
    ):
        return candidate
    return fallback


# The pages a scenario's "back" link may return to (the pages that link to a scenario).
BACK_PAGES = {"sweeps:scenarios", "sweeps:heatmap", "sweeps:sweep_questions", "sweeps:questions", "sweeps:detail"}


def back_url(request: HttpRequest, fallback: str) -> str:
    """The `back` parameter when it is a path of this site to one of BACK_PAGES, else the fallback."""
    form = BackForm(request.GET)
    candidate = form.cleaned_data.get("back") if form.is_valid() else None
    url = next_url(request, candidate, "")
    if not url:
        return fallback
    try:
        match = resolve(urlsplit(url).path)
    except Resolver404:
        return fallback
    return url if match.view_name in BACK_PAGES else fallback


def filter_form(request: HttpRequest, sweep: Sweep) -> ScenarioFilterForm:
    return ScenarioFilterForm(request.GET, sweep=sweep)
