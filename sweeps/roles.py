"""Who may do what: three roles, each a Django group holding permissions, and the one table that says
which permission each action of the dashboard needs.

Rules:
- viewer reads (sweeps.view_sweep); operator also launches sweeps and audits (add_sweep, add_audit)
  and resumes, cancels, edits, deletes and answers the questions of its own; staff does all of that
  to anyone's (change_sweep, delete_sweep, change_audit) and manages users and lockouts in the admin.
  A superuser has every permission.
- Permissions decide, never a group's name: a permission given to one user counts as the group's
  would, and a user in no group may do nothing but log in and out.
- A sweep or audit with no owner (launched by `manage.py`, or whose owner was deleted) is staff's.
- `migrate` sets the three groups' permissions to ROLES (post_migrate, so they also come back after
  a test flushes the database): change what a role may do here, not in the admin.
- Anonymous visitors read only when settings.SWEEPSITE_PUBLIC_READ is on, and never the pages that
  show call arguments or keys (sweeps.views._common: read_access and viewer_access say which).
- Management commands are the admin's: they check nothing. The per-user limit of unfinished sweeps
  is a write rule, enforced in the services (launch.sweep_create, recovery.sweep_resume).
"""

from __future__ import annotations

from typing import Any

READ = "sweeps.view_sweep"
_VIEWER = ("sweeps.view_sweep", "sweeps.view_scenario", "sweeps.view_question", "sweeps.view_audit")
_OPERATOR = (*_VIEWER, "sweeps.add_sweep", "sweeps.add_audit")
# Staff: every permission of the sweeps app (the admin's too), users and lockouts in the admin.
_STAFF = (
    "sweeps.*",
    "auth.view_user",
    "auth.add_user",
    "auth.change_user",
    "auth.view_group",
    "axes.view_accessattempt",
    "axes.delete_accessattempt",
    "axes.view_accesslog",
    "axes.view_accessfailurelog",
)
# Ordered from least to most: a user's role is the last one whose group it is in.
ROLES: dict[str, tuple[str, ...]] = {"viewer": _VIEWER, "operator": _OPERATOR, "staff": _STAFF}

# action -> (the permission to do it to one's own sweep or audit, the permission to do it to anyone's)
_OWN_SWEEP, _OWN_AUDIT = "sweeps.add_sweep", "sweeps.add_audit"
ACTIONS: dict[str, tuple[str, str]] = {
    "launch": (_OWN_SWEEP, _OWN_SWEEP),
    "resume": (_OWN_SWEEP, "sweeps.change_sweep"),
    "cancel": (_OWN_SWEEP, "sweeps.change_sweep"),
    "edit": (_OWN_SWEEP, "sweeps.change_sweep"),
    "answer": (_OWN_SWEEP, "sweeps.change_sweep"),
    "delete": (_OWN_SWEEP, "sweeps.delete_sweep"),
    "launch_audit": (_OWN_AUDIT, _OWN_AUDIT),
    "resume_audit": (_OWN_AUDIT, "sweeps.change_audit"),
}
# What a refusal says the user tried: "may not <words>".
_WORDS = {
    "launch": "launch sweeps",
    "resume": "resume this sweep",
    "cancel": "cancel this sweep",
    "edit": "edit this sweep",
    "answer": "answer this sweep's questions",
    "delete": "delete this sweep",
    "launch_audit": "launch audits",
    "resume_audit": "resume this audit",
}
assert set(_WORDS) == set(ACTIONS), "words for every action"
SWEEP_ACTIONS = ("resume", "cancel", "edit", "answer", "delete")


def may_read(user: Any) -> bool:
    return bool(getattr(user, "is_authenticated", False) and user.has_perm(READ))


def may(user: Any, action: str, owner_id: int | None = None) -> bool:
    """Whether `user` may take `action` on a sweep or audit owned by `owner_id` (None: no owner)."""
    own, anyone = ACTIONS[action]
    if not getattr(user, "is_authenticated", False):
        return False
    if user.has_perm(anyone):
        return True
    return owner_id is not None and owner_id == user.pk and user.has_perm(own)


def sweep_actions(user: Any, owner_id: int | None) -> dict[str, bool]:
    """{action: allowed} for every action on one sweep (the sweep page shows only the allowed buttons)."""
    return {action: may(user, action, owner_id) for action in SWEEP_ACTIONS}


def role_name(user: Any) -> str:
    """ "superuser", the user's highest role, or "no role"."""
    if getattr(user, "is_superuser", False):
        return "superuser"
    groups = set(user.groups.values_list("name", flat=True)) if getattr(user, "pk", None) else set()
    held = [r for r in ROLES if r in groups]
    return held[-1] if held else "no role"


def refusal(user: Any, action: str) -> str:
    """Why `may` said no, in words for the 403 page."""
    words = _WORDS[action]
    if not getattr(user, "is_authenticated", False):
        return f"log in to {words}"
    own, anyone = ACTIONS[action]
    if own != anyone and user.has_perm(own):
        return f"only its owner or staff may {words}"
    return f"your account ({role_name(user)}) may not {words}: ask staff for the operator role"


def read_refusal(user: Any) -> str:
    return (
        f"your account ({role_name(user)}) may not read the dashboard: ask staff for the viewer role"
        if getattr(user, "is_authenticated", False)
        else "log in to read the dashboard"
    )


def permissions_of(role: str) -> Any:
    """The Permission rows of a role (a "app.*" entry stands for every permission of that app)."""
    from django.contrib.auth.models import Permission
    from django.db.models import Q

    match = Q(pk__in=[])
    for name in ROLES[role]:
        app, codename = name.split(".", 1)
        match |= (
            Q(content_type__app_label=app) if codename == "*" else Q(content_type__app_label=app, codename=codename)
        )
    return Permission.objects.filter(match)


def sync_groups(**_: Any) -> None:
    """post_migrate: make the three groups hold exactly their roles' permissions."""
    from django.contrib.auth.models import Group

    for role in ROLES:
        group, _created = Group.objects.get_or_create(name=role)
        group.permissions.set(permissions_of(role))
