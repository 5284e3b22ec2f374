"""Throttled logins (django-axes, sweepsite/lockout.py): real POSTs to the login page, as a browser
sends them. After AXES_FAILURE_LIMIT wrong passwords for one username from one address, that pair
is locked out: the right password is refused too, with the login page saying why; other users and
other addresses log in; staff unlock it (the admin, or `manage.py axes_reset_username`)."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.conf import settings
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from sweepsite.lockout import lockout_message
from tests.sweeps._web import member

pytestmark = pytest.mark.django_db

PASSWORD = "pw-right-12345"


@pytest.fixture
def ann():
    return member("ann", "operator", password=PASSWORD)


def attempt(client: Client, username: str, password: str):
    return client.post(reverse("login"), {"username": username, "password": password, "next": "/"})


def logged_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


def lock_out(client: Client, username: str = "ann"):
    """AXES_FAILURE_LIMIT wrong passwords; the last one's answer."""
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        r = attempt(client, username, "wrong-guess")
        assert r.status_code == 200 and "Please enter a correct username and password" in r.content.decode()
    return attempt(client, username, "wrong-guess")


def test_the_settings_lock_a_username_and_address_pair_after_5_failures_for_15_minutes():
    assert settings.AXES_FAILURE_LIMIT == 5 and settings.AXES_LOCKOUT_PARAMETERS == [["username", "ip_address"]]
    assert settings.AXES_COOLOFF_TIME == timedelta(minutes=15) and settings.AXES_RESET_ON_SUCCESS


def test_wrong_passwords_lock_out_and_then_the_right_one_is_refused_with_the_message(ann):
    c = Client()
    r = lock_out(c)
    assert r.status_code == 429 and 'id="locked-out"' in r.content.decode()
    r = attempt(c, "ann", PASSWORD)
    page = r.content.decode()
    assert r.status_code == 429 and not logged_in(c)
    assert "Too many failed logins: after 5 wrong passwords for this username from your address" in page
    assert "the right password is refused too" in page and "Try again in 15 minutes, or ask staff to unlock it." in page
    assert 'name="username"' in page and 'value="ann"' in page  # the login form, to try again later


def test_fewer_failures_than_the_limit_still_let_the_right_password_in_and_start_the_count_again(ann):
    c = Client()
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        attempt(c, "ann", "wrong-guess")
    assert attempt(c, "ann", PASSWORD).status_code == 302 and logged_in(c)
    assert not AccessAttempt.objects.filter(username="ann").exists()  # reset on success


def test_another_user_from_the_same_address_is_not_locked_out(ann):
    member("bob", "viewer", password=PASSWORD)
    c = Client()
    lock_out(c)
    assert attempt(c, "bob", PASSWORD).status_code == 302 and logged_in(c)


def test_the_same_user_from_another_address_is_not_locked_out(ann):
    lock_out(Client(REMOTE_ADDR="10.0.0.1"))
    c = Client(REMOTE_ADDR="10.0.0.2")
    assert attempt(c, "ann", PASSWORD).status_code == 302 and logged_in(c)


def test_the_reset_command_unlocks(ann):
    c = Client()
    lock_out(c)
    call_command("axes_reset_username", "ann", stdout=io.StringIO())
    assert attempt(c, "ann", PASSWORD).status_code == 302 and logged_in(c)


def test_staff_unlock_in_the_admin(ann):
    c = Client()
    lock_out(c)
    staff = Client()
    staff.force_login(member("sam", "staff"))
    listing = staff.get(reverse("admin:axes_accessattempt_changelist"))
    assert listing.status_code == 200 and "ann" in listing.content.decode()
    locked = AccessAttempt.objects.get(username="ann")
    r = staff.post(reverse("admin:axes_accessattempt_delete", args=[locked.pk]), {"post": "yes"})
    assert r.status_code == 302 and not AccessAttempt.objects.exists()
    assert attempt(c, "ann", PASSWORD).status_code == 302 and logged_in(c)


def test_an_operator_cannot_unlock_in_the_admin(ann):
    lock_out(Client())
    c = Client()
    c.force_login(member("olga", "operator", is_staff=True))  # admin access alone grants nothing
    assert c.get(reverse("admin:axes_accessattempt_changelist")).status_code == 403


def test_without_a_cool_off_the_message_says_staff_unlock_it(settings):
    settings.AXES_COOLOFF_TIME = None
    assert lockout_message().endswith("Ask staff to unlock it.")


# --- one address across usernames (sweepsite.lockout.AddressBoundHandler) -------------------------


def test_the_address_bound_is_30_failures_whatever_the_usernames():
    assert settings.SWEEPSITE_ADDRESS_LOGIN_FAILURES == 30
    assert settings.AXES_HANDLER == "sweepsite.lockout.AddressBoundHandler"


def guess_many(client: Client, usernames: int, each: int, prefix: str = "u") -> list[int]:
    """`each` wrong passwords at each of `usernames` usernames (u0, u1, ...); the answers' statuses."""
    return [attempt(client, f"{prefix}{n}", "wrong-guess").status_code for n in range(usernames) for _ in range(each)]


def test_an_address_guessing_at_many_usernames_is_locked_out_for_every_username(ann, settings):
    settings.SWEEPSITE_ADDRESS_LOGIN_FAILURES = 12  # the real bound's behaviour, in fewer posts
    c = Client(REMOTE_ADDR="10.0.0.7")
    # 4 tries at each username, under the pair's bound of 5: before, 4 x 20 went unanswered by a lockout.
    statuses = guess_many(c, 20, 4)
    assert statuses[:11] == [200] * 11 and set(statuses[11:]) == {429}  # the 12th failure locks the address
    r = attempt(c, "ann", PASSWORD)  # a username it never tried, with the right password
    page = r.content.decode()
    assert r.status_code == 429 and not logged_in(c)
    assert (
        "Too many failed logins from your address: after 12 wrong passwords from it, whatever the usernames, "
        "logging in from here is locked for every username (the right password is refused too). "
        "Try again in 15 minutes, or ask staff to unlock it."
    ) in page
    other = Client(REMOTE_ADDR="10.0.0.8")  # another address is not locked out
    assert attempt(other, "ann", PASSWORD).status_code == 302 and logged_in(other)


def test_below_the_address_bound_every_username_still_logs_in(ann, settings):
    settings.SWEEPSITE_ADDRESS_LOGIN_FAILURES = 12
    c = Client(REMOTE_ADDR="10.0.0.7")
    assert set(guess_many(c, 11, 1)) == {200}
    assert attempt(c, "ann", PASSWORD).status_code == 302 and logged_in(c)


def test_a_success_clears_only_its_own_username_s_failures_from_the_address(ann, settings):
    settings.SWEEPSITE_ADDRESS_LOGIN_FAILURES = 12
    c = Client(REMOTE_ADDR="10.0.0.7")
    guess_many(c, 2, 4)  # 8 failures at u0 and u1
    for _ in range(3):
        attempt(c, "ann", "wrong-guess")
    assert attempt(c, "ann", PASSWORD).status_code == 302  # 11 failures; ann's 3 are cleared, 8 stay
    assert not AccessAttempt.objects.filter(username="ann").exists()
    assert set(guess_many(Client(REMOTE_ADDR="10.0.0.7"), 3, 1, "v")) == {200}  # 11 again: still under 12
    assert attempt(Client(REMOTE_ADDR="10.0.0.7"), "u9", "wrong-guess").status_code == 429  # the 12th


def test_staff_unlock_an_address_with_the_reset_command(ann, settings):
    settings.SWEEPSITE_ADDRESS_LOGIN_FAILURES = 6
    c = Client(REMOTE_ADDR="10.0.0.7")
    guess_many(c, 3, 2)
    assert attempt(c, "ann", PASSWORD).status_code == 429
    call_command("axes_reset_ip", "10.0.0.7", stdout=io.StringIO())
    assert attempt(c, "ann", PASSWORD).status_code == 302 and logged_in(c)


def test_the_address_message_without_a_cool_off_says_staff_unlock_it(settings):
    settings.AXES_COOLOFF_TIME = None
    assert lockout_message(address=True).endswith("Ask staff to unlock it.")
