"""End to end in Debian's Chromium: an agent the operator registered (the LangGraph triage agent, naive
and keyed tools, durability sync), launched from the form on the server `make run` starts (its
SWEEPSITE_TARGETS: tests/e2e/conftest.py's E2E_TARGETS), swept by make run's own workers, its rows read
off the page."""

from __future__ import annotations

import re
from importlib.metadata import version
from importlib.util import find_spec

import pytest
from playwright.sync_api import expect

from sweeps.models import Scenario, Sweep
from tests.e2e._pages import no_js_errors, plot_traces
from tests.sweeps._web import member

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

if find_spec("langgraph") is None:
    pytest.skip(
        "the LangGraph extra is not installed (pip install -e '.[langgraph]'; make test installs it)",
        allow_module_level=True,
    )


def test_a_registered_langgraph_agent_launched_from_the_form_shows_its_rows(page, site, login, wait_until, shot):
    user = member("lena", "operator")
    login(page, user)
    page.goto(site.url + "/")
    page.check("input[name=job][value=triage]")
    page.check("input[name=preset][value=targets]")
    # The form offers the registered names only (never a field for a module path).
    offered = page.locator("input[name=targets]").evaluate_all("els => els.map(e => e.value)")
    assert offered == ["triage-naive", "triage-keyed"]
    assert (
        page.locator("input[name=targets]")
        .first.evaluate("e => e.labels[0].innerText")
        .endswith("(examples.langgraph_triage:naive_sync)")
    )
    page.check("input[name=targets][value=triage-naive]")
    page.check("input[name=targets][value=triage-keyed]")
    expect(page.locator("select[name=target_model]")).to_have_value("fresh-ids")  # as a real provider
    page.select_option("select[name=depth]", "1")
    page.fill("input[name=runs]", "1")
    page.select_option("select[name=person]", "scripted")
    shot(page, "launch-form")
    page.click("#launch-button")
    expect(page).to_have_url(re.compile(r"/sweeps/\d+/$"))
    sweep = Sweep.objects.get(created_by=user)
    assert sweep.model == "fresh-ids"
    assert {c["design"] for c in sweep.configs} == {"target:triage-naive", "target:triage-keyed"}

    wait_until(
        lambda: Sweep.objects.filter(pk=sweep.pk, status__in=["done", "failed"]).exists(),
        timeout=180,
        what=f"sweep {sweep.pk} to finish on make run's workers",
    )
    assert Sweep.objects.get(pk=sweep.pk).status == Sweep.Status.DONE
    page.reload()
    expect(page.locator("#status")).to_have_text("done")
    shot(page, "sweep-done")

    # One row per agent (a sampled agent's passes merged in it), named by its registration, its runtime
    # under its name: LangGraph's version as installed.
    rows = page.locator("#results tbody tr")
    expect(rows).to_have_count(2)
    names = [n.strip() for n in rows.locator("td:first-child a").all_inner_texts()]
    assert names == ["triage-naive [sampled, k=2]", "triage-keyed [sampled, k=2]"]  # tools in threads: samples
    expect(page.locator("#sampled")).to_contain_text("triage-naive [sampled, k=2]: 2 passes")
    runtimes = rows.locator(".runtime").all_inner_texts()
    assert all(f"langgraph {version('langgraph')}" in r for r in runtimes), runtimes

    def cell(row: int, col: str) -> int:
        return int(rows.nth(row).locator(f"td[data-col={col}]").inner_text())

    # Every scenario the workers stored is counted in its row; the planted bug (a tool without the
    # key) is caught, the keyed tools' agent is clean (durability sync: the reply carrying the
    # tool-call IDs is saved before the tools run).
    stored = Scenario.objects.filter(sweep=sweep)
    for i, name in enumerate(["triage-naive", "triage-keyed"]):
        assert cell(i, "once") == stored.filter(design=name).count() > 0
        assert cell(i, "missing") == 0
    assert cell(0, "with_dups") > 0 and cell(0, "dups") >= cell(0, "with_dups")
    assert cell(1, "with_dups") == 0 and cell(1, "dups") == 0

    # Each number opens its scenarios (every pass's, for a sampled row).
    rows.nth(0).locator("td[data-col=with_dups] a").click()
    expect(page.locator("#count")).to_have_text(str(stored.filter(design="triage-naive", duplicates__gt=0).count()))
    shot(page, "with-dups-scenarios")

    # The heatmap's cells are the target's points, their kinds the runtime's: put, put_writes, reply, effect.
    page.goto(f"{site.url}/sweeps/{sweep.pk}/heatmap/")
    expect(page.locator("#heatmap-first.js-plotly-plot")).to_be_visible()
    (trace,) = plot_traces(page, "heatmap-first")
    assert trace["type"] == "heatmap"
    assert sum(v is not None for line in trace["z"] for v in line) > 0
    codes = page.locator("#heatmap-first").evaluate("div => div.data[0].text.flat().filter(Boolean)")
    assert {"P", "PW", "R", "E"} <= set(codes), sorted(set(codes))
    shot(page, "heatmap")
    no_js_errors(page)
