"""End to end in Debian's Chromium, on the server as `make run` starts it (tests/e2e/conftest.py's `site`,
with its own Celery workers): a sweep's life beside its run (the planned size on the launch form before
launching, cancel then resume, delete through its confirm page, a name and notes) and the small things
a user meets (GET of the launch address, a chosen file switches the source, the home page says what
the tool is, "1 configuration", questions name the run as timelines do).

Screenshots of every page visited: artifacts/screenshots/<test>-<nn>-<step>.png.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from sweeps import configs as sweep_configs
from sweeps.models import Chunk, Question, Scenario, Sweep
from sweeps.services import launch
from tests.e2e._pages import no_js_errors
from tests.sweeps._web import member

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TRIAGE = sweep_configs.builtin_job_source("triage")
TABLE = sweep_configs.table_configs_for()
LOOP = [{"name": "real loop, keyed tracker", "design": "loop", "tracker": "keyed"}]
MARKERS = [{"name": "+ attempt markers, no keys", "design": "markers", "tracker": "keyed"}]
# The chapter's table with 2 job runs: 824 chunks, 35,280 scenarios (counted by playing every point),
# a few seconds on two workers: long enough to cancel midway.
TWO_RUNS_CHUNKS, TWO_RUNS_SCENARIOS = 824, 35_280


@pytest.fixture
def ann():
    return member("ann", "operator", password="pw-e2e-ann-123")


@pytest.fixture
def bob():
    return member("bob", "operator", password="pw-e2e-bob-123")


def status(sweep):
    return Sweep.objects.values_list("status", flat=True).get(pk=sweep.pk)


def finished(sweep, wait_until, timeout=120):
    wait_until(
        lambda: status(sweep) in ("done", "failed", "waiting"), timeout=timeout, what=f"sweep {sweep.pk} to finish"
    )
    sweep.refresh_from_db()
    return sweep


def number(page, selector):
    return int(page.locator(selector).inner_text().replace(",", "").strip())


# --- the launch form ---------------------------------------------------------------------------


def test_the_launch_form_shows_the_planned_size_before_anything_is_launched(page, site, ann, login, shot):
    login(page, ann)
    page.goto(site.url + "/")
    plan = page.locator("#plan-text")
    expect(plan).to_contain_text("412 chunks · 9,663 scenarios · about ")
    expect(plan).to_contain_text("scenarios/s")
    shot(page, "plan-table")
    page.select_option("select[name=depth]", "1")
    expect(plan).to_contain_text("412 chunks · 412 scenarios · about ")
    page.select_option("select[name=depth]", "2")
    page.fill("input[name=runs]", "10")
    page.locator("input[name=runs]").dispatch_event("change")
    expect(plan).to_contain_text(re.compile(r"^4,120 chunks · about 8\d\d,\d00 scenarios · about "))  # ~814,560
    shot(page, "plan-ten-runs")
    page.fill("input[name=runs]", "1")
    page.check("input[name=preset][value=custom]")
    expect(plan).to_contain_text("choose at least one design")
    page.check("input[name=designs][value=loop]")
    page.check("input[name=trackers][value=keyed]")
    expect(plan).to_contain_text("38 chunks · 910 scenarios · about ")  # the README's row: 38 + 872
    shot(page, "plan-custom")
    assert Sweep.objects.count() == 0 and Chunk.objects.count() == 0  # planning launched nothing

    # Launched with a name and notes: both show on the sweep page and in the list.
    page.fill("input[name=name]", "loop before the fix")
    page.fill("textarea[name=notes]", "keyed tracker, one run")
    page.click("#launch-button")
    expect(page).to_have_url(re.compile(r"/sweeps/\d+/$"))
    sweep = Sweep.objects.get()
    assert (sweep.name, sweep.notes, sweep.total_chunks) == ("loop before the fix", "keyed tracker, one run", 38)
    expect(page.locator("#sweep-name")).to_have_text("loop before the fix")
    expect(page.locator("#sweep-notes")).to_have_text("keyed tracker, one run")
    expect(page.locator("#status")).to_have_text("done", timeout=60_000)
    expect(page.locator("#scenarios")).to_have_text("910")
    page.get_by_role("banner").get_by_role("link", name="Sweeps", exact=True).click()
    expect(page.locator("#sweeps tbody tr").first.locator(".sweep-name")).to_have_text("loop before the fix")
    shot(page, "named-in-the-list")
    no_js_errors(page)


def test_the_world_is_launched_from_the_form_and_said_by_the_sweep_page(page, site, ann, login, shot):
    login(page, ann)
    page.goto(site.url + "/")
    page.check("input[name=preset][value=custom]")
    page.check("input[name=designs][value=loop]")
    page.check("input[name=trackers][value=keyed]")
    page.select_option("select[name=depth]", "1")
    world = page.locator("#world")
    expect(world.locator("input[name=tracker_fault]")).to_have_value("none")
    expect(world).to_contain_text("ttl:N: it forgets keys after N requests")
    # A bad spelling: the planned size says agentcore's message instead, and launching stores nothing.
    page.fill("input[name=tracker_fault]", "ttl:0")
    page.locator("input[name=tracker_fault]").dispatch_event("change")
    expect(page.locator("#plan-text")).to_contain_text("tracker fault 'ttl:0': N must be a whole number from 1 to")
    page.click("#launch-button")
    expect(page.locator("#id_tracker_fault_error")).to_contain_text("N must be a whole number from 1 to")
    assert Sweep.objects.count() == 0
    shot(page, "bad-tracker-fault")

    page.fill("input[name=tracker_fault]", "ttl:5")
    page.fill("input[name=tool_faults]", "k:2")
    page.fill("input[name=person_faults]", "deny:0.5")
    page.select_option("select[name=model]", "fickle")
    page.fill("input[name=seed]", "7")
    page.click("#launch-button")
    expect(page).to_have_url(re.compile(r"/sweeps/\d+/$"))
    sweep = Sweep.objects.get()
    assert sweep_configs.conditions_of(sweep) == sweep_configs.Conditions(
        "panic", True, "ttl:5", "k:2", "deny:0.5", "fickle", 7
    )
    expect(page.locator("#conditions")).to_have_text(
        "crash model: panic, fsync on, tracker fault: ttl:5, tool faults: k:2, person: deny:0.5, model: fickle, seed: 7"
    )
    expect(page.locator("#status")).to_have_text(re.compile("done|waiting|failed"), timeout=60_000)
    shot(page, "world-sweep")
    no_js_errors(page)


def test_a_get_of_the_launch_address_lands_on_the_form(page, site, ann, login):
    login(page, ann)
    response = page.goto(site.url + "/sweeps/launch/")
    assert response.status == 200
    expect(page).to_have_url(site.url + "/#launch")
    expect(page.locator("#launch-button")).to_be_visible()
    no_js_errors(page)


def test_choosing_a_job_file_switches_the_source_to_upload(page, site, ann, login, tmp_path, shot):
    job = tmp_path / "mine.json"
    job.write_text(TRIAGE.replace('"triage"', '"my triage"', 1))
    login(page, ann)
    page.goto(site.url + "/")
    expect(page.locator("input[name=job][value=triage]")).to_be_checked()
    page.set_input_files("input[name=job_file]", str(job))
    expect(page.locator("input[name=job][value=upload]")).to_be_checked()
    expect(page.locator("#plan-text")).to_contain_text("412 chunks · 9,663 scenarios")  # planned from the file
    shot(page, "file-chosen")
    # Selecting the built-in job again with the file still chosen is refused, never silently ignored.
    page.check("input[name=job][value=triage]")
    page.select_option("select[name=depth]", "1")
    page.click("#launch-button")
    expect(page.locator("#launch")).to_contain_text("a job file was chosen")
    shot(page, "file-with-built-in-refused")
    assert Sweep.objects.count() == 0
    no_js_errors(page)


# --- cancel, resume, delete -----------------------------------------------------------------------


def test_cancel_midway_then_resume_gives_exactly_the_full_table(page, site, ann, login, wait_until, shot):
    sweep = launch.sweep_create(user=ann, job_source=TRIAGE, configs=TABLE, depth=2, runs=2, name="two runs")
    assert sweep.total_chunks == TWO_RUNS_CHUNKS
    login(page, ann)  # its owner (or staff) may cancel and resume: it loses nothing
    page.goto(f"{site.url}/sweeps/{sweep.pk}/")
    expect(page.locator("#status")).to_have_text("running")
    wait_until(
        lambda: Chunk.objects.filter(sweep=sweep, stored=True).count() >= 40,
        timeout=60,
        what="the workers to store some chunks",
    )
    shot(page, "running")
    page.click("#cancel")
    expect(page.locator("#status")).to_have_text("cancelled")
    expect(page.locator(".messages")).to_contain_text(f"sweep {sweep.pk} cancelled")
    page.wait_for_timeout(500)  # a store begun before the cancel commits now or never
    page.reload()
    rows = number(page, "#scenarios")
    assert 0 < rows < TWO_RUNS_SCENARIOS
    expect(page.locator("#eta")).to_have_text("—")
    shot(page, "cancelled")
    page.wait_for_timeout(2500)
    page.reload()
    expect(page.locator("#scenarios")).to_have_text(str(rows))  # rows stopped growing
    assert Scenario.objects.filter(sweep=sweep).count() == rows and status(sweep) == "cancelled"
    expect(page.locator("#cancel")).to_have_count(0)

    page.click("#resume")
    expect(page.locator(".messages")).to_contain_text(re.compile(r"\d+ missing chunks? queued again"))
    expect(page.locator("#status")).to_have_text("done", timeout=180_000)  # the page reloads itself
    expect(page.locator("#scenarios")).to_have_text(str(TWO_RUNS_SCENARIOS))
    expect(page.locator("#chunks")).to_have_text(f"{TWO_RUNS_CHUNKS} / {TWO_RUNS_CHUNKS}")
    shot(page, "resumed-done")
    assert Scenario.objects.filter(sweep=sweep).count() == TWO_RUNS_SCENARIOS
    no_js_errors(page)


def test_delete_goes_through_a_confirm_page(page, site, ann, bob, login, wait_until, shot):
    sweep = finished(launch.sweep_create(user=ann, job_source=TRIAGE, configs=LOOP, depth=1), wait_until)
    kept = finished(launch.sweep_create(user=ann, job_source=TRIAGE, configs=LOOP, depth=1), wait_until)
    # Another operator: no delete link, and the confirm page is refused.
    login(page, bob)
    page.goto(f"{site.url}/sweeps/{sweep.pk}/")
    expect(page.locator("#delete")).to_have_count(0)
    response = page.goto(f"{site.url}/sweeps/{sweep.pk}/delete/")
    assert response.status == 403
    page.context.clear_cookies()

    login(page, ann)
    page.goto(f"{site.url}/sweeps/{sweep.pk}/")
    page.click("#delete")
    expect(page).to_have_url(f"{site.url}/sweeps/{sweep.pk}/delete/")
    expect(page.locator("#removed-scenarios")).to_have_text("38")
    expect(page.locator("#removed-questions")).to_have_text("0")
    shot(page, "confirm")
    page.click("#keep")
    expect(page).to_have_url(f"{site.url}/sweeps/{sweep.pk}/")
    assert Sweep.objects.filter(pk=sweep.pk).exists()
    page.click("#delete")
    page.click("#confirm-delete-button")
    expect(page).to_have_url(site.url + "/")
    expect(page.locator(".messages")).to_contain_text(f"sweep {sweep.pk} deleted with its 38 scenarios")
    expect(page.locator(f"#sweeps a[href='/sweeps/{sweep.pk}/']")).to_have_count(0)
    expect(page.locator(f"#sweeps a[href='/sweeps/{kept.pk}/']")).to_have_count(1)
    shot(page, "deleted")
    assert not Sweep.objects.filter(pk=sweep.pk).exists() and not Scenario.objects.filter(sweep_id=sweep.pk).exists()
    no_js_errors(page)


def test_the_owner_edits_the_name_and_notes_on_the_sweep_page(page, site, ann, login, wait_until):
    sweep = finished(launch.sweep_create(user=ann, job_source=TRIAGE, configs=LOOP, depth=1), wait_until)
    login(page, ann)
    page.goto(f"{site.url}/sweeps/{sweep.pk}/")
    page.fill("#edit-notes input[name=name]", "baseline")
    page.fill("#edit-notes textarea[name=notes]", "before the change of design")
    page.click("#save-notes")
    expect(page.locator(".messages")).to_contain_text("name and notes saved")
    expect(page.locator("#sweep-name")).to_have_text("baseline")
    expect(page.locator("#sweep-notes")).to_have_text("before the change of design")
    no_js_errors(page)


# --- small things -------------------------------------------------------------------------------


def test_the_home_page_says_what_the_tool_is_and_offers_a_viewer_no_launch_form(page, site, login, shot):
    login(page, member("vic", "viewer"))
    page.goto(site.url + "/")
    expect(page.locator("#about")).to_contain_text("crashes a durable AI-agent loop at every point")
    expect(page.locator("#launch")).to_have_count(0)
    expect(page.locator("#no-launch")).to_contain_text("launching needs the operator role")
    shot(page, "home")
    no_js_errors(page)


def test_a_one_configuration_sweep_says_1_configuration(page, site, ann, login, wait_until):
    sweep = finished(launch.sweep_create(user=ann, job_source=TRIAGE, configs=LOOP, depth=1), wait_until)
    login(page, ann)
    page.goto(f"{site.url}/sweeps/{sweep.pk}/")
    expect(page.locator("main")).to_contain_text("1 configuration · depth 1")
    expect(page.locator("main")).not_to_contain_text("1 configurations")


def test_questions_name_the_run_as_the_timeline_does(page, site, ann, login, wait_until, shot):
    sweep = finished(
        launch.sweep_create(user=ann, job_source=TRIAGE, configs=MARKERS, depth=1, person="queue"), wait_until
    )
    assert sweep.status == Sweep.Status.WAITING
    q = Question.objects.filter(sweep=sweep).order_by("pk").first()
    login(page, ann)
    page.goto(f"{site.url}/sweeps/{sweep.pk}/questions/")
    row = page.locator("#questions tbody tr").first
    expect(row.locator(".run-name")).to_have_text("(run-1)")
    expect(page.locator("#questions")).not_to_contain_text("run 0:")
    shot(page, "questions")
    page.goto(f"{site.url}/scenarios/{q.scenario_id}/")
    expect(page.locator("#timeline")).to_contain_text("run-1")
    no_js_errors(page)
