"""Static files as `make run` serves them (DEBUG off): WhiteNoise, compressed, cached for a year.

The heatmaps' own drawing is tested in test_browser.py; here: the files themselves, the admin's
stylesheet, and the message a heatmap page shows when Plotly cannot be loaded.
"""

from __future__ import annotations

import re
import urllib.request

import pytest
from django.templatetags.static import static
from playwright.sync_api import expect

from sweeps import configs as sweep_configs
from sweeps.services import launch
from tests.sweeps._web import member

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

YEAR = 315360000  # WhiteNoise's max-age for a file whose name carries its hash


def _get(url: str, **headers: str) -> tuple[int, dict[str, str], bytes]:
    req = urllib.request.Request(url, headers=headers)
    with urllib.request.urlopen(req, timeout=10) as r:  # noqa: S310 - our own loopback server
        return r.status, {k.lower(): v for k, v in r.headers.items()}, r.read()


def test_plotly_is_served_gzipped_with_a_year_of_cache_under_its_hashed_name(site):
    path = static("plotly/plotly.min.js")
    assert re.fullmatch(r"/static/plotly/plotly\.min\.[0-9a-f]{12}\.js", path), path
    status, headers, body = _get(site.url + path, **{"Accept-Encoding": "gzip"})
    assert status == 200
    assert headers["content-type"].startswith("text/javascript")
    assert headers["content-encoding"] == "gzip"
    assert f"max-age={YEAR}" in headers["cache-control"] and "immutable" in headers["cache-control"]
    assert len(body) < 2_000_000  # the 4.6 MB file, compressed


def test_the_admin_login_page_loads_its_stylesheet(page, site):
    css = []
    page.on("response", lambda r: css.append((r.url, r.status)) if r.url.endswith(".css") else None)
    page.goto(site.url + "/admin/login/")
    expect(page.locator("#header")).to_be_visible()
    assert any("/static/admin/css/base." in url and status == 200 for url, status in css), css
    # Styled: the admin's header has its dark background, not the browser's transparent default.
    background = page.locator("#header").evaluate("e => getComputedStyle(e).backgroundColor")
    assert background not in ("rgba(0, 0, 0, 0)", "transparent"), background


def test_a_heatmap_page_says_so_when_plotly_cannot_be_loaded(page, site, login):
    user = member("sam", "viewer")
    sweep = launch.sweep_create(
        user=user,
        job_source=sweep_configs.builtin_job_source("triage"),
        configs=sweep_configs.configs_for(["keys"], ["keyed"]),
        depth=1,
    )
    login(page, user)
    page.route(re.compile(r".*/plotly\.min\..*js$"), lambda route: route.abort())
    page.goto(f"{site.url}/sweeps/{sweep.pk}/heatmap/")
    expect(page.locator("#plotly-missing")).to_be_visible()
    expect(page.locator("#plotly-missing")).to_contain_text("could not load Plotly")
    page.unroute(re.compile(r".*/plotly\.min\..*js$"))
    page.reload()
    expect(page.locator("#heatmap-first.js-plotly-plot")).to_be_visible()
    expect(page.locator("#plotly-missing")).to_be_hidden()
