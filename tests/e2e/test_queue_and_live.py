"""End to end in Debian's Chromium, on the server as `make run` starts it (tests/e2e/conftest.py's `site`,
with make run's own workers): a queue sweep answered truthfully gives the scripted sweep's table, and
the comparison table grows live while a sweep runs, marked partial until it is done.

Screenshots: artifacts/screenshots/<test>-<nn>-<step>.png.
"""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import expect

import agentcore as agentsweep
from agentcore import jobs
from sweeps.models import Chunk, Question, Sweep
from tests.sweeps._web import member

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TITLES = [
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


@pytest.fixture
def user():
    return member("ann", "operator", password="pw-e2e-ann-123")


def launch(page, site, *, person, runs=1):
    """The chapter's table (the built-in job, 11 configurations, depth 2) launched from the form."""
    page.goto(site.url + "/")
    page.check("input[name=job][value=triage]")
    page.check("input[name=preset][value=table]")
    page.select_option("select[name=depth]", "2")
    page.fill("input[name=runs]", str(runs))
    page.select_option("select[name=person]", person)
    page.click("#launch-button")
    expect(page).to_have_url(re.compile(r"/sweeps/\d+/$"))
    return Sweep.objects.get(pk=int(page.url.rstrip("/").rsplit("/", 1)[1]))


def table_texts(page):
    """The comparison table's rows as the page shows them: [[name, cell text, ...], ...]."""
    return [[t.strip() for t in row.locator("td").all_inner_texts()] for row in page.locator("#results tbody tr").all()]


def settled(sweep):
    """The workers stored every chunk and resumed every answer: only open questions may be left."""
    status = Sweep.objects.values_list("status", flat=True).get(pk=sweep.pk)
    assert status != Sweep.Status.FAILED, Sweep.objects.get(pk=sweep.pk).error
    return not (
        Chunk.objects.filter(sweep=sweep, stored=False).exists()
        or Question.objects.filter(sweep=sweep, status=Question.Status.ANSWERED).exists()
    )


def test_a_queue_sweep_of_the_table_answered_truthfully_shows_the_scripted_table(
    page, site, user, login, wait_until, shot
):
    expected = agentsweep.sweep(agentsweep.table_configs(jobs.load("triage")), depth=2, workers=2).rows
    login(page, user)
    sweep = launch(page, site, person="queue")
    assert sweep.person == "queue"
    expect(page.locator("#status")).to_have_text("waiting", timeout=120_000)  # the page reloads itself

    # While questions are open: a row with waiting scenarios says how many, and shows "—" (with the
    # reason) for every number an answer can still change; no number on the page is negative.
    expect(page.locator("#table-partial")).to_be_visible()
    headers = [h.strip() for h in page.locator("#results thead th").all_inner_texts()]
    assert headers == [*TITLES, "waiting"]
    rows = {r[0]: r for r in table_texts(page)}
    keyless = rows["real loop, keyless tracker"]
    waiting = len(TITLES)  # the column after the table's
    assert int(keyless[waiting]) > 0 and keyless[2:waiting] == ["—"] * (waiting - 2) and keyless[1] == "38"
    assert rows["real loop, keyed tracker"] == ["real loop, keyed tracker", "38", "872", *["0"] * 8, "180", "0"]
    cell = page.locator("#results tbody tr", has_text="real loop, keyless tracker").locator("td[data-col=calls_plus] a")
    expect(cell).to_have_attribute("title", re.compile(r"^not final: \d+ scenarios of this row wait for an answer$"))
    assert not re.search(r"(^|\s)-\d", page.locator("#results").inner_text())
    shot(page, "questions-open")

    rounds = 0
    while True:  # an answer can lead to another question, and to more restart points to crash
        wait_until(lambda: settled(sweep), timeout=300, interval=0.2, what="the workers to store and resume")
        page.goto(f"{site.url}/sweeps/{sweep.pk}/questions/")
        if page.locator("#open-count").inner_text() == "0":
            break
        if rounds == 0:
            shot(page, "queue")
        page.locator("#answer-all").click()
        expect(page.locator(".messages")).to_contain_text(
            re.compile(r"\d+ open questions? answered from the tracker's records")
        )
        rounds += 1
    assert rounds > 1

    page.goto(f"{site.url}/sweeps/{sweep.pk}/")
    expect(page.locator("#status")).to_have_text("done", timeout=60_000)
    expect(page.locator("#table-partial")).to_be_hidden()
    headers = [h.strip() for h in page.locator("#results thead th").all_inner_texts()]
    assert headers == TITLES
    assert table_texts(page) == [[r.name, *(str(v) for v in r.values())] for r in expected]
    shot(page, "answered-done")
    assert page.errors == [], page.errors


def test_the_table_grows_live_marked_partial_until_the_sweep_is_done(page, site, user, login, shot):
    # Four job runs in sequence (134,376 scenarios): long enough, merged equal states and all, for
    # the 1.5 s poll to see the table grow (storing the rows takes most of it).
    expected = agentsweep.sweep(
        [
            agentsweep.Config(c.job, c.design, c.tracker, 4, name=c.name)
            for c in agentsweep.table_configs(jobs.load("triage"))
        ],
        depth=2,
        workers=2,
    ).rows
    login(page, user)
    sweep = launch(page, site, person="scripted", runs=4)
    page.evaluate("window.notReloaded = true")  # gone if the page reloads: the cells change in place
    seen: list[int] = []  # the sum of the "once" column, at each look while the sweep runs
    deadline = time.monotonic() + 180
    while True:
        assert time.monotonic() < deadline, f"the sweep did not finish: saw {seen}"
        try:
            if not page.evaluate("window.notReloaded === true"):
                break  # the status changed: the page reloaded itself
            try:
                expect(page.locator("#table-partial")).to_be_visible(timeout=1000)
            except AssertionError:
                if not page.evaluate("window.notReloaded === true"):
                    break  # the sweep ended between the two looks: the page that reloaded is done
                raise
            once = sum(int(t) for t in page.locator("#results td[data-col=once] a").all_inner_texts())
        except PlaywrightError:  # the page reloads itself meanwhile
            break
        if not seen or once != seen[-1]:
            seen.append(once)
            if len(seen) == 2:
                shot(page, "growing")
        page.wait_for_timeout(200)
    grown = [n for n in seen if n > 0]
    assert len(grown) >= 2 and grown == sorted(grown), f"the table did not grow in place: {seen}"

    expect(page.locator("#status")).to_have_text("done", timeout=180_000)
    expect(page.locator("#table-partial")).to_be_hidden()
    expect(page.locator("#results")).to_have_attribute("data-partial", "0")
    assert table_texts(page) == [[r.name, *(str(v) for v in r.values())] for r in expected]
    assert Sweep.objects.get(pk=sweep.pk).status == Sweep.Status.DONE
    shot(page, "done")
    assert page.errors == [], page.errors
