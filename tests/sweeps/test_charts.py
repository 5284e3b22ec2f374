"""Heatmap figures: cells land where the rows say, and Plotly accepts the figures."""

from __future__ import annotations

import json

import plotly.graph_objects as go

from sweeps import charts

NAMES = ["save once per turn", "keys and markers"]
CELLS = [{"config": 0, "first_point": 1, "value": 2}, {"config": 0, "first_point": 3, "value": 0},
         {"config": 1, "first_point": 2, "value": None}]
LABELS = {(0, 1): "reply-arrived turn 1", (0, 3): "save-renamed run-1.json", (1, 2): "tracker-accepted call_1"}
PAIRS = [(1, 1, 4, "reply-arrived turn 2"), (1, 2, 0, "save-half-done"), (3, 1, 1, "tool-returned call_2")]


def test_design_first_cells():
    fig = charts.design_first_figure(CELLS, NAMES, LABELS, "duplicates")
    assert fig["data"][0]["z"] == [[2, None, 0], [None, 0, None]]
    assert fig["data"][0]["x"] == [1, 2, 3] and fig["data"][0]["y"] == [0, 1]


def test_design_first_hover_shows_the_label():
    fig = charts.design_first_figure(CELLS, NAMES, LABELS, "duplicates")
    assert fig["data"][0]["customdata"][0][2] == "save-renamed run-1.json"
    assert "%{customdata}" in fig["data"][0]["hovertemplate"]


def test_design_first_rows_are_named():
    fig = charts.design_first_figure(CELLS, NAMES, LABELS, "asks")
    assert fig["layout"]["yaxis"]["ticktext"] == NAMES
    assert "questions asked" in fig["layout"]["title"]["text"]


def test_design_first_is_a_valid_plotly_figure():
    go.Figure(charts.design_first_figure(CELLS, NAMES, LABELS, "missing"))


def test_design_first_of_no_rows():
    fig = charts.design_first_figure([], NAMES, {}, "duplicates")
    assert fig["data"][0]["z"] == [[], []]
    go.Figure(fig)


def test_first_second_cells():
    fig = charts.first_second_figure(PAIRS, {1: "reply-arrived turn 1", 3: "save-renamed"}, "keys", "duplicates")
    heat = fig["data"][0]
    assert heat["z"] == [[4, 0], [None, None], [1, None]]
    assert heat["customdata"][2][0] == ["save-renamed", "tool-returned call_2"]


def test_first_second_is_a_valid_plotly_figure():
    go.Figure(charts.first_second_figure(PAIRS, {}, "keys", "calls_plus"))


def test_to_json_round_trips():
    fig = charts.design_first_figure(CELLS, NAMES, LABELS, "duplicates")
    assert json.loads(charts.to_json(fig)) == fig


def test_colour_range_starts_at_zero_and_keeps_negatives():
    heat = charts.design_first_figure(CELLS, NAMES, LABELS, "duplicates")["data"][0]
    assert (heat["zmin"], heat["zmax"]) == (0, 2)
    heat = charts.first_second_figure([(1, 1, -2, "a")], {}, "keys", "calls_plus")["data"][0]
    assert (heat["zmin"], heat["zmax"]) == (-2, 1)
