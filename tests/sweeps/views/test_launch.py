"""views/launch.py: the sweeps' list, the launch form and its planned size; bad input is a 400 that
stores nothing."""

from __future__ import annotations

import html
import json
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from kombu.exceptions import OperationalError

from agentcore import DESIGNS, MODES
from sweeps import limits
from sweeps.configs import Conditions, builtin_job_source, conditions_of
from sweeps.models import Chunk, Sweep
from sweeps.services import launch
from tests.sweeps import _data
from tests.sweeps._web import REFUSED_SECONDS, launch_data, text, timed

pytestmark = pytest.mark.django_db


def test_list_shows_sweeps(client, sweep):
    r = client.get(reverse("sweeps:list"))
    assert r.status_code == 200
    assert reverse("sweeps:detail", args=[sweep.pk]) in text(r)
    assert "3 / 4" in text(r)  # chunks stored / total


def test_list_offers_no_launch_form_to_anonymous(anon, settings):
    settings.SWEEPSITE_PUBLIC_READ = True
    r = anon.get(reverse("sweeps:list"))
    assert 'name="request_token"' not in text(r)
    assert "to launch a sweep" in text(r)


def test_list_tells_a_viewer_why_there_is_no_launch_form(client):
    r = client.get(reverse("sweeps:list"))
    assert 'name="request_token"' not in text(r)
    assert "Your account (viewer) reads sweeps; launching needs the operator role" in text(r)


def test_the_home_page_says_what_the_tool_is(client):
    about = re.search(r'<p id="about">(.*?)</p>', text(client.get(reverse("sweeps:list"))), re.S).group(1)
    assert "crashes a durable AI-agent loop at every point" in about and "sweep" in about


@pytest.mark.parametrize(("configs", "says"), [(1, "1 configuration ·"), (3, "3 configurations ·")])
def test_the_sweep_page_counts_configurations_in_good_english(client, configs, says):
    s = _data.make_sweep(configs)
    assert says in text(client.get(reverse("sweeps:detail", args=[s.pk])))


def test_launch_form_carries_a_fresh_request_token(auth):
    tokens = [
        re.search(r'name="request_token" value="([0-9a-f]{32})"', text(auth.get(reverse("sweeps:list")))).group(1)
        for _ in range(2)
    ]
    assert tokens[0] != tokens[1]


def test_list_is_paginated(client):
    for _ in range(25):
        _data.make_sweep(1)
    first, second = client.get(reverse("sweeps:list")), client.get(reverse("sweeps:list") + "?page=2")
    assert text(first).count('<td><a href="/sweeps/') == 20
    assert text(second).count('<td><a href="/sweeps/') == 5


def test_list_bad_page_is_400(client):
    assert client.get(reverse("sweeps:list") + "?page=x").status_code == 400
    assert client.get(reverse("sweeps:list") + "?page=99").status_code == 400


def test_launch_table_preset_creates_the_chapter_sweep(auth, user):
    r = auth.post(reverse("sweeps:launch"), launch_data())
    sweep = Sweep.objects.get()
    assert r.status_code == 302 and r["Location"] == reverse("sweeps:detail", args=[sweep.pk])
    assert len(sweep.configs) == 11 and sweep.created_by == user and sweep.total_chunks > 0


def test_launch_audit_preset_sweeps_every_design_with_every_tracker_mode_in_the_world_chosen(auth):
    r = auth.post(reverse("sweeps:launch"), launch_data(preset="audit", runs="2", depth="1", model="fresh-ids"))
    sweep = Sweep.objects.get()
    assert r.status_code == 302 and sweep.runs == 2 and sweep.model == "fresh-ids"
    assert [(c["design"], c["tracker"]) for c in sweep.configs] == [(d, t) for d in DESIGNS for t in MODES]
    assert sweep.configs[0]["name"] == "save once per turn"  # the chapter's names where it has them


def test_launch_stores_the_conditions_chosen(auth):
    auth.post(
        reverse("sweeps:launch"),
        launch_data(
            preset="custom",
            designs=["loop"],
            trackers=["keyed"],
            depth="1",
            crash_model="power-cut",
            fsync="off",
            tracker_fault="crash",
        ),
    )
    sweep = Sweep.objects.get()
    assert (sweep.crash_model, sweep.fsync, sweep.tracker_fault) == ("power-cut", False, "crash")


def test_launch_stores_the_world_chosen(auth):
    r = auth.post(
        reverse("sweeps:launch"),
        launch_data(
            preset="custom",
            designs=["loop"],
            trackers=["keyed"],
            depth="1",
            tracker_fault="ttl:5",
            tool_faults="k:2",
            person_faults="deny:0.5",
            model="fickle",
            seed="7",
        ),
    )
    sweep = Sweep.objects.get()
    assert r.status_code == 302 and conditions_of(sweep) == Conditions(
        "panic", True, "ttl:5", "k:2", "deny:0.5", "fickle", 7
    )


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("tracker_fault", "ttl:0", "tracker fault &#x27;ttl:0&#x27;: N must be a whole number from 1 to 10000"),
        (
            "person_faults",
            "liar",
            "unknown person &#x27;liar&#x27; (choose from truthful, deny:P, wrong:P, adversarial)",
        ),
        ("seed", "-2", "Ensure this value is greater than or equal to 0."),
    ],
)
def test_launch_with_a_bad_world_says_why_by_the_field_and_stores_nothing(auth, field, value, message):
    r = auth.post(reverse("sweeps:launch"), launch_data(**{field: value}))
    assert r.status_code == 400 and Sweep.objects.count() == 0
    world = re.search(r'<fieldset id="world">(.*?)</fieldset>', text(r), re.S).group(1)
    assert f'<ul class="errorlist" id="id_{field}_error"><li>{message}</li></ul>' in world


def test_launch_form_offers_the_conditions_with_their_defaults_selected(auth):
    page = text(auth.get(reverse("sweeps:list")))
    form = re.search(r'<fieldset id="conditions">(.*?)</fieldset>', page, re.S).group(1)
    assert re.search(r'<option value="panic" selected>', form) and '<option value="power-cut">' in form
    assert re.search(r'<option value="on" selected>', form) and '<option value="off">' in form
    assert "what a crash leaves of the checkpoint files" in form


def test_launch_form_has_a_world_section_at_agentcore_s_defaults_with_help(auth):
    page = text(auth.get(reverse("sweeps:list")))
    world = re.search(r'<fieldset id="world"><legend>World</legend>(.*?)</fieldset>', page, re.S).group(1)
    for name, value in (
        ("tracker_fault", "none"),
        ("tool_faults", "first"),
        ("person_faults", "truthful"),
        ("seed", "0"),
    ):
        field = re.search(rf'<input [^>]*name="{name}"[^>]*>', world).group(0)
        assert f'value="{value}"' in field and f'aria-describedby="id_{name}_helptext"' in field
    assert re.search(r'<option value="fixed" selected>', world) and '<option value="fickle">' in world
    assert re.search(r'<datalist id="id_tracker_fault_spellings">.*<option value="ttl:5">', world)
    assert 'list="id_tracker_fault_spellings"' in world
    assert "ttl:N: it forgets keys after N requests" in world and "deny:P" in world
    assert page.index('id="conditions"') < page.index('id="world"')


def test_launch_twice_with_one_token_makes_one_sweep(auth):
    data = launch_data()
    first, second = auth.post(reverse("sweeps:launch"), data), auth.post(reverse("sweeps:launch"), data)
    assert Sweep.objects.count() == 1
    assert first["Location"] == second["Location"]


def test_launch_custom_designs_times_trackers(auth):
    auth.post(
        reverse("sweeps:launch"),
        launch_data(
            preset="custom", designs=["keys", "loop"], trackers=["keyed", "keyless", "lookup"], depth="1", runs="2"
        ),
    )
    sweep = Sweep.objects.get()
    assert [(c["design"], c["tracker"]) for c in sweep.configs] == [
        (d, t) for d in ("keys", "loop") for t in ("keyed", "keyless", "lookup")
    ]
    assert (sweep.depth, sweep.runs) == (1, 2)


def test_launch_uploaded_job_file(auth):
    job = json.loads(builtin_job_source())
    job["name"] = "my job"
    upload = SimpleUploadedFile("job.json", json.dumps(job).encode(), content_type="application/json")
    auth.post(reverse("sweeps:launch"), launch_data(job="upload", job_file=upload))
    assert Sweep.objects.get().job_name == "my job"


def test_launch_of_the_built_in_job_with_a_file_chosen_is_refused(auth):
    upload = SimpleUploadedFile("job.json", builtin_job_source().encode(), content_type="application/json")
    r = auth.post(reverse("sweeps:launch"), launch_data(job="triage", job_file=upload))
    assert r.status_code == 400 and "a job file was chosen" in text(r)
    assert Sweep.objects.count() == 0


@pytest.mark.parametrize(
    "changes",
    [
        {"job": "upload", "job_file": SimpleUploadedFile("j.json", b"{not json")},
        {"job": "upload", "job_file": SimpleUploadedFile("j.json", b'{"name": "x", "tools": {}, "turns": []}')},
        {"job": "upload"},
        {"job": "nope"},
        {"preset": "custom", "designs": [], "trackers": ["keyed"]},
        {"preset": "custom", "designs": ["no-such-design"], "trackers": ["keyed"]},
        {"runs": "0"},
        {"runs": "11"},
        {"runs": "x"},
        {"depth": "4"},
        {"depth": "3", "person": "queue"},
        {"person": "robot"},
        {"crash_model": "earthquake"},
        {"fsync": "maybe"},
        {"tracker_fault": "flaky"},
        {"request_token": "not-a-uuid"},
    ],
    ids=lambda c: ",".join(c),
)
def test_launch_bad_input_is_400_and_stores_nothing(auth, changes):
    r = auth.post(reverse("sweeps:launch"), launch_data(**changes))
    assert r.status_code == 400
    assert 'class="errorlist' in text(r)
    assert not Sweep.objects.exists() and not Chunk.objects.exists()


def test_launch_refuses_a_file_over_the_limit(auth, settings):
    settings.SWEEPSITE_MAX_JOB_BYTES = 100
    upload = SimpleUploadedFile("j.json", builtin_job_source().encode())
    r = auth.post(reverse("sweeps:launch"), launch_data(job="upload", job_file=upload))
    assert r.status_code == 400 and "limit is 100" in text(r)
    assert not Sweep.objects.exists()


def test_launch_by_anonymous_is_403(anon):
    assert anon.post(reverse("sweeps:launch"), launch_data()).status_code == 403
    assert not Sweep.objects.exists()


def test_launch_needs_csrf(user):
    c = Client(enforce_csrf_checks=True)
    c.force_login(user)
    assert c.post(reverse("sweeps:launch"), launch_data()).status_code == 403
    assert not Sweep.objects.exists()


def test_launch_with_the_broker_down_says_so(auth, monkeypatch):
    def down(**kw):
        raise OperationalError("connection refused")

    monkeypatch.setattr(launch, "sweep_create", down)
    r = auth.post(reverse("sweeps:launch"), launch_data())
    assert r.status_code == 503 and "unreachable" in text(r)


@pytest.mark.parametrize("who", ["anonymous", "user"])
def test_a_get_of_the_launch_address_goes_to_the_form(anon, auth, who):
    r = (anon if who == "anonymous" else auth).get(reverse("sweeps:launch"))
    assert r.status_code == 302 and r["Location"] == reverse("sweeps:list") + "#launch"
    assert Sweep.objects.count() == 0


def test_the_chapter_s_table_at_depth_3_is_launched_from_the_form(auth):
    r = auth.post(reverse("sweeps:launch"), launch_data(depth="3"))
    sweep = Sweep.objects.get()
    assert r.status_code == 302 and r["Location"] == reverse("sweeps:detail", args=[sweep.pk])
    assert (sweep.depth, sweep.total_chunks, len(sweep.configs)) == (3, 412, 11)


def test_a_depth_3_launch_too_big_to_store_is_a_form_error_saying_its_size_and_stores_nothing(auth):
    r = auth.post(reverse("sweeps:launch"), launch_data(depth="3", runs="2"))
    assert r.status_code == 400
    assert "scenarios at depth 3, more than the 1,000,000 a depth-3 sweep may have" in text(r)
    assert Sweep.objects.count() == Chunk.objects.count() == 0


def test_a_planned_size_over_its_bound_is_refused_at_once_with_its_figure_and_the_bound(auth):
    data = launch_data(runs="10", crash_model="power-cut", fsync="off")
    r, took = timed(lambda: auth.post(reverse("sweeps:plan"), data))
    (message,) = r.json()["errors"]
    assert r.status_code == 400 and took < REFUSED_SECONDS, took
    assert re.match(r"counting this sweep's planned size would take more than [\d,]+ steps of work", message)
    assert f"the bound is {limits.PLAN_STEPS:,}" in message


def test_a_planned_size_under_a_power_cut_without_fsync_is_counted_within_its_bound(auth):
    r = auth.post(reverse("sweeps:plan"), launch_data(crash_model="power-cut", fsync="off"))
    assert r.status_code == 200 and r.json()["chunks"] == 2040


def test_a_launch_over_its_bound_is_a_form_error_at_once_with_its_figure_and_stores_nothing(auth):
    r, took = timed(
        lambda: auth.post(
            reverse("sweeps:launch"), launch_data(preset="custom", designs=["loop"], trackers=["keyed"], **HEAVY_FORM)
        )
    )
    page = html.unescape(text(r))
    assert r.status_code == 400 and took < REFUSED_SECONDS, took
    assert re.search(
        r"(planning this sweep's chunks|counting this sweep's planned size) would take more than [\d,]+ "
        r"steps of work",
        page,
    )
    assert f"the bound is {limits.LAUNCH_STEPS:,}" in page
    assert Sweep.objects.count() == Chunk.objects.count() == 0


HEAVY_FORM = {"runs": "10", "crash_model": "power-cut", "fsync": "off"}


def test_the_planned_size_of_a_depth_3_launch_counts_its_thrice_scenarios_or_refuses_it(auth):
    plan = auth.post(reverse("sweeps:plan"), launch_data(depth="3")).json()
    assert plan["chunks"] == 412 and plan["exact"] is False and abs(plan["scenarios"] - 167_971) < 3_400
    assert plan["text"].startswith("412 chunks · about 167,000 scenarios")
    r = auth.post(reverse("sweeps:plan"), launch_data(depth="3", runs="2"))
    assert r.status_code == 400 and "more than the 1,000,000" in r.json()["errors"][0]


def test_the_form_launches_a_registered_agent_by_its_name(auth, settings):
    settings.SWEEPSITE_TARGETS = "naive=examples.plain_loop:naive"
    r = auth.post(reverse("sweeps:launch"), launch_data(preset="targets", targets=["naive"], depth="1"))
    sweep = Sweep.objects.get()
    assert r.status_code == 302 and r.url == reverse("sweeps:detail", args=[sweep.pk])
    assert sweep.configs[0]["design"] == "target:naive" and sweep.model == "fresh-ids"
    assert "plain Python" in sweep.configs[0]["runtime"]


def test_the_form_offers_only_registered_agents(auth, settings):
    settings.SWEEPSITE_TARGETS = "naive=examples.plain_loop:naive"
    r = auth.post(
        reverse("sweeps:launch"), launch_data(preset="targets", targets=["examples.plain_loop:keyed"], depth="1")
    )
    assert r.status_code == 400 and "not one of the available choices" in text(r)
    assert not Sweep.objects.exists()


def test_the_world_s_model_is_not_a_target_s(auth, settings):
    settings.SWEEPSITE_TARGETS = "naive=examples.plain_loop:naive"
    r = auth.post(reverse("sweeps:launch"), launch_data(preset="targets", targets=["naive"], depth="1", model="fickle"))
    assert r.status_code == 400 and "chosen with the agents" in text(r)
    assert not Sweep.objects.exists()


def test_the_planned_size_of_registered_agents_is_theirs(auth, settings):
    settings.SWEEPSITE_TARGETS = "naive=examples.plain_loop:naive"
    r = auth.post(reverse("sweeps:plan"), launch_data(preset="targets", targets=["naive"], depth="1"))
    assert r.status_code == 200, r.content
    assert (r.json()["chunks"], r.json()["scenarios"]) == (12, 12)  # a chunk and a scenario per point at depth 1
