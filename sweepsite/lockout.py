"""Throttled logins: the bounds django-axes enforces, and the page it answers a lockout with.

Rules:
- A lockout holds for one username from one address (AXES_LOCKOUT_PARAMETERS) after
  AXES_FAILURE_LIMIT failures: the same person from another address, and other users from this one,
  still log in.
- An address is locked out for every username after SWEEPSITE_ADDRESS_LOGIN_FAILURES failures from
  it, whatever the usernames (AddressBoundHandler): a guess at each of many usernames counts too.
  A successful login clears only its own username's failures from that address, never the
  address's others (a guesser with an account of their own cannot reset the count).
- The password is never checked while locked out, so the right one is refused too, with the login
  page itself, status 429, saying why, for how long, and who can lift it (AXES_LOCKOUT_CALLABLE).
- Both counts are of failures within the cool-off (AXES_COOLOFF_TIME), or all of them without one.
"""

from __future__ import annotations

import math
from typing import Any

from axes.handlers.database import AxesDatabaseHandler
from axes.helpers import get_client_ip_address, get_cool_off, get_failure_limit
from axes.models import AccessAttempt
from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm
from django.db.models import Sum
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone


def address_failures(request: HttpRequest) -> int:
    """Failed logins from the request's address, for any usernames (within the cool-off)."""
    address = getattr(request, "axes_ip_address", None) or get_client_ip_address(request)
    attempts = AccessAttempt.objects.filter(ip_address=address)
    cooloff = get_cool_off(request)
    if cooloff is not None:
        at = getattr(request, "axes_attempt_time", None) or timezone.now()
        attempts = attempts.filter(attempt_time__gte=at - cooloff)
    return attempts.aggregate(n=Sum("failures_since_start"))["n"] or 0


def address_locked(request: HttpRequest) -> bool:
    return address_failures(request) >= settings.SWEEPSITE_ADDRESS_LOGIN_FAILURES


class AddressBoundHandler(AxesDatabaseHandler):
    """axes's database handler with the address's bound beside the pair's (see the rules above)."""

    def get_failures(self, request: HttpRequest, credentials: dict[str, Any] | None = None) -> int:
        # axes compares this one figure with AXES_FAILURE_LIMIT: a locked address reads as at the limit.
        pair = super().get_failures(request, credentials)
        if address_locked(request):
            return max(pair, get_failure_limit(request, credentials))
        return pair


def lockout_message(*, address: bool = False) -> str:
    cooloff = settings.AXES_COOLOFF_TIME
    minutes = math.ceil(cooloff.total_seconds() / 60) if cooloff else 0  # a fraction of a minute: 1, not 0
    wait = (
        f"try again in {minutes} minute{'s' if minutes != 1 else ''}, or ask staff to unlock it"
        if cooloff
        else "ask staff to unlock it"
    )
    if address:
        return (
            f"Too many failed logins from your address: after {settings.SWEEPSITE_ADDRESS_LOGIN_FAILURES} wrong "
            "passwords from it, whatever the usernames, logging in from here is locked for every username "
            f"(the right password is refused too). {wait.capitalize()}."
        )
    return (
        f"Too many failed logins: after {settings.AXES_FAILURE_LIMIT} wrong passwords for this username from "
        f"your address, logging in with it from here is locked (the right password is refused too). "
        f"{wait.capitalize()}."
    )


def lockout_response(request: HttpRequest, original_response: Any = None, credentials: Any = None) -> HttpResponse:
    username = (credentials or {}).get("username") or request.POST.get("username", "")
    form = AuthenticationForm(request, initial={"username": username})
    message = lockout_message(address=address_locked(request))
    return render(
        request,
        "registration/login.html",
        {"form": form, "locked_out": message, "next": request.POST.get("next", "")},
        status=429,
    )
