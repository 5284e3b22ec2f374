"""views/sweep.py: a sweep's page, its table, progress and resume button, private reading."""

from __future__ import annotations

import html
import json
import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from agentcore.records import COLUMNS
from agentcore.report import TITLES
from sweeps.configs import builtin_job_source
from sweeps.models import Chunk, Question, Scenario, Sweep
from sweeps.services import chunks, launch
from sweeps.workqueue import publish
from tests.sweeps import _data
from tests.sweeps._web import CONFIG_0, count_shown, exported, heatmap_page, text

pytestmark = pytest.mark.django_db


def table_numbers(page: str, name: str) -> list[int]:
    row = re.search(r"<tr><td><a [^>]*>" + re.escape(html.escape(name)) + r"</a></td>(.*?)</tr>", page, re.S)
    assert row, name
    return [int(n) for n in re.findall(r'<a href="[^"]*">(-?\d+)</a>', row.group(1))]


def test_sweep_page_shows_the_table(client, sweep):
    page = text(client.get(reverse("sweeps:detail", args=[sweep.pk])))
    assert table_numbers(page, sweep.configs[0]["name"]) == CONFIG_0
    assert table_numbers(page, sweep.configs[1]["name"]) == [1, 0, 1, 1] + [0] * 7
    assert table_numbers(page, sweep.configs[2]["name"]) == [0] * len(COLUMNS)


def test_sweep_page_titles_every_column_in_agentcores_words(client, sweep):
    page = text(client.get(reverse("sweeps:detail", args=[sweep.pk])))
    head = re.search(r'<table id="results".*?<thead>(.*?)</thead>', page, re.S).group(1)
    assert re.findall(r"<th[^>]*>(.*?)</th>", head) == ["design", *(TITLES[c] for c in COLUMNS)]


def test_sweep_page_says_the_conditions_by_the_table(client, sweep):
    Sweep.objects.filter(pk=sweep.pk).update(crash_model="power-cut", fsync=False, tracker_fault="crash")
    page = text(client.get(reverse("sweeps:detail", args=[sweep.pk])))
    line = re.search(r'<p id="conditions"[^>]*>(.*?)</p>', page).group(1)
    assert line == "crash model: power-cut, fsync off, tracker fault: crash"
    assert page.index("Variant comparison") < page.index('id="conditions"') < page.index('id="results"')


def test_sweep_page_says_the_world_by_the_table(client, sweep):
    Sweep.objects.filter(pk=sweep.pk).update(
        tracker_fault="ttl:5", tool_faults="always", person_faults="wrong:0.5", model="fickle", seed=4
    )
    page = text(client.get(reverse("sweeps:detail", args=[sweep.pk])))
    assert re.search(r'<p id="conditions"[^>]*>(.*?)</p>', page).group(1) == (
        "crash model: panic, fsync on, tracker fault: ttl:5, tool faults: always, person: wrong:0.5, model: fickle, "
        "seed: 4"
    )


def test_sweep_page_says_the_default_conditions_too(client, sweep):
    page = text(client.get(reverse("sweeps:detail", args=[sweep.pk])))
    assert re.search(r'<p id="conditions"[^>]*>crash model: panic, fsync on</p>', page)


def test_sweep_page_numbers_link_to_their_scenarios(client, sweep):
    page = text(client.get(reverse("sweeps:detail", args=[sweep.pk])))
    url = html.unescape(re.search(r'href="([^"]*config=0&amp;has_dups=yes)"', page).group(1))
    assert count_shown(text(client.get(url))) == 1


@pytest.mark.parametrize("column", range(len(COLUMNS)))
def test_every_table_number_opens_a_list_that_states_it(client, sweep, column):
    """The number in the table is the list's count or the sum over it that the list states."""
    page = text(client.get(reverse("sweeps:detail", args=[sweep.pk])))
    row = re.search(
        r"<tr><td><a [^>]*>" + re.escape(html.escape(sweep.configs[0]["name"])) + r"</a></td>(.*?)</tr>", page, re.S
    )
    url, number = re.findall(r'<a href="([^"]*)">(-?\d+)</a>', row.group(1))[column]
    listed = text(client.get(html.unescape(url)))
    stated = re.search(r'<strong id="sum" data-metric="\w+">(-?\d+)</strong>', listed)
    assert int(number) == (int(stated.group(1)) if stated else count_shown(listed))


def test_the_dups_number_opens_the_list_summing_duplicates(client, sweep):
    page = text(client.get(reverse("sweeps:detail", args=[sweep.pk])))
    assert "config=0&amp;has_dups=yes&amp;sum=duplicates" in page


def test_sweep_page_shows_progress(client, sweep):
    page = text(client.get(reverse("sweeps:detail", args=[sweep.pk])))
    assert '<strong id="chunks">3 / 4</strong>' in page
    assert '<strong id="scenarios">5</strong>' in page


def test_sweep_page_prefers_the_cached_table(client, sweep):
    sweep.table = [
        {
            "name": "cached row",
            "once": 7,
            "twice": 0,
            "with_dups": 0,
            "dups": 0,
            "missing": 0,
            "asks": 0,
            "calls_plus": 0,
        }
    ]
    sweep.save()
    assert table_numbers(text(client.get(reverse("sweeps:detail", args=[sweep.pk]))), "cached row")[0] == 7


def test_sweep_page_shows_the_error(client, sweep):
    sweep.status, sweep.error = Sweep.Status.FAILED, "chunk 3 failed: boom"
    sweep.save()
    assert "chunk 3 failed: boom" in text(client.get(reverse("sweeps:detail", args=[sweep.pk])))


@pytest.mark.parametrize("sweep_id", [999, 10**30])
def test_unknown_sweep_is_404(client, sweep_id):
    assert client.get(reverse("sweeps:detail", args=[sweep_id])).status_code == 404


def _wait_in_config_2(sweep):
    """Config 2 of the sweep fixture gets a waiting scenario, stored as the services store one."""
    sc = _data.add(sweep, 2, 1, status=Scenario.Status.WAITING)
    _data.question(sc, "0:call_1#1")
    Sweep.objects.filter(pk=sweep.pk).update(person=Sweep.Person.QUEUE)


def test_progress_endpoint_carries_the_table_as_the_page_draws_it(client, sweep):
    p = client.get(reverse("sweeps:progress", args=[sweep.pk])).json()
    assert p["table"]["partial"] is True
    assert [c["value"] for c in p["table"]["rows"][0]["cells"]] == CONFIG_0
    page = text(client.get(reverse("sweeps:detail", args=[sweep.pk])))
    for row in p["table"]["rows"]:
        for c in row["cells"]:
            assert f'<a href="{html.escape(c["url"])}">{c["value"]}</a>' in page


def test_sweep_page_marks_the_table_partial_until_done(client, sweep):
    page = text(client.get(reverse("sweeps:detail", args=[sweep.pk])))
    assert re.search(r'<span [^>]*id="table-partial"[^>]*>partial</span>', page)
    assert 'id="table-partial" title="[^"]*" hidden' not in page and " hidden>partial<" not in page
    Sweep.objects.filter(pk=sweep.pk).update(status=Sweep.Status.DONE)
    page = text(client.get(reverse("sweeps:detail", args=[sweep.pk])))
    assert " hidden>partial</span>" in page


def test_a_row_with_waiting_scenarios_shows_how_many_and_no_number_an_answer_can_change(client, sweep):
    _wait_in_config_2(sweep)
    p = client.get(reverse("sweeps:progress", args=[sweep.pk])).json()
    row = p["table"]["rows"][2]
    assert row["waiting"] == 1 and p["table"]["waiting"] == 1
    assert [c["value"] for c in row["cells"]] == [1] + [None] * (len(COLUMNS) - 1)
    assert all("1 scenario of this row waits for an answer" in c["title"] for c in row["cells"][1:])
    assert [c["value"] for c in p["table"]["rows"][0]["cells"]] == CONFIG_0  # no scenario waits
    page = text(client.get(reverse("sweeps:detail", args=[sweep.pk])))
    assert page.count('title="not final: 1 scenario of this row waits for an answer">—</a>') == len(COLUMNS) - 1
    assert re.search(r'<a href="[^"]*config=2&amp;status=waiting" class="waiting">1</a>', page)


def test_a_queue_sweep_with_open_questions_shows_no_negative_number(auth, monkeypatch):
    # Waiting scenarios have not made their calls yet: their calls+ so far is negative.
    monkeypatch.setattr(publish, "enqueue", lambda *a, **kw: None)
    sweep = launch.sweep_create(
        user=None,
        job_source=builtin_job_source(),
        depth=1,
        person="queue",
        configs=[{"name": "real loop, keyless tracker", "design": "loop", "tracker": "keyless"}],
    )
    for pk in Chunk.objects.filter(sweep=sweep).values_list("pk", flat=True):
        chunks.chunk_run(chunk_id=pk)
    assert Question.objects.filter(sweep=sweep, status=Question.Status.OPEN).exists()
    pages = [
        text(auth.get(reverse("sweeps:detail", args=[sweep.pk]))),
        text(auth.get(reverse("sweeps:scenarios", args=[sweep.pk]) + "?status=waiting")),
    ]
    assert not any(re.search(r">\s*-\d", page) for page in pages)
    table = auth.get(reverse("sweeps:progress", args=[sweep.pk])).json()["table"]
    assert all(c["value"] is None or c["value"] >= 0 for row in table["rows"] for c in row["cells"])
    rows = b"".join(exported(auth, reverse("sweeps:export_scenarios", args=[sweep.pk, "jsonl"])).streaming_content)
    assert all((x["calls_plus"] or 0) >= 0 for x in map(json.loads, rows.decode().splitlines()))
    assert Scenario.objects.filter(sweep=sweep, calls_plus__lt=0).count() == 0  # heatmaps sum these


def test_progress_endpoint(client, sweep):
    Sweep.objects.filter(pk=sweep.pk).update(created_at=timezone.now() - timedelta(seconds=10))
    Chunk.objects.filter(sweep=sweep, stored=True).update(stored_at=timezone.now() - timedelta(seconds=5))
    p = client.get(reverse("sweeps:progress", args=[sweep.pk])).json()
    assert (p["chunks_stored"], p["total_chunks"], p["scenarios"], p["percent"]) == (3, 4, 5, 75.0)
    assert p["status"] == "running" and p["eta_seconds"] is not None
    assert p["eta_range"][0] < p["eta_seconds"] < p["eta_range"][1]


def test_resume_button_shown_for_a_stalled_sweep(auth, sweep):
    Chunk.objects.filter(sweep=sweep).update(stored_at=timezone.now() - timedelta(minutes=5))
    Sweep.objects.filter(pk=sweep.pk).update(created_at=timezone.now() - timedelta(minutes=6))
    assert 'id="resume"' in text(auth.get(reverse("sweeps:detail", args=[sweep.pk])))


def test_resume_button_shown_for_a_failed_sweep(auth, sweep):
    Sweep.objects.filter(pk=sweep.pk).update(status=Sweep.Status.FAILED, error="broker down")
    assert 'id="resume"' in text(auth.get(reverse("sweeps:detail", args=[sweep.pk])))


def test_no_resume_button_while_chunks_keep_coming(auth, sweep):
    Chunk.objects.filter(sweep=sweep, stored=True).update(stored_at=timezone.now())
    assert 'id="resume"' not in text(auth.get(reverse("sweeps:detail", args=[sweep.pk])))


def test_resume_requeues_missing_chunks(auth, sweep):
    r = auth.post(reverse("sweeps:resume", args=[sweep.pk]), follow=True)
    assert "1 missing chunk queued again" in text(r)


def test_resume_by_anonymous_is_403(anon, sweep):
    assert anon.post(reverse("sweeps:resume", args=[sweep.pk])).status_code == 403


def test_private_read_sends_anonymous_to_login(anon, sweep, settings):
    settings.SWEEPSITE_PUBLIC_READ = False
    r = anon.get(reverse("sweeps:detail", args=[sweep.pk]))
    assert r.status_code == 302 and r["Location"].startswith(reverse("login"))


def test_private_read_lets_users_in(auth, sweep, settings):
    settings.SWEEPSITE_PUBLIC_READ = False
    assert auth.get(reverse("sweeps:detail", args=[sweep.pk])).status_code == 200


def test_a_depth_3_sweep_s_table_has_the_thrice_column_after_twice(client, deep):
    page = text(client.get(reverse("sweeps:detail", args=[deep.pk])))
    heads = re.findall(r"<th[^>]*>([^<]+)</th>", page.split('id="results"')[1].split("</thead>")[0])
    assert heads[:4] == ["design", "once", "twice", "thrice"]
    # once, twice, thrice, with dups, dups, missing, ...: the stored rows counted apart
    assert table_numbers(page, "save once per turn")[:6] == [1, 2, 3, 2, 3, 1]
    base = reverse("sweeps:scenarios", args=[deep.pk])
    assert f'href="{base}?config=0&amp;thrice=yes"' in page
    assert f'href="{base}?config=0&amp;twice=yes&amp;thrice=no"' in page


def test_a_depth_2_sweep_s_pages_are_as_they_were(client, auth, sweep):
    detail = text(client.get(reverse("sweeps:detail", args=[sweep.pk])))
    assert "thrice" not in detail and "third" not in detail
    assert table_numbers(detail, "save once per turn") == CONFIG_0
    scenarios = text(client.get(reverse("sweeps:scenarios", args=[sweep.pk])))
    assert "thrice" not in scenarios and "third" not in scenarios
    heat = heatmap_page(client, sweep, "?config=0&first=1&second=1")  # a pair means nothing at depth 2
    assert 'id="third"' not in heat and 'id="fig-third"' not in heat and 'name="first"' not in heat
    header = b"".join(exported(auth, reverse("sweeps:export_scenarios", args=[sweep.pk, "csv"])).streaming_content)
    assert (
        header.decode()
        .splitlines()[0]
        .endswith(
            "first_point,first_kind,first_label,second_point,second_kind,second_label,duplicates,missing,wrong,gave_up,"
            "denied_ran,asks,avoidable,approvals,model_calls,calls_plus,status"
        )
    )


def test_a_target_s_page_names_its_runtime_and_its_sampled_rates(client, settings, monkeypatch, tmp_path):
    from sweeps import targets
    from tests.sweeps._web import TRIAGE, run_all

    settings.SWEEPSITE_TARGETS = "threaded=tests.agentcore.port.targets:threaded"
    targets._plans.clear()
    monkeypatch.setenv("THREADED_FLIP", str(tmp_path / "flip"))
    sweep = run_all(launch.sweep_create(user=None, job_source=TRIAGE, targets=["threaded"], depth=1))
    page = text(client.get(reverse("sweeps:detail", args=[sweep.pk])))
    assert "threaded [sampled, k=5]" in page and "plain Python (no agent runtime imported)" in page
    assert "95% CI" in page and page.count("threaded [sampled, k=5]</a>") == 1  # its passes in one row
    assert "design=threaded" in page  # its numbers open every pass's scenarios
    listed = client.get(reverse("sweeps:scenarios", args=[sweep.pk]) + "?design=threaded&first_kind=put")
    assert listed.status_code == 200, text(listed)
    stored = sweep.scenarios.filter(design="threaded", first_kind="put").count()
    assert stored > 0 and f'id="count">{stored}<' in text(listed)
    heatmap = client.get(reverse("sweeps:heatmap", args=[sweep.pk]))
    assert heatmap.status_code == 200
