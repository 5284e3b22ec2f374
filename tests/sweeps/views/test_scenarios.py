"""views/scenarios.py: the scenario list and its filters, a scenario's page and its timeline."""

from __future__ import annotations

import html
import re
from urllib.parse import quote

import pytest
from django.urls import reverse

from sweeps import limits, selectors
from sweeps.models import Scenario
from tests.sweeps import _data
from tests.sweeps._web import REFUSED_SECONDS, count_shown, text, timed

pytestmark = pytest.mark.django_db


def scenarios(client, sweep, query=""):
    return client.get(reverse("sweeps:scenarios", args=[sweep.pk]) + ("?" + query if query else ""))


@pytest.mark.parametrize(
    "query,expected",
    [
        ("", 5),
        ("config=0", 4),
        ("config=1", 1),
        ("design=after-reply", 1),
        ("tracker=keyed", 5),
        ("has_dups=yes", 2),
        ("has_dups=no", 3),
        ("asked=yes", 1),
        ("missing=yes", 1),
        ("extra_calls=yes", 1),
        ("twice=yes", 2),
        ("twice=no", 3),
        ("first_point=2", 2),
        ("second_point=0", 3),
        ("second_point=1", 2),
        ("first_kind=tracker-accepted", 3),
        ("first_kind=reply-arrived", 0),
        ("status=done", 5),
        ("status=waiting", 0),
        ("config=0&first_point=1&has_dups=yes", 1),
        ("unknown=ignored", 5),
    ],
)
def test_scenario_filters(client, sweep, query, expected):
    r = scenarios(client, sweep, query)
    assert r.status_code == 200
    assert count_shown(text(r)) == expected


def test_scenario_list_shows_and_filters_a_corrupt_scenario(client, sweep):
    _data.add(sweep, 2, 1, status=Scenario.Status.CORRUPT)
    page = text(scenarios(client, sweep, "status=corrupt"))
    assert count_shown(page) == 1 and '<span class="status status-corrupt">corrupt</span>' in page


def test_scenario_page_shows_the_corrupt_status(client, sweep):
    s = _data.add(sweep, 2, 1, status=Scenario.Status.CORRUPT)
    page = text(client.get(reverse("sweeps:scenario", args=[s.pk])))
    assert '<span class="status status-corrupt">corrupt</span>' in page


def test_scenario_list_shows_the_rows(client, sweep):
    s = Scenario.objects.get(sweep=sweep, config=0, first_point=1, second_point=1)
    page = text(scenarios(client, sweep, "has_dups=yes&config=0"))
    assert reverse("sweeps:scenario", args=[s.pk]) in page and "tracker-accepted q1" in page


def test_scenario_list_pagination(client):
    s = _data.make_sweep(1)
    Scenario.objects.bulk_create([_data.scenario(s, 0, f) for f in range(1, 61)])
    first, second = text(scenarios(client, s)), text(scenarios(client, s, "page=2"))
    per_row = 2 + len(selectors.METRICS)  # the points, then every metric
    assert first.count('<td class="num">') // per_row == 50 and second.count('<td class="num">') // per_row == 10
    assert "page 2 of 2" in second


def test_scenario_list_pagination_keeps_filters(client):
    s = _data.make_sweep(1)
    Scenario.objects.bulk_create([_data.scenario(s, 0, f, duplicates=1) for f in range(1, 61)])
    assert "?has_dups=yes&amp;page=2" in text(scenarios(client, s, "has_dups=yes"))


@pytest.mark.parametrize(
    "query",
    [
        "page=0",
        "page=x",
        "page=99",
        "first_point=-1",
        "first_point=x",
        "first_point=99999999999999999999",
        "second_point=-3",
        "config=3",
        "config=x",
        "design=nope",
        "tracker=nope",
        "first_kind=nope",
        "has_dups=maybe",
        "status=zzz",
        "has_wrong=maybe",
        "gave_up=1",
        "denied_ran=true",
        "avoidable=x",
        "sum=approvals",
    ],
)
def test_scenario_list_bad_values_are_400(client, sweep, query):
    assert scenarios(client, sweep, query).status_code == 400


def test_scenario_list_states_the_sum_it_was_opened_for(client, sweep):
    page = text(scenarios(client, sweep, "config=0&has_dups=yes&sum=duplicates"))
    assert re.search(
        r'<strong id="count">1</strong> scenario matches, <strong id="sum" data-metric="duplicates">2'
        r"</strong> duplicate effects",
        page,
    )
    assert '<th class="num summed">dups</th>' in page


def test_scenario_list_totals_every_metric(client, sweep):
    page = text(scenarios(client, sweep, "config=0"))
    totals = dict(re.findall(r'<span id="total-(\w+)">(-?\d+)</span>', page))
    assert totals == {
        "duplicates": "2",
        "missing": "1",
        "asks": "1",
        "calls_plus": "3",
        "wrong": "1",
        "gave_up": "1",
        "denied_ran": "2",
        "avoidable": "1",
    }
    assert 'id="sum"' not in page


def test_scenario_list_has_a_column_per_outcome_in_the_table_s_order(client, sweep):
    page = text(scenarios(client, sweep, "config=0&has_wrong=yes"))
    head = re.search(r'<table id="scenarios">\s*<thead>(.*?)</thead>', page, re.S).group(1)
    assert re.findall(r'<th class="num[^"]*">([^<]*)</th>', head) == [
        "first",
        "second",
        "dups",
        "missing",
        "wrong",
        "gave up",
        "denied ran",
        "asks",
        "avoidable",
        "calls+",
    ]
    row = re.search(r"<tbody>(.*?)</tbody>", page, re.S).group(1)
    # first point 2, its once scenario ("—" as second point), then its outcome
    assert re.findall(r'<td class="num">(-?\d+)</td>', row) == ["2", "0", "1", "1", "1", "0", "0", "0", "0"]


@pytest.mark.parametrize(
    ("query", "count"),
    [
        ("has_wrong=yes", 1),
        ("gave_up=yes", 1),
        ("denied_ran=yes", 1),
        ("avoidable=yes", 1),
        ("avoidable=no", 4),
        ("has_wrong=no&config=0", 3),
        ("denied_ran=yes&sum=denied_ran", 1),
    ],
)
def test_scenario_list_filters_by_the_world_s_outcomes(client, sweep, query, count):
    assert count_shown(text(scenarios(client, sweep, query))) == count


def test_scenario_list_states_a_world_outcome_s_sum(client, sweep):
    page = text(scenarios(client, sweep, "config=0&denied_ran=yes&sum=denied_ran"))
    assert re.search(r'<strong id="sum" data-metric="denied_ran">2</strong> denied calls that ran', page)
    assert '<th class="num summed">denied ran</th>' in page


def test_scenario_list_keeps_the_sum_through_the_filter_form(client, sweep):
    page = text(scenarios(client, sweep, "sum=asks"))
    assert '<input type="hidden" name="sum" value="asks"' in page


def test_scenario_list_bad_sum_is_400(client, sweep):
    assert scenarios(client, sweep, "sum=id").status_code == 400


def test_scenario_list_links_carry_the_way_back(client, sweep):
    s = Scenario.objects.get(sweep=sweep, config=1)
    page = text(scenarios(client, sweep, "config=1&page=1"))
    here = f"/sweeps/{sweep.pk}/scenarios/%3Fconfig%3D1%26page%3D1"
    assert f'href="{reverse("sweeps:scenario", args=[s.pk])}?back={here}"' in page


def test_scenario_list_of_unknown_sweep_is_404(client):
    assert client.get(reverse("sweeps:scenarios", args=[12345])).status_code == 404


def test_timeline_page_shows_events_in_order(client, sweep):
    s = _data.add(
        sweep,
        2,
        1,
        1,
        timeline=[
            {"kind": "start", "text": "run-1 starts"},
            {"kind": "crash", "text": "crash at point 1"},
            {"kind": "restart", "text": "a new process starts"},
            {"kind": "ladder", "text": "lookup: not found"},
            {"kind": "crash", "text": "crash at point 1 again"},
        ],
        effects=[
            {
                "op": "create_issue",
                "args": {"title": "t"},
                "key": "k1",
                "origin": [0, "call_1"],
                "answer": {"number": 1},
            }
        ]
        * 2,
    )
    page = text(client.get(reverse("sweeps:scenario", args=[s.pk])))
    positions = [page.index(t) for t in ("run-1 starts", "crash at point 1<", "a new process", "lookup: not found")]
    assert positions == sorted(positions)
    assert "<strong>crash 1</strong>" in page and "<strong>crash 2</strong>" in page
    assert page.count("(duplicate)") == 2


def test_scenario_page_states_every_outcome(client, sweep):
    sc = _data.add(
        sweep,
        1,
        2,
        duplicates=1,
        missing=2,
        wrong=3,
        gave_up=4,
        denied_ran=5,
        asks=7,
        avoidable=6,
        timeline=[],
        effects=[],
    )
    outcome = re.search(r'<p id="outcome">(.*?)</p>', text(client.get(reverse("sweeps:scenario", args=[sc.pk]))))
    shown = dict(re.findall(r'<strong id="([\w-]+)">(\d+)</strong>', outcome.group(1)))
    assert shown == {
        "dups": "1",
        "missing": "2",
        "wrong": "3",
        "gave-up": "4",
        "denied-ran": "5",
        "asks": "7",
        "avoidable": "6",
    }


def test_a_waiting_scenario_s_page_states_no_outcome(client, sweep):
    sc = _data.add(sweep, 2, 1, status=Scenario.Status.WAITING, wrong=1, timeline=[], effects=[])
    page = text(client.get(reverse("sweeps:scenario", args=[sc.pk])))
    assert re.search(r'<p id="outcome" class="muted">[^<]*not final', page) and 'id="wrong"' not in page


def test_timeline_is_replayed_when_not_stored(client):
    s = _data.make_sweep(1)
    sc = _data.add(s, 0, 1, first_kind="reply-arrived", first_label="reply-arrived turn 1")
    page = text(client.get(reverse("sweeps:scenario", args=[sc.pk])))
    assert "<strong>crash 1</strong>" in page and 'class="ev-restart"' in page
    assert Scenario.objects.get(pk=sc.pk).timeline  # cached by the service


# Work a request may not do: 10 job runs under a power cut without fsync (their disk states
# multiply with each run; one play of the run is about 16 million steps).
HEAVY = {"runs": 10, "crash_model": "power-cut", "fsync": False}


def test_a_timeline_whose_replay_is_over_its_bound_is_refused_at_once_saying_so(client):
    s = _data.make_sweep(1, **HEAVY)
    sc = _data.add(s, 0, 200, first_kind="reply-arrived", first_label="reply-arrived turn 1")
    r, took = timed(lambda: client.get(reverse("sweeps:scenario", args=[sc.pk])))
    page = html.unescape(text(r))
    assert r.status_code == 400 and took < REFUSED_SECONDS, took
    assert re.search(rf"replaying scenario {sc.pk} would take more than [\d,]+ steps of work", page)
    assert f"the bound is {limits.TIMELINE_STEPS:,}" in page and 'id="timeline-error"' in page
    assert Scenario.objects.get(pk=sc.pk).timeline is None


def test_a_timeline_under_a_power_cut_without_fsync_is_replayed_within_its_bound(client):
    s = _data.make_sweep(1, **HEAVY | {"runs": 3})
    sc = _data.add(s, 0, 60)
    r = client.get(reverse("sweeps:scenario", args=[sc.pk]))
    assert r.status_code == 200 and 'class="ev-restart"' in text(r) and Scenario.objects.get(pk=sc.pk).timeline


def test_timeline_with_a_corrupt_checkpoint_shows_an_error(client, sweep):
    sc = _data.add(sweep, 2, 1, status=Scenario.Status.WAITING)
    _data.question(sc, durable={"files": "garbage"})
    r = client.get(reverse("sweeps:scenario", args=[sc.pk]))
    assert r.status_code == 200
    assert 'id="timeline-error"' in text(r) and "stored durable state" in text(r)


def test_timeline_is_drawn_as_swimlanes_with_crashes_and_the_duplicate(client):
    s = _data.make_sweep(1)
    sc = _data.add(s, 0, 5, 3, first_kind="tool-returned", first_label="tool-returned create_issue call_1")
    page = text(client.get(reverse("sweeps:scenario", args=[sc.pk])))
    svg = re.search(r'<svg id="lanes".*?</svg>', page, re.S).group(0)
    assert svg.count('class="mark mark-crash"') == 2 and svg.count('class="mark mark-restart"') == 2
    (dup,) = re.findall(r'<a href="#ev-(\d+)" class="mark mark-dup"', svg)
    assert f'<tr class="ev-tracker ev-dup" id="ev-{dup}">' in page
    assert ">process 3</text>" in svg and ">person</text>" in svg


def test_every_mark_has_a_tooltip_and_leads_to_its_row(client, sweep):
    s = _data.add(
        sweep,
        2,
        1,
        1,
        timeline=[{"kind": "start", "text": "run-1 starts"}, {"kind": "crash", "text": "crash <at> point 1"}],
    )
    page = text(client.get(reverse("sweeps:scenario", args=[s.pk])))
    assert '<a href="#ev-2" class="mark mark-crash" data-n="2"><path' in page and 'id="ev-2"' in page
    assert "<title>#2 crash 1: crash &lt;at&gt; point 1</title>" in page


def test_timeline_without_events_draws_no_lanes(client, sweep):
    s = _data.add(sweep, 2, 1, 1, timeline=[])
    assert 'id="lanes"' not in text(client.get(reverse("sweeps:scenario", args=[s.pk])))


def scenario_back(client, sc, back=None):
    url = reverse("sweeps:scenario", args=[sc.pk]) + ("?back=" + back if back is not None else "")
    return re.search(r'<a href="([^"]*)" id="back">', text(client.get(url))).group(1)


def test_scenario_back_link_returns_to_the_list_it_came_from(client, sweep):
    sc = Scenario.objects.get(sweep=sweep, config=1)
    back = f"/sweeps/{sweep.pk}/scenarios/?config=1&has_dups=yes&page=1"
    assert html.unescape(scenario_back(client, sc, quote(back))) == back


def test_scenario_back_link_may_return_to_the_heatmap(client, sweep):
    sc = Scenario.objects.get(sweep=sweep, config=1)
    back = f"/sweeps/{sweep.pk}/heatmap/?metric=asks&config=0"
    assert html.unescape(scenario_back(client, sc, quote(back))) == back


def test_scenario_back_link_defaults_to_the_sweeps_list(client, sweep):
    sc = Scenario.objects.get(sweep=sweep, config=1)
    assert scenario_back(client, sc) == reverse("sweeps:scenarios", args=[sweep.pk])


@pytest.mark.parametrize(
    "back",
    [
        "https://evil.example/",
        "//evil.example/x",
        "/\\evil.example",
        "javascript:alert(1)",
        "/admin/",
        "/accounts/logout/",
        "/nowhere/",
        "x" * 3000,
        "relative/path",
    ],
)
def test_scenario_back_link_refuses_what_is_not_a_list_here(client, sweep, back):
    sc = Scenario.objects.get(sweep=sweep, config=1)
    assert scenario_back(client, sc, quote(back)) == reverse("sweeps:scenarios", args=[sweep.pk])


def test_unknown_scenario_is_404(client):
    assert client.get(reverse("sweeps:scenario", args=[424242])).status_code == 404


def test_the_scenario_list_filters_by_the_third_point(client, deep):
    url = reverse("sweeps:scenarios", args=[deep.pk])
    assert count_shown(text(client.get(url + "?thrice=yes"))) == 3
    assert count_shown(text(client.get(url + "?twice=yes&thrice=no"))) == 2
    assert count_shown(text(client.get(url + "?third_point=2"))) == 1
    assert count_shown(text(client.get(url + "?third_point=0"))) == 4
    page = text(client.get(url + "?thrice=yes&config=0"))
    assert "<th>third point</th>" in page and "<code>result-saved r2</code>" in page


def test_a_thrice_scenario_s_page_names_its_third_point(client, deep):
    sc = Scenario.objects.get(sweep=deep, second_point=2, third_point=1)
    sc.timeline, sc.effects = [{"kind": "start", "text": "process 1"}], []
    sc.save()
    page = text(client.get(reverse("sweeps:scenario", args=[sc.pk])))
    assert '<strong id="third-point">1</strong> of the second restart: <code>reply-arrived r1</code>' in page
