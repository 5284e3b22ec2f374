"""End to end in Debian's Chromium: the dashboard served as `make run` serves it (tests/e2e/conftest.py's
`site`: runserver with DEBUG off, WhiteNoise, and make run's own Celery workers, on the session's
filesystem broker and the
shared test database). Expected numbers come from agentcore run in this process.

Screenshots of every page visited: artifacts/screenshots/<test>-<nn>-<step>.png.
"""

from __future__ import annotations

import csv
import io
import re
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import expect

import agentcore as agentsweep
from agentcore import jobs
from agentcore import render_table as render
from sweeps import exports
from sweeps.models import Chunk, Question, Scenario, Sweep
from sweeps.services import timelines
from tests.e2e._pages import cell_position, expected_rows, no_js_errors, plot_traces, run_sweep
from tests.sweeps._web import member

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "pw-e2e-ann-123"
# The export test's sweep: two designs x two tracker modes. The keyed tracker saves "+ idempotency keys"
# from duplicates, the keyless one does not; "save after the reply" duplicates with either.
DESIGNS = ["after-reply", "keys"]
TRACKERS = ["keyed", "keyless"]


# --- helpers -----------------------------------------------------------------------------------


@pytest.fixture
def user():
    return member("ann", "operator", password=PASSWORD)


def table_cells(page):
    """The comparison table as [[name, int, ...], ...]."""
    out = []
    for row in page.locator("#results tbody tr").all():
        texts = [t.strip() for t in row.locator("td").all_inner_texts()]
        out.append([texts[0], *(int(t) for t in texts[1:])])
    return out


def download(page, link):
    """Click a link that answers with an attachment; (suggested file name, text)."""
    with page.expect_download() as info:
        link.click()
    d = info.value
    assert d.failure() is None, d.failure()
    return d.suggested_filename, Path(d.path()).read_text(encoding="utf-8")


def export_download(page, link):
    """Click a scenario export's link: ask for its file on the page it opens, wait there (the page
    reloads itself while a worker writes the file) for the download link, and download it."""
    link.click()
    page.locator("#export-request button").click()
    ready = page.locator("#export-download")
    expect(ready).to_be_visible(timeout=60_000)
    return download(page, ready)


def reload_until(page, check, timeout=30.0, what="the page to change"):
    """Reload the page until check() is truthy (a worker updates the database meanwhile)."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        page.wait_for_timeout(250)
        page.reload()


# --- log in and the launch form ----------------------------------------------------------------


def test_an_anonymous_visitor_is_sent_to_log_in_and_then_gets_the_launch_form(page, site, user, shot):
    page.goto(site.url + "/")  # reading needs a login (SWEEPSITE_PUBLIC_READ is off by default)
    expect(page).to_have_url(re.compile(r"/accounts/login/\?next=/$"))
    expect(page.locator("#launch")).to_have_count(0)
    shot(page, "anonymous-sent-to-login")
    page.fill("#id_username", "ann")
    page.fill("#id_password", "not the password")
    page.get_by_role("button", name="log in").click()
    expect(page.locator(".errorlist")).to_contain_text("enter a correct username and password")
    shot(page, "login-refused")
    page.fill("#id_password", PASSWORD)
    page.get_by_role("button", name="log in").click()
    expect(page).to_have_url(site.url + "/")
    expect(page.locator("header .user")).to_contain_text("ann")
    expect(page.locator("#launch-button")).to_be_visible()
    shot(page, "logged-in-list")
    no_js_errors(page)


def test_a_bad_launch_shows_the_form_errors_and_stores_nothing(page, site, user, login, shot):
    login(page, user)
    page.goto(site.url + "/")
    page.check("input[name=preset][value=custom]")  # custom, but no design and no tracker mode chosen
    with page.expect_response(lambda r: r.url.endswith("/sweeps/launch/")) as response:
        page.click("#launch-button")
    assert response.value.status == 400
    expect(page.locator("#launch .errorlist").first).to_be_visible()
    expect(page.locator("#launch")).to_contain_text("choose at least one design")
    expect(page.locator("#launch")).to_contain_text("choose at least one tracker mode")
    shot(page, "form-errors")
    assert Sweep.objects.count() == 0 and Chunk.objects.count() == 0
    no_js_errors(page)


# --- launch, progress, table -------------------------------------------------------------------


def test_the_chapter_s_table_launched_from_the_form_reaches_100_percent_with_agentcore_s_numbers(
    page, site, user, shot
):
    job = jobs.load("triage")
    expected = agentsweep.sweep(agentsweep.table_configs(job), depth=2, workers=2).rows
    # Log in with the form, as a user would.
    page.goto(site.url + "/accounts/login/?next=/")
    page.fill("#id_username", "ann")
    page.fill("#id_password", PASSWORD)
    page.get_by_role("button", name="log in").click()
    expect(page.locator("#launch-button")).to_be_visible()

    # The built-in job, the chapter's table (11 configurations), depth 2, scripted person.
    page.check("input[name=job][value=triage]")
    page.check("input[name=preset][value=table]")
    page.select_option("select[name=depth]", "2")
    page.fill("input[name=runs]", "1")
    page.select_option("select[name=person]", "scripted")
    shot(page, "launch-form")
    page.click("#launch-button")
    expect(page).to_have_url(re.compile(r"/sweeps/\d+/$"))
    sweep = Sweep.objects.get()
    assert sweep.created_by == user and sweep.depth == 2 and len(sweep.configs) == len(expected)
    expect(page.locator(".messages")).to_contain_text(f"sweep {sweep.pk} launched")

    # Watch the bar: every value the page shows is read, until it says 100 % and "done".
    bar = page.locator("[role=progressbar]")
    seen: list[float] = []
    midway = False
    deadline = time.monotonic() + 60
    status = ""
    while True:
        assert time.monotonic() < deadline, f"the bar did not reach 100 %: saw {seen[-5:]}, status {status!r}"
        try:
            value = float(bar.get_attribute("aria-valuenow") or "nan")
            status = page.locator("#status").inner_text().strip()
        except PlaywrightError:  # the page reloads itself when the status changes: read again
            page.wait_for_timeout(50)
            continue
        seen.append(value)
        if not midway and 0 < value < 100:
            midway = True
            shot(page, "sweep-running")
        if status == "done" and value == 100:
            break
        page.wait_for_timeout(100)
    assert seen[0] < 100 and seen == sorted(seen), f"the bar did not grow from below 100 to 100: {seen}"
    expect(page.locator("#bar")).to_have_attribute("style", re.compile(r"width: 100(\.0)?%"))
    expect(page.locator("#chunks")).to_have_text(f"{sweep.total_chunks} / {sweep.total_chunks}")
    total = sum(r.once + r.twice for r in expected)
    expect(page.locator("#scenarios")).to_have_text(str(total))
    shot(page, "sweep-done")

    # The comparison table: every column of agentcore's table, agentcore's numbers.
    headers = [h.strip() for h in page.locator("#results thead th").all_inner_texts()]
    assert headers == [
        "design",
        "once",
        "twice",
        "with dups",
        "dups",
        "missing",
        "wrong",
        "gave up",
        "denied ran",
        "asks",
        "avoidable",
        "calls+",
    ]
    assert table_cells(page) == [[r.name, *r.values()] for r in expected]
    assert Scenario.objects.filter(sweep=sweep).count() == total

    # Each number opens the scenarios behind it: "with dups" of the first row that has some.
    row = next(i for i, r in enumerate(expected) if r.with_dups)
    page.locator("#results tbody tr").nth(row).locator("td").nth(3).locator("a").click()
    expect(page).to_have_url(re.compile(rf"/sweeps/{sweep.pk}/scenarios/\?config={row}&has_dups=yes$"))
    expect(page.locator("#count")).to_have_text(str(expected[row].with_dups))
    shot(page, "with-dups-scenarios")

    # The sweeps list shows it done, every chunk stored.
    page.get_by_role("banner").get_by_role("link", name="Sweeps", exact=True).click()
    line = page.locator("#sweeps tbody tr").first
    expect(line.locator("td").nth(2)).to_have_text("done")
    expect(line.locator("td").nth(7)).to_have_text(f"{sweep.total_chunks} / {sweep.total_chunks}")
    shot(page, "sweep-list")
    no_js_errors(page)


# --- heatmaps, scenario list, timeline ---------------------------------------------------------


def test_the_heatmaps_draw_one_cell_per_stored_point_and_a_click_opens_a_timeline(
    page, site, user, login, wait_until, shot
):
    sweep = run_sweep(user, ["after-reply", "keys"], ["keyed"], depth=2, wait_until=wait_until)
    rows = list(
        Scenario.objects.filter(sweep=sweep).values(
            "id", "config", "first_point", "second_point", "duplicates", "calls_plus"
        )
    )
    login(page, user)
    page.goto(f"{site.url}/sweeps/{sweep.pk}/")
    page.get_by_role("link", name="heatmaps").click()
    expect(page.locator("#heatmap-first.js-plotly-plot")).to_be_visible()
    expect(page.locator("#heatmap-second.js-plotly-plot")).to_be_visible()
    expect(page.locator("#heatmap-first .heatmaplayer image")).to_have_count(1)  # the cells are drawn
    expect(page.locator("#heatmap-second .heatmaplayer image")).to_have_count(1)
    shot(page, "heatmaps")

    def first_map(metric):
        """design x first point: the metric summed per cell, from the stored rows."""
        width = max(r["first_point"] for r in rows)
        z: list[list[Any]] = [[None] * width for _ in sweep.configs]
        for r in rows:
            z[r["config"]][r["first_point"] - 1] = (z[r["config"]][r["first_point"] - 1] or 0) + r[metric]
        return z

    (trace,) = plot_traces(page, "heatmap-first")
    assert trace["type"] == "heatmap"
    assert len(trace["z"]) == len(sweep.configs) and len(trace["z"][0]) == max(r["first_point"] for r in rows)
    cells = sum(v is not None for line in trace["z"] for v in line)
    assert cells == Chunk.objects.filter(sweep=sweep).count() == len({(r["config"], r["first_point"]) for r in rows})
    assert trace["z"] == first_map("duplicates")

    # first x second point of configuration 0: one cell per twice scenario.
    (trace2,) = plot_traces(page, "heatmap-second")
    twice = [r for r in rows if r["config"] == 0 and r["second_point"] > 0]
    assert len(trace2["z"]) == max(r["second_point"] for r in twice)  # y: the second point
    # x: every first point of the configuration (the last save's restart has no point: no cell)
    assert len(trace2["z"][0]) == max(r["first_point"] for r in rows if r["config"] == 0)
    assert sum(v is not None for line in trace2["z"] for v in line) == len(twice)
    assert sum(v or 0 for line in trace2["z"] for v in line) == sum(r["duplicates"] for r in twice)

    # Another colour: the maps redraw in place (no button), the metric in the URL.
    page.select_option("#metric", "calls_plus")
    expect(page).to_have_url(re.compile(r"metric=calls_plus"))
    assert plot_traces(page, "heatmap-first")[0]["z"] == first_map("calls_plus")
    page.select_option("#metric", "duplicates")
    expect(page).to_have_url(re.compile(r"metric=duplicates"))

    # A cell of the second map is one twice scenario: it opens its timeline.
    z2 = plot_traces(page, "heatmap-second")[0]["z"]
    s2, f2 = next((s + 1, f + 1) for s, line in enumerate(z2) for f, v in enumerate(line) if v)
    one = next(r for r in twice if (r["first_point"], r["second_point"]) == (f2, s2))
    page.mouse.click(*cell_position(page, "heatmap-second", f2, s2))
    expect(page).to_have_url(re.compile(rf"/scenarios/{one['id']}/\?back="))
    expect(page.locator("h1")).to_contain_text(f"Scenario {one['id']}")
    page.go_back()
    expect(page.locator("#heatmap-first.js-plotly-plot")).to_be_visible()

    # Hover a cell with duplicates (it shows the point's label), click it: its scenarios.
    z = plot_traces(page, "heatmap-first")[0]["z"]
    config, col = next((c, i) for c, line in enumerate(z) for i, v in enumerate(line) if v)
    first = col + 1
    label = Chunk.objects.get(sweep=sweep, config=config, first_point=first).label
    x, y = cell_position(page, "heatmap-first", first, config)
    page.mouse.move(x, y)
    expect(page.locator("#heatmap-first .hoverlayer .hovertext")).to_contain_text(label)
    shot(page, "heatmap-hover")
    page.mouse.click(*cell_position(page, "heatmap-first", first, config))  # a full-page shot may scroll
    expect(page).to_have_url(
        re.compile(
            rf"/sweeps/{sweep.pk}/scenarios/\?config={config}&first_point={first}"
            r"&sum=duplicates$"
        )
    )
    behind = [r for r in rows if r["config"] == config and r["first_point"] == first]
    expect(page.locator("#count")).to_have_text(str(len(behind)))
    expect(page.locator("#scenarios tbody tr")).to_have_count(len(behind))
    shot(page, "cell-scenarios")

    # A twice scenario with duplicates: its timeline shows both crashes and the tracker's duplicate.
    target = next(r for r in behind if r["second_point"] and r["duplicates"])
    page.locator(f"#scenarios a[href^='/scenarios/{target['id']}/?back=']").click()
    expect(page.locator("h1")).to_contain_text(f"Scenario {target['id']}")
    timeline = timelines.scenario_timeline(scenario_id=target["id"])
    expect(page.locator("#timeline tbody tr")).to_have_count(len(timeline))
    expect(page.locator("#timeline tr.ev-crash")).to_have_count(2)
    expect(page.locator("#timeline")).to_contain_text("crash 1")
    expect(page.locator("#timeline")).to_contain_text("crash 2")
    expect(page.locator("#dups")).to_have_text(str(target["duplicates"]))
    expect(page.locator("#effects tr.dup").first).to_be_visible()
    shot(page, "timeline")
    no_js_errors(page)


def test_a_depth_3_heatmap_cell_opens_the_third_points_of_its_pair_and_a_third_cell_its_timeline(
    page, site, user, login, wait_until, shot
):
    sweep = run_sweep(user, ["once-per-turn"], ["keyed"], depth=3, wait_until=wait_until)
    thrice = list(
        Scenario.objects.filter(sweep=sweep, third_point__gt=0).values(
            "id", "first_point", "second_point", "third_point", "duplicates", "asks"
        )
    )
    # A pair whose thrice scenarios differ in duplicates (some cells coloured, some not).
    pairs = defaultdict(list)
    for r in thrice:
        pairs[r["first_point"], r["second_point"]].append(r)
    (first, second), cells = next((k, v) for k, v in sorted(pairs.items()) if len({r["duplicates"] for r in v}) > 1)
    login(page, user)
    page.goto(f"{site.url}/sweeps/{sweep.pk}/heatmap/")
    expect(page.locator("#heatmap-second.js-plotly-plot")).to_be_visible()
    expect(page.locator("#third-none")).to_be_visible()
    page.mouse.click(*cell_position(page, "heatmap-second", first, second))
    expect(page).to_have_url(re.compile(rf"first={first}&second={second}#third$"))
    expect(page.locator("#heatmap-third.js-plotly-plot")).to_be_visible()
    (trace,) = plot_traces(page, "heatmap-third")
    width = max(r["third_point"] for r in cells)
    expected = [None] * width
    for r in cells:
        expected[r["third_point"] - 1] = r["duplicates"]
    assert trace["z"] == [expected]
    shot(page, "third-map")

    # Another colour redraws the third map too.
    page.select_option("#metric", "asks")
    expect(page).to_have_url(re.compile(r"metric=asks"))
    asks = [None] * width
    for r in cells:
        asks[r["third_point"] - 1] = r["asks"]
    assert plot_traces(page, "heatmap-third")[0]["z"] == [asks]

    # A third-map cell is one thrice scenario: its timeline, three crashes.
    target = next(r for r in cells if r["duplicates"])
    page.mouse.click(*cell_position(page, "heatmap-third", target["third_point"], 0))
    expect(page).to_have_url(re.compile(rf"/scenarios/{target['id']}/\?back="))
    expect(page.locator("#third-point")).to_have_text(str(target["third_point"]))
    expect(page.locator("#timeline tr.ev-crash")).to_have_count(3)
    expect(page.locator("#dups")).to_have_text(str(target["duplicates"]))
    shot(page, "thrice-timeline")
    page.locator("#back").click()
    expect(page.locator("#heatmap-third.js-plotly-plot")).to_be_visible()
    no_js_errors(page)


# --- export ------------------------------------------------------------------------------------


def test_the_csv_exports_download_the_table_and_the_filtered_scenario_rows(page, site, user, login, wait_until, shot):
    sweep = run_sweep(user, DESIGNS, TRACKERS, depth=1, wait_until=wait_until)
    expected = expected_rows(DESIGNS, TRACKERS, depth=1)
    login(page, user)
    page.goto(f"{site.url}/sweeps/{sweep.pk}/")
    shot(page, "sweep")

    name, text = download(page, page.locator(f"a[href='/sweeps/{sweep.pk}/export/table.csv']"))
    assert name == f"sweep-{sweep.pk}-table.csv"
    # What `python -m agentcore table --format csv` prints, each row ending with the sweep's conditions,
    # a name a spreadsheet would run as a formula ("+ idempotency keys") neutralised with a '.
    cli = render(expected, "csv").splitlines()
    assert text.splitlines() == [
        cli[0] + ",crash_model,fsync,tracker_fault,tool_faults,person_faults,model,seed",
        *(exports.spreadsheet_cell(line) + ",panic,on,none,first,truthful,fixed,0" for line in cli[1:]),
    ]

    name, text = export_download(page, page.locator(f"a[href='/sweeps/{sweep.pk}/export/scenarios.csv']"))
    assert name == f"sweep-{sweep.pk}-scenarios.csv"
    lines = list(csv.reader(io.StringIO(text)))
    assert tuple(lines[0]) == exports.ROW_FIELDS
    records = [dict(zip(lines[0], line, strict=True)) for line in lines[1:]]
    assert len(records) == sum(r.once + r.twice for r in expected) == Scenario.objects.filter(sweep=sweep).count()
    dups: dict[str, int] = defaultdict(int)
    for r in records:
        assert r["sweep"] == str(sweep.pk) and r["second_point"] == ""  # depth 1: once scenarios only
        dups[r["config_name"]] += int(r["duplicates"])
    assert dups == {exports.spreadsheet_cell(r.name): r.dups for r in expected}

    # The scenario list's filters, then its CSV link: only the rows shown.
    page.goto(f"{site.url}/sweeps/{sweep.pk}/")
    page.get_by_role("link", name="scenarios", exact=True).click()
    page.select_option("#id_config", label="save after the reply")  # the table's name for after-reply, keyed
    page.select_option("#id_has_dups", "yes")
    page.get_by_role("button", name="filter").click()
    expect(page).to_have_url(re.compile(r"config=0.*has_dups=yes"))
    expect(page.locator("#count")).to_have_text(str(expected[0].with_dups))
    shot(page, "filtered-scenarios")
    name, text = export_download(page, page.get_by_role("link", name="CSV", exact=True))
    lines = list(csv.reader(io.StringIO(text)))
    assert tuple(lines[0]) == exports.ROW_FIELDS and len(lines) - 1 == expected[0].with_dups
    col = {f: i for i, f in enumerate(lines[0])}
    assert all(
        line[col["config_name"]] == "save after the reply" and int(line[col["duplicates"]]) > 0 for line in lines[1:]
    )
    no_js_errors(page)


# --- the question queue ------------------------------------------------------------------------


def test_answering_it_happened_in_the_queue_resumes_the_scenario_and_shows_if_it_was_right(
    page, site, user, login, shot
):
    expected = expected_rows(["markers"], ["keyed"], depth=1, person="queue")
    login(page, user)
    page.goto(site.url + "/")
    page.check("input[name=preset][value=custom]")
    page.check("input[name=designs][value=markers]")
    page.check("input[name=trackers][value=keyed]")
    page.select_option("select[name=depth]", "1")
    page.select_option("select[name=person]", "queue")
    page.click("#launch-button")
    expect(page).to_have_url(re.compile(r"/sweeps/\d+/$"))
    sweep = Sweep.objects.get()
    assert sweep.person == "queue"
    # Every chunk stored, the questions wait for a person: the page reloads itself to "waiting".
    expect(page.locator("#status")).to_have_text("waiting", timeout=60_000)
    expect(page.locator("[role=progressbar]")).to_have_attribute("aria-valuenow", re.compile(r"^100(\.0)?$"))
    asks = expected[0].asks
    expect(page.locator("#open-questions")).to_have_text(str(asks))
    shot(page, "sweep-waiting")

    page.locator("#open-questions").click()
    expect(page.locator("#open-count")).to_have_text(str(asks))
    expect(page.locator("#questions tbody tr")).to_have_count(asks)
    shot(page, "queue")
    ids = [int(t) for t in page.locator("#questions tbody tr td:first-child").all_inner_texts()]
    truth = dict(Question.objects.filter(pk__in=ids).values_list("pk", "truth"))
    # "it happened" twice: once where the tracker holds the effect (right), once where it does not (wrong).
    cases = [(next(q for q in ids if truth[q] is True), "right"), (next(q for q in ids if truth[q] is False), "wrong")]
    queue_url = page.url
    for qid, verdict in cases:
        scenario = Question.objects.get(pk=qid).scenario
        page.goto(f"{site.url}/scenarios/{scenario.pk}/")
        expect(page.locator("h1 .status")).to_have_text("waiting")
        shot(page, f"scenario-{verdict}-waiting")

        page.goto(queue_url)
        page.locator(f"form[action='/questions/{qid}/answer/'] button[value=yes]").click()
        expect(page.locator(".messages")).to_contain_text("answer stored: it happened; the scenario resumes")
        expect(page.locator(f"form[action='/questions/{qid}/answer/']")).to_have_count(0)

        # The worker resumes it from its stored state; its page then shows the outcome.
        page.goto(f"{site.url}/scenarios/{scenario.pk}/")
        reload_until(
            page,
            lambda: page.locator("h1 .status").inner_text() != "waiting",
            what=f"a worker to resume scenario {scenario.pk}",
        )
        expect(page.locator("h1 .status")).to_have_text("done")
        expect(page.locator("#scenario-questions")).to_contain_text("resumed: it happened (ann, ")
        expect(page.locator("#scenario-questions")).to_contain_text(f"; {verdict})")
        # Right: nothing lost, nothing doubled. Wrong ("it happened" when it did not): the call is missing.
        missing = "0" if verdict == "right" else "1"
        expect(page.locator("#missing")).to_have_text(missing)
        expect(page.locator("#dups")).to_have_text("0")
        expect(page.locator("#timeline")).to_contain_text("question")
        shot(page, f"scenario-{verdict}-resumed")
        scenario.refresh_from_db()
        assert scenario.status == "done" and scenario.missing == int(missing) and scenario.duplicates == 0

    page.goto(queue_url.split("?")[0] + "?status=answered")
    expect(page.locator("#questions tbody tr")).to_have_count(2)
    expect(page.locator("#questions strong.right")).to_have_count(1)
    expect(page.locator("#questions strong.wrong")).to_have_count(1)
    shot(page, "answered")
    no_js_errors(page)
