"""Aggregated rows -> Plotly heatmap figures. Pure: no queries, no Django.

A figure is a Plotly figure dict ({"data": [...], "layout": {...}}) of plain Python values, the JSON
Plotly.newPlot takes; `to_json` serialises it without re-validating (plotly.graph_objects validation
costs tens of milliseconds for ten thousand cells; the tests validate the figures with go.Figure).

Cells with no scenario are null (drawn blank). Each cell's customdata carries what the hover shows
(the crash point's label); the page's click handler reads x and y to open the cell's scenarios.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

METRIC_TITLES = {
    "duplicates": "duplicate effects",
    "asks": "questions asked",
    "calls_plus": "repeated model calls (calls+)",
    "missing": "missing effects",
}
# Zero is near white, so the cells where something went wrong stand out.
COLORSCALE = [[0.0, "#fffbf0"], [0.15, "#fee391"], [0.5, "#fb8c3c"], [1.0, "#a50f15"]]


def _zrange(z: list[list[int | None]]) -> dict[str, int]:
    """0 (or the lowest value, calls+ can be negative) to the highest, at least 1: all zeros stay pale."""
    values = [v for row in z for v in row if v is not None]
    return {"zmin": min([0] + values), "zmax": max([1] + values)}


def design_first_figure(cells: Iterable[Mapping[str, Any]], config_names: Sequence[str],
                        labels: Mapping[tuple[int, int], str], metric: str) -> dict[str, Any]:
    """Configuration (y, top to bottom) x first crash point (x); cells: {"config", "first_point", "value"}.

    `labels` maps (config, first point) to the point's label, shown on hover.
    """
    cells = list(cells)
    width = max((c["first_point"] for c in cells), default=0)
    z: list[list[int | None]] = [[None] * width for _ in config_names]
    text: list[list[str | None]] = [[None] * width for _ in config_names]
    for c in cells:
        row, col = c["config"], c["first_point"] - 1
        if 0 <= row < len(config_names) and col >= 0:
            z[row][col] = c["value"] or 0
            text[row][col] = labels.get((row, c["first_point"]), "")
    title = METRIC_TITLES.get(metric, metric)
    return {
        "data": [{
            "type": "heatmap", "z": z, "x": list(range(1, width + 1)), "y": list(range(len(config_names))),
            "customdata": text, "colorscale": COLORSCALE, **_zrange(z), "xgap": 1, "ygap": 1,
            "colorbar": {"title": {"text": title}},
            "hovertemplate": "%{customdata}<br>first point %{x}<br>" + title + ": %{z}<extra></extra>",
        }],
        "layout": {
            "title": {"text": f"{title}: configuration × first crash point"},
            "xaxis": {"title": {"text": "first crash point"}, **({"dtick": 1} if width <= 40 else {})},
            "yaxis": {"tickmode": "array", "tickvals": list(range(len(config_names))),
                      "ticktext": list(config_names), "autorange": "reversed", "automargin": True,
                      "zeroline": False, "showgrid": False},
            "height": 160 + 28 * len(config_names), "margin": {"t": 50, "r": 20, "b": 50},
        },
    }


def first_second_figure(cells: Iterable[Sequence[Any]], labels: Mapping[int, str],
                        config_name: str, metric: str) -> dict[str, Any]:
    """First crash point (y) x second crash point (x) of one configuration's twice scenarios.

    cells: (first point, second point, value, second label); `labels` maps a first point to its label.
    """
    cells = list(cells)
    height = max((c[0] for c in cells), default=0)
    width = max((c[1] for c in cells), default=0)
    z: list[list[int | None]] = [[None] * width for _ in range(height)]
    text: list[list[list[str] | None]] = [[None] * width for _ in range(height)]
    for first, second, value, second_label in cells:
        if first >= 1 and second >= 1:
            z[first - 1][second - 1] = value or 0
            text[first - 1][second - 1] = [labels.get(first, ""), second_label or ""]
    title = METRIC_TITLES.get(metric, metric)
    return {
        "data": [{
            "type": "heatmap", "z": z, "x": list(range(1, width + 1)), "y": list(range(1, height + 1)),
            "customdata": text, "colorscale": COLORSCALE, **_zrange(z),
            "colorbar": {"title": {"text": title}},
            "hovertemplate": ("first %{y}: %{customdata[0]}<br>second %{x}: %{customdata[1]}<br>"
                              + title + ": %{z}<extra></extra>"),
        }],
        "layout": {
            "title": {"text": f"{config_name}: first × second crash point ({title})"},
            "xaxis": {"title": {"text": "second crash point (in the restart)"}, "zeroline": False},
            "yaxis": {"title": {"text": "first crash point"}, "autorange": "reversed", "zeroline": False},
            "height": max(320, min(900, 120 + 8 * height)), "margin": {"t": 50, "r": 20, "b": 50},
        },
    }


def to_json(fig: Mapping[str, Any]) -> str:
    """The figure as compact JSON for Plotly.newPlot (plain values: no Plotly encoder needed)."""
    return json.dumps(fig, separators=(",", ":"))
