"""The tour: the main flows a newcomer goes through, on the `make run` server, one screenshot per stop.

`make screenshots` runs this module with SWEEPSITE_SCREENSHOTS=docs/screenshots: the pictures the
README shows. Under `make test` it runs as any browser test and writes them to
artifacts/screenshots/tour/ (gitignored), so the README's flow is tested every time.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from django.conf import settings
from playwright.sync_api import expect

from sweeps.models import Question, Scenario, Sweep
from tests.sweeps._web import member

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "pw-tour-ada-123"
OUT = Path(os.environ.get("SWEEPSITE_SCREENSHOTS") or Path(settings.BASE_DIR) / "artifacts" / "screenshots" / "tour")


def snap(page, name: str, full: bool = False) -> None:
    """docs/screenshots/NAME.png (or the artifacts folder): the visible window, as a person sees it
    (or the whole page)."""
    OUT.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(OUT / f"{name}.png"), full_page=full)


def wait_done(sweep_id: int, wait_until) -> Sweep:
    wait_until(
        lambda: Sweep.objects.filter(pk=sweep_id, status__in=["done", "failed", "waiting"]).exists(),
        timeout=120,
        what=f"sweep {sweep_id} to finish",
    )
    return Sweep.objects.get(pk=sweep_id)


def launch(
    page,
    site,
    *,
    preset: str = "table",
    designs=(),
    trackers=(),
    depth: str = "2",
    person: str = "scripted",
    name: str = "",
    runs: str = "1",
) -> int:
    page.goto(site.url + "/")
    page.fill("input[name=runs]", runs)
    page.check(f"input[name=preset][value={preset}]")
    for d in designs:
        page.check(f"input[name=designs][value='{d}']")
    for t in trackers:
        page.check(f"input[name=trackers][value='{t}']")
    page.select_option("select[name=depth]", depth)
    page.select_option("select[name=person]", person)
    page.fill("input[name=name]", name)
    page.click("#launch-button")
    expect(page).to_have_url(re.compile(r"/sweeps/\d+/$"))
    return int(re.search(r"/sweeps/(\d+)/$", page.url).group(1))


def test_the_tour_of_the_main_flows(page, site, wait_until):
    member("ada", "operator", password=PASSWORD)
    page.set_viewport_size({"width": 1280, "height": 860})

    # 1. An anonymous visitor is sent to log in; then the home page.
    page.goto(site.url + "/")
    expect(page).to_have_url(re.compile(r"/accounts/login/\?next=/$"))
    page.fill("#id_username", "ada")
    page.fill("#id_password", PASSWORD)
    page.get_by_role("button", name="log in").click()
    expect(page.locator("#launch-button")).to_be_visible()
    snap(page, "01-home")

    # 2. The launch form with the planned size of the chapter's table at 2 job runs.
    page.fill("input[name=runs]", "2")
    page.locator("input[name=runs]").dispatch_event("change")
    expect(page.locator("#plan-text")).to_contain_text("35,", timeout=30_000)
    page.locator("#launch").scroll_into_view_if_needed()
    snap(page, "02-launch-form")

    # 3. The chapter's table at 2 runs, launched: the table grows live, marked partial; then done.
    table_id = launch(page, site, name="the chapter's table, 2 runs", runs="2")
    expect(page.locator("#table-partial")).to_be_visible()
    wait_until(
        lambda: Scenario.objects.filter(sweep_id=table_id).count() > 8000, timeout=120, what="a part of the table"
    )
    page.wait_for_timeout(1600)  # the page's next poll
    snap(page, "03-sweep-running")
    sweep = wait_done(table_id, wait_until)
    assert sweep.status == "done", sweep.error
    expect(page.locator("#status")).to_have_text("done", timeout=30_000)
    expect(page.locator("#table-partial")).to_be_hidden()
    snap(page, "04-sweep-done")

    # 4. Heatmaps.
    page.get_by_role("link", name="heatmaps").click()
    expect(page.locator("#heatmap-first .heatmaplayer image")).to_have_count(1)
    snap(page, "05-heatmaps")

    # 5. A number of the table opens the scenarios behind it, and says it: "save once per turn", dups.
    page.goto(f"{site.url}/sweeps/{table_id}/")
    dups = page.locator("#results tbody tr").first.locator("td").nth(4)
    number = dups.inner_text().strip()
    dups.locator("a").click()
    expect(page.locator("main")).to_contain_text(f"{number} duplicate effects")
    snap(page, "06-scenarios")

    # 6. A twice scenario with duplicates: its timeline, drawn as swimlanes.
    target = (
        Scenario.objects.filter(sweep_id=table_id, config=0, second_point__gt=0, duplicates__gt=0)
        .order_by("first_point", "second_point")
        .first()
    )
    page.goto(f"{site.url}/scenarios/{target.pk}/")
    expect(page.locator("#timeline")).to_be_visible()
    snap(page, "07-timeline")

    # 7. The question queue: the real loop with a keyless tracker, people answer.
    queue_id = launch(
        page,
        site,
        preset="custom",
        designs=["loop"],
        trackers=["keyless"],
        person="queue",
        name="real loop, keyless, people answer",
        runs="2",
    )
    # Off the sweep page while it runs: that page reloads itself when its status changes, which
    # aborted the navigation below once (ERR_ABORTED) when the two met.
    page.goto("about:blank")
    wait_done(queue_id, wait_until)
    page.goto(f"{site.url}/sweeps/{queue_id}/questions/")
    expect(page.locator("main")).to_contain_text("did this call happen?")
    snap(page, "08-questions")

    # Every question answered truthfully, round after round, until the sweep is done (a deadline,
    # not a count of rounds: on a loaded machine a round's resumes take longer).
    def answered_to_the_end() -> bool:
        if Sweep.objects.get(pk=queue_id).status == "done":
            return True
        if Question.objects.filter(sweep_id=queue_id, status="open").exists():
            page.goto(f"{site.url}/sweeps/{queue_id}/questions/")
            page.locator("form[action$='/answer-all/'] button").click()
        page.wait_for_timeout(1000)
        return False

    wait_until(answered_to_the_end, timeout=180, what=f"queue sweep {queue_id} answered to the end")

    # 8. Compare it with the table: people who answer truthfully give the scripted row, number for number;
    # the other rows are only in the table.
    page.goto(f"{site.url}/compare/?a={table_id}&b={queue_id}")
    same = page.locator("#compare tbody tr", has_text="real loop, keyless tracker")
    expect(same).to_have_attribute("data-in", "both")
    expect(same).not_to_have_class(re.compile(r"\bchanged\b"))
    snap(page, "09-compare", full=True)
