"""Requests refused before their body is read.

Rules:
- RequestSizeLimitMiddleware comes first: a Content-Length over settings.SWEEPSITE_MAX_REQUEST_BYTES
  is answered 413 at once. Nothing reads the body; under runserver (`make run`) the handler, which
  would drain the unread body after the answer, is told there is none.
- AnonymousWriteMiddleware comes right after AuthenticationMiddleware, before any view and so before
  CsrfViewMiddleware.process_view, which reads request.POST for the token: a POST, PUT, PATCH or
  DELETE from a user who is not logged in is refused (the admin's pages send to the admin's log-in,
  the others answer 403 with the site's 403 page saying to log in), except the views named in
  settings.SWEEPSITE_ANONYMOUS_WRITES (the log-in and log-out forms). Knowing the user reads the
  session cookie, never the body (a database that cannot be reached for the session: the 503 page
  of sweepsite.middleware, as a view's read would give). The 403 page is rendered here: Django's own 403 view checks the
  CSRF token, and so reads the body, when the request carries a CSRF cookie.
- The answers are ordinary responses (a WSGI application may not send `Connection: close` itself).
  gunicorn's sync workers close the connection after every answer. runserver closes it after the
  413, which leaves before CommonMiddleware could give it a Content-Length; after the 403 it keeps
  it open, and should the client send the body after all, takes its first line for a bad request.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.core.handlers.wsgi import LimitedStream
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import render
from django.urls import Resolver404, resolve, reverse

from sweepsite import middleware

WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})

TOO_LARGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Request too large - sweepsite</title></head>
<body><main><h1>Request too large</h1>
<p class="error" id="too-large">This request's body is {length:,} bytes; the limit is {limit:,} bytes (a job file
of at most {job:,} bytes and the rest of the form). Nothing was read or stored.</p></main></body></html>
"""


def _unread(request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
    """The answer to a request whose body stays unread (see the rules)."""
    stream = request.environ.get("wsgi.input")
    if isinstance(stream, LimitedStream):  # runserver's own stream: it drains what is left after the answer
        stream.limit = 0
    return response


def content_length(request: HttpRequest) -> int:
    try:
        return max(int(request.META.get("CONTENT_LENGTH") or 0), 0)
    except ValueError:
        return 0


class RequestSizeLimitMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        length, limit = content_length(request), settings.SWEEPSITE_MAX_REQUEST_BYTES
        if length > limit:
            page = TOO_LARGE.format(length=length, limit=limit, job=settings.SWEEPSITE_MAX_JOB_BYTES)
            return _unread(request, HttpResponse(page, status=413))
        return self.get_response(request)


class AnonymousWriteMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        if request.method in WRITES and not self._allowed(request):
            try:
                anonymous = not request.user.is_authenticated  # a session cookie: the session's row
            except middleware.UNREACHABLE as e:  # outside any view: the 503 page said here
                return _unread(request, middleware.unavailable(request, e))
            if anonymous:
                return _unread(request, self._refuse(request))
        return self.get_response(request)

    @staticmethod
    def _allowed(request: HttpRequest) -> bool:
        try:
            match = resolve(request.path_info)
        except Resolver404:
            return False
        return match.view_name in settings.SWEEPSITE_ANONYMOUS_WRITES

    @staticmethod
    def _refuse(request: HttpRequest) -> HttpResponseBase:
        if request.path_info.startswith(reverse("admin:index")):
            return redirect_to_login(request.get_full_path(), reverse("admin:login"))
        # The site's 403 page rendered here: Django's 403 view runs CSRF's check, which reads the body.
        return render(request, "403.html", {"exception": "log in to do this"}, status=403)
