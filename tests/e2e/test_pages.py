"""End to end in Debian's Chromium, on the server as `make run` starts it (`site`): a table number
and the list it opens, comparing two sweeps, the visual timeline and its way back, the heatmaps'
kinds, metric and cells. Sweeps are run by the server's own Celery workers; expected numbers come
from agentcore run in this process.

Screenshots: artifacts/screenshots/<test>-<nn>-<step>.png.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from agentcore import COLUMNS
from sweeps import configs as sweep_configs
from sweeps import exports
from sweeps.models import Scenario
from tests.e2e._pages import cell_position, expected_rows, no_js_errors, plot, run_sweep
from tests.sweeps._web import member

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def user():
    return member("ann", "operator", password="pw-e2e-ann-123")


# --- a table number and its list ----------------------------------------------------------------


def test_a_table_number_opens_a_list_that_states_that_number(page, site, user, login, wait_until, shot):
    sweep = run_sweep(user, ["once-per-turn"], ["keyed"], 2, wait_until)
    (row,) = expected_rows(["once-per-turn"], ["keyed"], 2)
    assert row.dups > row.with_dups and row.calls_plus > 0  # the numbers that did not match their lists
    login(page, user)
    page.goto(f"{site.url}/sweeps/{sweep.pk}/")
    cells = page.locator("#results tbody tr").first.locator("td")
    for column, number, count, title in [
        (1 + COLUMNS.index("dups"), row.dups, row.with_dups, "duplicate effects"),
        (1 + COLUMNS.index("calls_plus"), row.calls_plus, None, "repeated model calls"),
    ]:
        expect(cells.nth(column)).to_have_text(str(number))
        cells.nth(column).locator("a").click()
        expect(page.locator("#sum")).to_have_text(str(number))
        if count is not None:
            expect(page.locator("#count")).to_have_text(str(count))
            expect(page.locator("main")).to_contain_text(f"{count} scenarios match, {number} {title}")
        else:
            expect(page.locator("main")).to_contain_text(f"scenarios match, {number} {title}")
        expect(page.locator("#scenarios th.summed")).to_have_count(1)
        shot(page, f"list-of-column-{column}")
        # Another filter keeps the summed column: the number stated follows the list.
        page.select_option("#id_twice", "no")
        page.get_by_role("button", name="filter").click()
        expect(page).to_have_url(re.compile(r"twice=no"))
        once = Scenario.objects.filter(sweep=sweep, second_point=0)
        metric = page.locator("#sum").get_attribute("data-metric")
        expect(page.locator("#sum")).to_have_text(str(sum(once.values_list(metric, flat=True))))
        page.goto(f"{site.url}/sweeps/{sweep.pk}/")
    no_js_errors(page)


# --- compare two sweeps -------------------------------------------------------------------------


def test_compare_two_sweeps_highlights_the_differences_and_downloads_them(page, site, user, login, wait_until, shot):
    source = sweep_configs.builtin_job_source("triage")
    job = json.loads(source)
    job["turns"][0]["calls"] = job["turns"][0]["calls"][:1]  # the second job files one issue, not two
    changed = json.dumps(job)
    a = run_sweep(user, ["once-per-turn", "keys"], ["keyed"], 1, wait_until)
    b = run_sweep(user, ["keys", "keys-and-markers"], ["keyed"], 1, wait_until, job_source=changed)
    rows_a = {r.name: r for r in expected_rows(["once-per-turn", "keys"], ["keyed"], 1, job_source=source)}
    rows_b = {r.name: r for r in expected_rows(["keys", "keys-and-markers"], ["keyed"], 1, job_source=changed)}
    (both,) = set(rows_a) & set(rows_b)
    (only_a,), (only_b,) = set(rows_a) - {both}, set(rows_b) - {both}

    login(page, user)
    page.goto(f"{site.url}/sweeps/{a.pk}/")
    page.locator("nav.nav-links").get_by_role("link", name="compare").click()
    expect(page).to_have_url(re.compile(rf"/compare/\?a={a.pk}$"))
    page.select_option("#id_b", str(b.pk))
    page.get_by_role("button", name="compare").click()
    expect(page).to_have_url(re.compile(rf"/compare/\?a={a.pk}&b={b.pk}$"))
    expect(page.locator("#jobs-differ")).to_be_visible()
    shot(page, "compare")

    line = page.locator("#compare tbody tr[data-in=both]")
    expect(line).to_have_count(1)
    expect(line.locator("td").first).to_have_text(both)
    values = line.locator("td.num")
    want = [*rows_a[both].values(), *rows_b[both].values()]
    n = len(COLUMNS)  # each side's cells
    assert [int(t.split()[0].replace("+", "")) for t in values.all_inner_texts()[:n]] == want[:n]
    for i, (va, vb) in enumerate(zip(rows_a[both].values(), rows_b[both].values(), strict=True)):
        for cell in (values.nth(i), values.nth(n + i)):
            if va != vb:
                expect(cell).to_have_class(re.compile(r"\bdiff\b"))
            else:
                expect(cell).not_to_have_class(re.compile(r"\bdiff\b"))
    assert any(va != vb for va, vb in zip(rows_a[both].values(), rows_b[both].values(), strict=True))
    expect(page.locator("#compare tbody tr[data-in=a] td").first).to_contain_text(f"{only_a} (only in sweep {a.pk})")
    expect(page.locator("#compare tbody tr[data-in=b] td").first).to_contain_text(f"{only_b} (only in sweep {b.pk})")

    with page.expect_download() as info:
        page.locator("#compare-csv").click()
    download = info.value
    assert download.failure() is None and download.suggested_filename == f"compare-sweep-{a.pk}-with-{b.pk}.csv"
    # A name a spreadsheet would run as a formula ("+ idempotency keys") is written with a ' in front.
    named = {exports.spreadsheet_cell(n): n for n in (both, only_a, only_b)}
    lines = {named[r["configuration"]]: r for r in csv.DictReader(io.StringIO(Path(download.path()).read_text()))}
    assert {n: r["in"] for n, r in lines.items()} == {both: "both", only_a: "a only", only_b: "b only"}
    for col in ("once", "dups", "calls_plus"):
        ra, rb = getattr(rows_a[both], col), getattr(rows_b[both], col)
        assert [lines[both][f"{col}_{s}"] for s in ("a", "b", "diff")] == [str(ra), str(rb), str(rb - ra)]
    no_js_errors(page)


# --- the visual timeline ------------------------------------------------------------------------


def test_the_visual_timeline_marks_crashes_and_the_duplicate_and_leads_back_to_its_list(
    page, site, user, login, wait_until, shot
):
    sweep = run_sweep(user, ["once-per-turn"], ["keyed"], 2, wait_until)
    login(page, user)
    page.goto(f"{site.url}/sweeps/{sweep.pk}/scenarios/?config=0&has_dups=yes&twice=yes&page=2")
    list_url = page.url
    link = page.locator("#scenarios tbody tr").first.locator("a").first
    scenario = Scenario.objects.get(pk=int(link.inner_text()))
    link.click()
    expect(page.locator("h1")).to_contain_text(f"Scenario {scenario.pk}")

    lanes = page.locator("svg#lanes")
    expect(lanes).to_be_visible()
    expect(lanes.locator(".lane text")).to_contain_text(
        ["process 1", "process 2", "process 3", "checkpoint", "tracker", "person"]
    )
    expect(lanes.locator("a.mark-crash")).to_have_count(2)  # crashed twice
    expect(lanes.locator("text.label-crash")).to_have_text(["crash 1", "crash 2"])
    expect(lanes.locator("a.mark-restart")).to_have_count(2)
    dups = lanes.locator("a.mark-dup")
    expect(dups).to_have_count(scenario.duplicates)
    expect(dups.first.locator("title")).to_contain_text("duplicate effect made here: answer ")
    events = page.locator("#timeline tbody tr")
    expect(lanes.locator("a.mark")).to_have_count(events.count())  # one mark per event
    shot(page, "timeline")
    # A mark leads to its event's row, which says the duplicate was made there.
    dups.first.click()
    n = page.evaluate("location.hash").removeprefix("#ev-")
    row = page.locator(f"#ev-{n}")
    expect(row).to_have_class(re.compile(r"\bev-dup\b"))
    expect(row).to_contain_text("(made a duplicate effect)")
    expect(page.locator("#effects tr.dup").first).to_be_visible()

    page.locator("#back").click()
    expect(page).to_have_url(list_url)
    expect(page.locator("#scenarios")).to_be_visible()
    no_js_errors(page)


# --- heatmaps -----------------------------------------------------------------------------------


def test_heatmaps_name_kinds_redraw_on_a_new_metric_and_a_second_map_cell_opens_its_timeline(
    page, site, user, login, wait_until, shot
):
    sweep = run_sweep(user, ["once-per-turn", "keys"], ["keyed"], 2, wait_until)
    login(page, user)
    page.goto(f"{site.url}/sweeps/{sweep.pk}/heatmap/?config=0")
    expect(page.locator("#heatmap-first .heatmaplayer image")).to_have_count(1)
    expect(page.locator("#heatmap-second .heatmaplayer image")).to_have_count(1)

    # The second map's x axis names each first point's kind; every first-map cell shows its kind's code.
    ticks = page.locator("#heatmap-second .xtick text").all_text_contents()
    firsts = Scenario.objects.filter(sweep=sweep, config=0, second_point=0).order_by("first_point")
    assert ticks == [f"{s.first_point} {s.first_kind}" for s in firsts]
    codes = plot(page, "heatmap-first", "div.data[0].text")
    assert {c for line in codes for c in line if c} >= {"SH", "SR", "RA", "TA", "TR"}
    expect(page.locator("#heatmap-first .heatmaplayer text").first).to_be_visible()
    expect(page.locator("#kind-codes")).to_contain_text("TA tracker-accepted")
    shot(page, "heatmaps")

    # A new metric redraws both maps at once: no button, no page load.
    expect(page.locator("#heatmap-options button")).to_have_count(0)
    page.evaluate("window.notReloaded = true")
    page.select_option("#metric", "calls_plus")
    expect(page).to_have_url(re.compile(r"metric=calls_plus"))
    expect(page.locator("#heatmap-first .gtitle")).to_contain_text("repeated model calls")
    assert page.evaluate("window.notReloaded") is True
    per_cell = {}
    for s in Scenario.objects.filter(sweep=sweep):
        per_cell[s.config, s.first_point] = per_cell.get((s.config, s.first_point), 0) + s.calls_plus
    z = plot(page, "heatmap-first", "div.data[0].z")
    assert {(c, f + 1): v for c, line in enumerate(z) for f, v in enumerate(line) if v is not None} == per_cell
    expect(page.locator("#heatmap-second .gtitle")).to_contain_text("repeated model calls")
    shot(page, "heatmaps-calls-plus")

    # A second-map cell is one scenario: a click opens its timeline, whose back link returns here.
    target = Scenario.objects.filter(sweep=sweep, config=0, second_point__gt=0).order_by("first_point").last()
    page.mouse.click(*cell_position(page, "heatmap-second", target.first_point, target.second_point))
    expect(page).to_have_url(re.compile(rf"/scenarios/{target.pk}/\?back="))
    expect(page.locator("h1")).to_contain_text(f"Scenario {target.pk}")
    expect(page.locator("svg#lanes")).to_be_visible()
    page.locator("#back").click()
    expect(page).to_have_url(re.compile(rf"/sweeps/{sweep.pk}/heatmap/\?config=0&metric=calls_plus$"))
    expect(page.locator("#metric")).to_have_value("calls_plus")

    # A first-map cell holds many scenarios: its list states the cell's number.
    (config, first), value = max(per_cell.items(), key=lambda kv: kv[1])
    expect(page.locator("#heatmap-first .heatmaplayer image")).to_have_count(1)
    page.mouse.click(*cell_position(page, "heatmap-first", first, config))
    expect(page).to_have_url(re.compile(rf"/scenarios/\?config={config}&first_point={first}&sum=calls_plus$"))
    expect(page.locator("#sum")).to_have_text(str(value))
    expect(page.locator("main")).to_contain_text(f"{value} repeated model calls")
    no_js_errors(page)
