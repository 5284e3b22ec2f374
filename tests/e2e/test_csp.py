"""The Content-Security-Policy in Chromium, on the server as `make run` starts it: the pages work under it
(the heatmaps draw, the launch form plans, the progress bar shows), the browser reports no violation,
and a configuration name written as Plotly markup is shown as text."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from sweeps import configs as sweep_configs
from sweeps.models import Sweep
from sweeps.services import launch
from tests.e2e._pages import no_js_errors
from tests.sweeps._web import member

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

HOSTILE = '<span style="color:red">red</span> & <b>bold</b>'
# Every violation the page meets, as the browser reports it (an init script: the policy does not apply to it).
WATCH_VIOLATIONS = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", e => window.__violations.push(
  e.effectiveDirective + " " + (e.blockedURI || "inline") + " " + (e.sample || "")));
"""


@pytest.fixture
def user():
    return member("csp", "operator", password="pw-e2e-csp-123")  # may read, and launch


@pytest.fixture
def watched(page):
    page.add_init_script(WATCH_VIOLATIONS)
    return page


def violations(page):
    return page.evaluate("window.__violations")


def test_the_heatmaps_draw_under_the_policy_and_show_markup_as_text(watched, site, user, login, wait_until, shot):
    page = watched
    configs = sweep_configs.configs_for(["after-reply"], ["keyed"])
    configs[0]["name"] = HOSTILE
    sweep = launch.sweep_create(
        user=user, job_source=sweep_configs.builtin_job_source("triage"), configs=configs, depth=2
    )
    wait_until(
        lambda: Sweep.objects.filter(pk=sweep.pk, status="done").exists(),
        timeout=90,
        what=f"sweep {sweep.pk} to finish",
    )
    login(page, user)
    response = page.goto(f"{site.url}/sweeps/{sweep.pk}/heatmap/")
    policy = response.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy and "unsafe-eval" not in policy
    expect(page.locator("#heatmap-first .heatmaplayer image")).to_have_count(1)  # the cells are drawn
    expect(page.locator("#heatmap-second .heatmaplayer image")).to_have_count(1)
    # Plotly's own style rules are in place (its modebar is positioned by them, not left in the flow).
    assert page.evaluate("getComputedStyle(document.querySelector('#heatmap-first .modebar')).position") == "absolute"
    shot(page, "heatmaps-under-csp")
    # The configuration's name, as written: no red span, no bold, the characters themselves.
    tick = page.locator("#heatmap-first .ytick text").first
    expect(tick).to_have_text(HOSTILE)
    assert page.locator("#heatmap-first .ytick text tspan[style*='red']").count() == 0
    expect(page.locator("#heatmap-second .gtitle")).to_contain_text(HOSTILE)
    assert violations(page) == []
    no_js_errors(page)


def test_the_launch_form_plans_and_the_sweep_page_shows_progress_under_the_policy(watched, site, user, login):
    page = watched
    login(page, user)
    page.goto(f"{site.url}/")
    page.check("input[name=preset][value=custom]")
    page.check("input[name=designs][value=loop]")
    page.check("input[name=trackers][value=keyed]")
    page.select_option("select[name=depth]", "1")
    expect(page.locator("#plan-text")).to_contain_text("38 chunks · 38 scenarios")  # launch.js fetched the plan
    page.click("#launch-button")
    expect(page).to_have_url(re.compile(r"/sweeps/\d+/$"))
    expect(page.locator("#status")).to_have_text("done", timeout=90_000)
    expect(page.locator("#bar")).to_have_attribute("style", "width: 100%;")  # set by sweep_detail.js
    assert violations(page) == []
    no_js_errors(page)


def test_an_inline_script_is_refused(watched, site):
    """The policy is enforced, not only sent: a script the page did not load from this site does not run."""
    page = watched
    page.goto(f"{site.url}/accounts/login/")
    page.evaluate("""() => { const s = document.createElement("script");
                             s.textContent = "window.__ran = true"; document.body.appendChild(s); }""")
    assert page.evaluate("window.__ran === undefined")
    assert any(v.startswith("script-src-elem inline") for v in violations(page)), violations(page)
