"""views/scenarios.py's heatmaps: the stored rows drawn, their metrics, the third points of a pair."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse

from sweeps import charts
from sweeps.models import Chunk, Scenario
from tests.sweeps import _data
from tests.sweeps._web import heatmap_page, text

pytestmark = pytest.mark.django_db


def figure(page: str, which: str) -> dict:
    m = re.search(r'<script type="application/json" id="fig-' + which + r'">(.*?)</script>', page, re.S)
    assert m, which
    return json.loads(m.group(1))


def test_heatmap_matches_the_stored_rows(client, sweep):
    fig = figure(text(client.get(reverse("sweeps:heatmap", args=[sweep.pk]))), "first")
    heat = fig["data"][0]
    assert heat["z"] == [[2, 0], [1, None], [None, None]]  # duplicates summed per (config, first point)
    assert heat["customdata"][0][1] == "tool-returned p2"  # the point's label (from its chunk)
    assert fig["layout"]["yaxis"]["ticktext"] == [c["name"] for c in sweep.configs]


def test_heatmap_metric_is_chosen_in_the_url(client, sweep):
    fig = figure(text(client.get(reverse("sweeps:heatmap", args=[sweep.pk]) + "?metric=calls_plus")), "first")
    assert fig["data"][0]["z"][0] == [0, 3]


def test_heatmap_first_by_second_for_one_config(client, sweep):
    fig = figure(text(client.get(reverse("sweeps:heatmap", args=[sweep.pk]) + "?config=0&metric=asks")), "second")
    assert fig["data"][0]["z"] == [[1, 0]]  # x: first point 1, 2; y: second point 1
    s = Scenario.objects.get(sweep=sweep, config=0, first_point=1, second_point=1)
    assert fig["data"][0]["customdata"][0][0] == ["tracker-accepted p1", "tracker-accepted q1", s.pk]


def test_heatmap_second_map_x_axis_names_the_kinds(client, sweep):
    fig = figure(text(client.get(reverse("sweeps:heatmap", args=[sweep.pk]) + "?config=0")), "second")
    assert fig["layout"]["xaxis"]["ticktext"] == ["1 tracker-accepted", "2 tool-returned"]


def test_heatmap_figures_carry_every_metric(client, sweep):
    page = text(client.get(reverse("sweeps:heatmap", args=[sweep.pk])))
    first, second = figure(page, "first"), figure(page, "second")
    assert first["metrics"]["calls_plus"]["restyle"]["z"] == [[[0, 3], [0, None], [None, None]]]
    assert second["metrics"]["duplicates"]["restyle"]["z"] == [[[2, 0]]]


@pytest.mark.parametrize(
    ("metric", "z"), [("wrong", [0, 1]), ("gave_up", [0, 1]), ("denied_ran", [0, 2]), ("avoidable", [1, 0])]
)
def test_heatmap_colours_the_world_s_outcomes_too(client, sweep, metric, z):
    page = text(client.get(reverse("sweeps:heatmap", args=[sweep.pk]) + f"?metric={metric}"))
    assert figure(page, "first")["data"][0]["z"][0] == z
    assert re.search(rf'<option value="{metric}" selected>', page)


def heatmap_script(page: str) -> str:
    """The heatmap page's script: a static file (the Content-Security-Policy allows no inline script)."""
    assert re.search(r'<script src="/static/sweeps/heatmap\.[0-9a-f]{12}\.js"></script>', page)
    return (Path(settings.BASE_DIR) / "sweeps" / "static" / "sweeps" / "heatmap.js").read_text()


def test_heatmap_metric_redraws_without_a_button(client, sweep):
    page = text(client.get(reverse("sweeps:heatmap", args=[sweep.pk])))
    assert re.search(r'<noscript><button type="submit">show</button></noscript>', page)  # without JS only
    script = heatmap_script(page)
    assert 'metric.addEventListener("change"' in script and "Plotly.update(" in script


def test_heatmap_second_map_cell_opens_its_timeline(client, sweep):
    page = text(client.get(reverse("sweeps:heatmap", args=[sweep.pk])))
    assert f'data-scenario-url="{reverse("sweeps:scenario", args=[0])}"' in page
    assert "p.customdata[2]" in heatmap_script(page) and "?back=" in heatmap_script(page)


def test_heatmap_click_targets_the_scenario_list(client, sweep):
    page = text(client.get(reverse("sweeps:heatmap", args=[sweep.pk])))
    assert f'data-url="{reverse("sweeps:scenarios", args=[sweep.pk])}"' in page
    assert "plotly_click" in heatmap_script(page)


def test_heatmap_loads_plotly_once_from_static(client, sweep):
    page = text(client.get(reverse("sweeps:heatmap", args=[sweep.pk])))
    assert len(re.findall(r'<script src="/static/plotly/plotly\.min\.[0-9a-f]{12}\.js">', page)) == 1
    assert page.count("plotly.min") == 1 and "cdn" not in page.lower()


def test_heatmap_depth_one_has_no_second_map(client):
    s = _data.make_sweep(2, depth=1)
    _data.add(s, 0, 1, duplicates=1)
    page = text(client.get(reverse("sweeps:heatmap", args=[s.pk])))
    assert 'id="fig-second"' not in page and "depth 1" in page


@pytest.mark.parametrize("query", ["metric=bogus", "config=7", "config=-1", "config=x"])
def test_heatmap_bad_options_are_400(client, sweep, query):
    assert client.get(reverse("sweeps:heatmap", args=[sweep.pk]) + "?" + query).status_code == 400


def test_heatmap_escapes_labels_in_its_script(client, sweep):
    Chunk.objects.filter(sweep=sweep, config=0, first_point=1).update(label="</script><b>x")
    page = text(client.get(reverse("sweeps:heatmap", args=[sweep.pk])))
    assert "</script><b>x" not in page
    # As text for Plotly too: its markup (<b>) escaped, which Plotly shows as the characters.
    assert figure(page, "first")["data"][0]["customdata"][0][0] == charts.plotly_text("</script><b>x")


def test_the_heatmap_shows_the_third_points_of_a_chosen_pair(client, deep):
    page = heatmap_page(client, deep, "?config=0&first=1&second=1")
    fig = figure(page, "third")
    ids = dict(Scenario.objects.filter(sweep=deep, second_point=1, third_point__gt=0).values_list("third_point", "pk"))
    assert fig["data"][0]["z"] == [[2, 0]]  # duplicates of third points 1 and 2
    assert [c[1] for c in fig["data"][0]["customdata"][0]] == [ids[1], ids[2]]
    assert fig["layout"]["xaxis"]["ticktext"] == ["1 tool-returned", "2 result-saved"]
    assert fig["metrics"]["asks"]["restyle"]["z"] == [[[0, 1]]]
    twice = Scenario.objects.get(sweep=deep, first_point=1, second_point=1, third_point=0)
    assert f'href="{reverse("sweeps:scenario", args=[twice.pk])}?back=' in page
    assert "2 thrice scenarios" in page


def test_the_heatmap_s_second_map_leaves_the_thrice_scenarios_to_the_third(client, deep):
    page = heatmap_page(client, deep, "?config=0&metric=missing")
    assert figure(page, "second")["data"][0]["z"] == [[0], [0]]  # the twice scenarios (1, 1) and (1, 2) only
    assert 'data-third="1"' in page and 'url.searchParams.set("second", p.y)' in heatmap_script(page)
    assert 'id="third-none"' in page and 'id="fig-third"' not in page
    assert 'name="first"' in page and 'name="second"' in page  # the pair can be chosen without a click


def test_a_pair_without_a_twice_scenario_says_so(client, deep):
    page = heatmap_page(client, deep, "?config=1&first=1&second=1")
    assert "has no twice scenario at first point 1, second point 1" in page and 'id="fig-third"' not in page


@pytest.mark.parametrize("query", ["first=1", "second=2", "first=0&second=1", "first=1&second=x"])
def test_a_half_or_bad_pair_is_400(client, deep, query):
    assert client.get(reverse("sweeps:heatmap", args=[deep.pk]) + "?" + query).status_code == 400
