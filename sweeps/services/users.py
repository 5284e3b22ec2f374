"""Users and their roles (sweeps.roles): the one write behind `manage.py user`."""

from __future__ import annotations

import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.auth.password_validation import validate_password
from django.db import transaction

from sweeps import roles
from sweeps.errors import BadRequest


def user_set_role(*, username: str, role: str, password: str | None = None) -> tuple[Any, str | None]:
    """Make `role` the user's only role group, creating the user first if there is none by that name,
    and set `password` if given (a new user without one gets a generated one). Staff also get
    is_staff (the admin: users, lockouts); the other roles lose it (a superuser stays one).
    Returns (user, the generated password or None). Raises BadRequest for an unknown role or an
    empty username, django's ValidationError for a password the validators refuse; nothing is stored then."""
    if role not in roles.ROLES:
        raise BadRequest(f"unknown role {role!r} (choose from {', '.join(roles.ROLES)})")
    username = (username or "").strip()
    if not username:
        raise BadRequest("the username is empty")
    users = get_user_model().objects
    with transaction.atomic():
        user, created = users.get_or_create(username=username)
        generated = secrets.token_urlsafe(12) if created and password is None else None
        new = generated if password is None else password
        if new is not None:
            validate_password(new, user)
            user.set_password(new)
        user.is_staff = role == "staff" or user.is_superuser
        user.save()
        user.groups.remove(*Group.objects.filter(name__in=roles.ROLES))
        user.groups.add(Group.objects.get(name=role))
    return user, generated
