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

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "pw-tour-ada-123"
OUT = Path(os.environ.get("SWEEPSITE_SCREENSHOTS") or Path(settings.BASE_DIR) / "artifacts" / "screenshots" / "tour")


def snap(page, name: str) -> None:
    """docs/screenshots/NAME.png (or the artifacts folder): the visible window, as a person sees it."""
    OUT.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(OUT / f"{name}.png"))


def wait_done(sweep_id: int, wait_until) -> Sweep:
    wait_until(lambda: Sweep.objects.filter(pk=sweep_id, status__in=["done", "failed", "waiting"]).exists(),
               timeout=120, what=f"sweep {sweep_id} to finish")
    return Sweep.objects.get(pk=sweep_id)


def launch(page, site, *, preset: str = "table", designs=(), trackers=(), depth: str = "2",
           person: str = "scripted", name: str = "") -> int:
    page.goto(site.url + "/")
    page.check(f"input[name=preset][value={preset}]")
    for d in designs:
        page.check(f"input[name=designs][value='{d}']")
    for t in trackers:
        page.check(f"input[name=trackers][value='{t}']")
    page.select_option("select[name=depth]", depth)
    page.select_option("select[name=person]", person)
    if name and page.locator("input[name=name]").count():
        page.fill("input[name=name]", name)
    page.click("#launch-button")
    expect(page).to_have_url(re.compile(r"/sweeps/\d+/$"))
    return int(re.search(r"/sweeps/(\d+)/$", page.url).group(1))


def test_the_tour_of_the_main_flows(page, site, django_user_model, wait_until):
    django_user_model.objects.create_user("ada", password=PASSWORD, is_staff=True)
    page.set_viewport_size({"width": 1280, "height": 860})

    # 1. The home page, as an anonymous visitor finds it.
    page.goto(site.url + "/")
    snap(page, "01-home")

    # 2. Log in; the launch form.
    page.goto(site.url + "/accounts/login/?next=/")
    page.fill("#id_username", "ada")
    page.fill("#id_password", PASSWORD)
    page.get_by_role("button", name="log in").click()
    expect(page.locator("#launch-button")).to_be_visible()
    page.locator("#launch").scroll_into_view_if_needed()
    snap(page, "02-launch-form")

    # 3. The chapter's table, launched; the sweep page when it is done.
    table_id = launch(page, site, name="the chapter's table")
    sweep = wait_done(table_id, wait_until)
    assert sweep.status == "done", sweep.error
    page.reload()
    expect(page.locator("#status")).to_have_text("done")
    snap(page, "03-sweep")

    # 4. Heatmaps.
    page.get_by_role("link", name="heatmaps").click()
    expect(page.locator("#heatmap-first .heatmaplayer image")).to_have_count(1)
    snap(page, "04-heatmaps")

    # 5. A number of the table opens the scenarios behind it: "save once per turn", dups.
    page.goto(f"{site.url}/sweeps/{table_id}/")
    page.locator("#results tbody tr").first.locator("td").nth(4).locator("a").click()
    expect(page.locator("#scenarios")).to_be_visible()
    snap(page, "05-scenarios")

    # 6. A twice scenario with duplicates: its timeline.
    target = (Scenario.objects.filter(sweep_id=table_id, config=0, second_point__gt=0, duplicates__gt=0)
              .order_by("first_point", "second_point").first())
    page.goto(f"{site.url}/scenarios/{target.pk}/")
    expect(page.locator("#timeline")).to_be_visible()
    snap(page, "06-timeline")

    # 7. The question queue: the real loop with a keyless tracker, people answer.
    queue_id = launch(page, site, preset="custom", designs=["loop"], trackers=["keyless"], depth="1",
                      person="queue", name="real loop, keyless, people answer")
    wait_until(lambda: Question.objects.filter(sweep_id=queue_id).exists(), timeout=120, what="questions")
    wait_done(queue_id, wait_until)
    page.goto(f"{site.url}/sweeps/{queue_id}/questions/")
    expect(page.locator("main")).to_contain_text("did this call happen?")
    snap(page, "07-questions")
