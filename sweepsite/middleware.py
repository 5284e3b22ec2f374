"""A database that cannot be reached gives a 503 page saying so, not a 500.

Views handle the broker's and the database's errors where they write (the launch form shows its
message); this catches the rest: a page whose reads fail, a session that cannot be loaded. Only
connection trouble (OperationalError, InterfaceError) is turned into a 503: any other database
error is a bug and stays a 500. The page is plain HTML, rendered without touching the database; the
error's details go to the log, not to the page.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse

log = logging.getLogger(__name__)

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Service unavailable - sweepsite</title></head>
<body><main><h1>Service unavailable</h1>
<p class="error" id="unavailable">The database is unreachable, so this page cannot be shown and nothing was
changed. Try again in a moment.</p></main></body></html>
"""


class DatabaseUnavailableMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, UNREACHABLE):
            return None
        return unavailable(request, exception)


# The database errors that mean "cannot be reached" (any other is a bug).
UNREACHABLE = (OperationalError, InterfaceError)


def unavailable(request: HttpRequest, exception: Exception) -> HttpResponse:
    """The 503 page for a database that cannot be reached (the details go to the log)."""
    log.error(
        "%s %s: the database is unreachable (%s: %s)", request.method, request.path, type(exception).__name__, exception
    )
    response = HttpResponse(PAGE, status=503)
    response["Retry-After"] = "30"
    return response
