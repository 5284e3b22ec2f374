"""The page django-axes answers a locked-out login with: the login page itself, status 429, saying
why the login was refused, for how long, and who can lift it (settings.AXES_LOCKOUT_CALLABLE).

A lockout holds for one username from one address (AXES_LOCKOUT_PARAMETERS): the same person from
another address, and other users from this one, still log in. The password is never checked while
locked out, so the right one is refused too, with this page.
"""

from __future__ import annotations

import math
from typing import Any

from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def lockout_message() -> str:
    failures = settings.AXES_FAILURE_LIMIT
    cooloff = settings.AXES_COOLOFF_TIME
    minutes = math.ceil(cooloff.total_seconds() / 60) if cooloff else 0  # a fraction of a minute: 1, not 0
    wait = (f"try again in {minutes} minute{'s' if minutes != 1 else ''}, or ask staff to unlock it"
            if cooloff else "ask staff to unlock it")
    return (f"Too many failed logins: after {failures} wrong passwords for this username from your address, "
            f"logging in with it from here is locked (the right password is refused too). {wait.capitalize()}.")


def lockout_response(request: HttpRequest, original_response: Any = None, credentials: Any = None) -> HttpResponse:
    username = (credentials or {}).get("username") or request.POST.get("username", "")
    form = AuthenticationForm(request, initial={"username": username})
    return render(request, "registration/login.html",
                  {"form": form, "locked_out": lockout_message(), "next": request.POST.get("next", "")}, status=429)
