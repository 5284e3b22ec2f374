"""Aggregated rows -> Plotly heatmap figures. Pure: no queries, no Django.

A figure is a Plotly figure dict ({"data": [...], "layout": {...}}) of plain Python values, the JSON
Plotly.newPlot takes; `to_json` serialises it without re-validating (plotly.graph_objects validation
costs tens of milliseconds for ten thousand cells; the tests validate the figures with go.Figure).

Cells with no scenario are null (drawn as the grey of the gaps between cells). Each cell's customdata
carries what the hover shows (the crash point's label; a second-map cell also its scenario's ID); the
page's click handler opens a first-map cell's scenarios (x, y) or a second-map cell's scenario.

Plotly reads the text it draws (hover labels, titles, tick labels) as its own markup (<b>, <br>,
<span style=...>, <a href=...>): every text that comes from a job or a person (crash point labels,
configuration names) goes in through `plotly_text`, which escapes < > & so that Plotly shows it as
written.

A scenario's timeline as swimlanes is sweeps/swimlanes.py's.
"""

from __future__ import annotations

import html
import itertools
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from agentcore import Kind
from agentcore.port.labels import KINDS as PORT_KINDS

METRIC_TITLES = {
    "duplicates": "duplicate effects",
    "asks": "questions asked",
    "calls_plus": "repeated model calls (calls+)",
    "missing": "missing effects",
    "wrong": "wrong effects",
    "gave_up": "calls given up",
    "denied_ran": "denied calls that ran",
    "avoidable": "avoidable questions",
}
# Zero is near white, so the cells where something went wrong stand out.
COLORSCALE = [[0.0, "#fffbf0"], [0.15, "#fee391"], [0.5, "#fb8c3c"], [1.0, "#a50f15"]]


def kind_codes(kinds: Iterable[str]) -> dict[str, str]:
    """Each crash point kind's code, written in its heatmap cells (the page's legend spells them out),
    so that hover is not the only way to learn a point's kind: the initials of its first two words
    ("tracker-accepted" -> "TA", "save-half-done" -> "SH"). Codes are taken in the kinds' order and
    never shared: a kind whose initials an earlier kind took adds the next letters of its second word
    until its code is free ("save-removed" after "save-renamed" -> "SRE"), else its whole name (and a
    number)."""
    codes: dict[str, str] = {}
    taken: set[str] = set()
    for kind in kinds:
        words = kind.upper().replace("_", "-").split("-")
        first, second = words[0][:1], words[1] if len(words) > 1 else ""
        tries = itertools.chain(
            [first + second[:n] for n in range(1, len(second) + 1)] or [first],
            [kind.upper()],
            (f"{kind.upper()}{n}" for n in itertools.count(2)),
        )
        code = next(c for c in tries if c not in taken)
        codes[kind] = code
        taken.add(code)
    return codes


# The codes of agentcore's kinds, in the enum's order, then the port's (a target's points): a kind
# added to either later takes a code no earlier kind has, so the codes the pages and the README show
# stay as they are.
KIND_CODES = kind_codes([*(k.value for k in Kind), *PORT_KINDS])

# Above this many cells a map carries no in-cell codes (Plotly draws one SVG text per cell); its axes
# and hover still name the kinds.
MAX_TEXT_CELLS = 4000
# Between cells and behind the cells with no scenario: a grey that every colour, even zero's near
# white, stands out from.
GAP_COLOR = "#d0d5dd"


def plotly_text(text: str) -> str:
    """Text Plotly shows as written, not as its markup: < > & as entities (which Plotly turns back)."""
    return html.escape(text, quote=False)


def kind_of(label: str | None) -> str:
    """A crash point's kind: the first word of its label ("kind detail")."""
    return (label or "").split(" ", 1)[0]


def kind_code(label: str | None) -> str:
    return KIND_CODES.get(kind_of(label), "?") if label else ""


def _zrange(z: list[list[int | None]]) -> dict[str, int]:
    """0 (or the lowest value, calls+ can be negative) to the highest, at least 1: all zeros stay pale."""
    values = [v for row in z for v in row if v is not None]
    return {"zmin": min([0] + values), "zmax": max([1] + values)}


Grid = list[list[int | None]]


def _metric_views(
    grids: Mapping[str, Grid], heading: Callable[[str], str], hover: Callable[[str], str]
) -> dict[str, dict[str, Any]]:
    """Per metric, what Plotly.update changes to show it: the trace's z, colour range, colour bar title
    and hover ("restyle", one value per trace), and the figure's title ("relayout")."""
    views = {}
    for m, z in grids.items():
        title = METRIC_TITLES.get(m, m)
        views[m] = {
            "restyle": {
                "z": [z],
                **{k: [v] for k, v in _zrange(z).items()},
                "colorbar.title.text": [title],
                "hovertemplate": [hover(title)],
            },
            "relayout": {"title.text": heading(title)},
        }
    return views


def _trace(view: Mapping[str, Any], **fields: Any) -> dict[str, Any]:
    r = view["restyle"]
    return {
        "type": "heatmap",
        "z": r["z"][0],
        "zmin": r["zmin"][0],
        "zmax": r["zmax"][0],
        "colorscale": COLORSCALE,
        "xgap": 2,
        "ygap": 2,
        "colorbar": {"title": {"text": r["colorbar.title.text"][0]}},
        "hovertemplate": r["hovertemplate"][0],
        **fields,
    }


def _cell_text(text: list[list[str | None]], cells: int) -> dict[str, Any]:
    if cells > MAX_TEXT_CELLS:
        return {}
    # An empty string, not None, where there is no cell: Plotly would write "null" there.
    return {"text": [[t or "" for t in row] for row in text], "texttemplate": "%{text}", "textfont": {"size": 9}}


def design_first_figure(
    cells: Iterable[Mapping[str, Any]], config_names: Sequence[str], labels: Mapping[tuple[int, int], str], metric: str
) -> dict[str, Any]:
    """Configuration (y, top to bottom) x first crash point (x).

    cells: {"config", "first_point"} and each metric's sum ("duplicates", "asks", ...; a missing one
    counts 0). `labels` maps (config, first point) to the point's label: the hover shows it and the
    cell its kind's code (configurations crash at different kinds of point at the same number, so
    the kind is named per cell, not per column). Besides "data" and "layout", the figure carries
    "metrics": every metric's view (see _metric_views), which the page swaps in without a reload.
    """
    cells = list(cells)
    width = max((c["first_point"] for c in cells), default=0)
    grids: dict[str, Grid] = {m: [[None] * width for _ in config_names] for m in METRIC_TITLES}
    text: list[list[str | None]] = [[None] * width for _ in config_names]
    custom: list[list[str | None]] = [[None] * width for _ in config_names]
    for c in cells:
        row, col = c["config"], c["first_point"] - 1
        if 0 <= row < len(config_names) and col >= 0:
            for m, z in grids.items():
                z[row][col] = c.get(m) or 0
            label = labels.get((row, c["first_point"]), "")
            custom[row][col] = plotly_text(label)
            text[row][col] = kind_code(label)
    views = _metric_views(
        grids,
        lambda t: f"{t}: configuration × first crash point",
        lambda t: "%{customdata}<br>first point %{x}<br>" + t + ": %{z}<extra></extra>",
    )
    view = views.get(metric) or views["duplicates"]
    return {
        "data": [
            _trace(
                view,
                x=list(range(1, width + 1)),
                y=list(range(len(config_names))),
                customdata=custom,
                **_cell_text(text, len(cells)),
            )
        ],
        "layout": {
            "title": {"text": view["relayout"]["title.text"]},
            "xaxis": {
                "title": {"text": "first crash point (the letters in a cell name its kind)"},
                "zeroline": False,
                "showgrid": False,
                **({"dtick": 1} if width <= 40 else {}),
            },
            "yaxis": {
                "tickmode": "array",
                "tickvals": list(range(len(config_names))),
                "ticktext": [plotly_text(n) for n in config_names],
                "autorange": "reversed",
                "automargin": True,
                "zeroline": False,
                "showgrid": False,
            },
            "plot_bgcolor": GAP_COLOR,
            "height": 170 + 30 * len(config_names),
            "margin": {"t": 50, "r": 20, "b": 50},
        },
        "metrics": views,
    }


def first_second_figure(
    cells: Iterable[Mapping[str, Any]], labels: Mapping[int, str], config_name: str, metric: str
) -> dict[str, Any]:
    """One configuration's twice scenarios: first crash point (x) x second crash point (y, in the restart).

    cells: {"id", "first_point", "second_point", "second_label"} and each metric's value; one cell
    is one scenario, whose ID its customdata carries (with both labels) so that a click opens it.
    `labels` maps a first point to its label: the x axis names each first point's kind (one
    configuration: one kind per column); a cell's letters name its second point's kind (the restart
    reaches different points after different first crashes). Carries "metrics" as
    design_first_figure does.
    """
    cells = list(cells)
    # Every first point of the configuration has its column, as in the first map (a crash at the
    # last save leaves its restart no point to crash: a column with no cell).
    width = max([c["first_point"] for c in cells] + [p for p in labels if cells], default=0)
    height = max((c["second_point"] for c in cells), default=0)
    grids, text, custom = _first_second_grids(cells, labels, width, height)
    views = _metric_views(
        grids,
        lambda t: f"{plotly_text(config_name)}: first × second crash point ({t})",
        lambda t: (
            "first %{x}: %{customdata[0]}<br>second %{y}: %{customdata[1]}<br>"
            + t
            + ": %{z}<br>scenario %{customdata[2]} (click: its timeline)<extra></extra>"
        ),
    )
    view = views.get(metric) or views["duplicates"]
    return {
        "data": [
            _trace(
                view,
                x=list(range(1, width + 1)),
                y=list(range(1, height + 1)),
                customdata=custom,
                **_cell_text(text, len(cells)),
            )
        ],
        "layout": {
            "title": {"text": view["relayout"]["title.text"]},
            "xaxis": {
                "title": {"text": "first crash point", "standoff": 12},
                "tickmode": "array",
                "tickvals": list(range(1, width + 1)),
                "ticktext": [plotly_text(f"{p} {kind_of(labels.get(p))}".strip()) for p in range(1, width + 1)],
                "tickangle": -90,
                "automargin": True,
                "zeroline": False,
                "showgrid": False,
            },
            "yaxis": {
                "title": {"text": "second crash point (in the restart)"},
                "autorange": "reversed",
                "zeroline": False,
                "showgrid": False,
                **({"dtick": 1} if height <= 40 else {}),
            },
            "plot_bgcolor": GAP_COLOR,
            "height": max(360, min(1100, 240 + 18 * height)),
            "margin": {"t": 50, "r": 20, "b": 50},
        },
        "metrics": views,
    }


def _first_second_grids(
    cells: list[Mapping[str, Any]], labels: Mapping[int, str], width: int, height: int
) -> tuple[dict[str, Grid], list[list[str | None]], list[list[list[Any] | None]]]:
    """first_second_figure's grids (one per metric), cell letters and customdata, second point by first."""
    grids: dict[str, Grid] = {m: [[None] * width for _ in range(height)] for m in METRIC_TITLES}
    text: list[list[str | None]] = [[None] * width for _ in range(height)]
    custom: list[list[list[Any] | None]] = [[None] * width for _ in range(height)]
    for c in cells:
        first, second = c["first_point"], c["second_point"]
        if first >= 1 and second >= 1:
            for m, z in grids.items():
                z[second - 1][first - 1] = c.get(m) or 0
            custom[second - 1][first - 1] = [
                plotly_text(labels.get(first, "")),
                plotly_text(c.get("second_label") or ""),
                c.get("id"),
            ]
            text[second - 1][first - 1] = kind_code(c.get("second_label"))
    return grids, text, custom


def third_figure(
    cells: Iterable[Mapping[str, Any]],
    config_name: str,
    pair: tuple[int, int],
    pair_labels: tuple[str, str],
    metric: str,
) -> dict[str, Any]:
    """A depth-3 sweep's thrice scenarios of one (first, second) pair of a configuration: third
    crash point (x, in the second restart, each tick naming its kind) in one row of cells.

    cells: {"id", "third_point", "third_label"} and each metric's value; one cell is one scenario,
    whose ID its customdata carries (with its label) so that a click opens it. `pair_labels` are the
    first and second points' labels (the title and hover name them). Carries "metrics" as
    design_first_figure does."""
    cells = list(cells)
    width = max((c["third_point"] for c in cells), default=0)
    grids: dict[str, Grid] = {m: [[None] * width] for m in METRIC_TITLES}
    text: list[list[str | None]] = [[None] * width]
    custom: list[list[list[Any] | None]] = [[None] * width]
    ticks = [""] * width
    for c in cells:
        third = c["third_point"]
        if third >= 1:
            for m, z in grids.items():
                z[0][third - 1] = c.get(m) or 0
            custom[0][third - 1] = [plotly_text(c.get("third_label") or ""), c.get("id")]
            text[0][third - 1] = kind_code(c.get("third_label"))
            ticks[third - 1] = plotly_text(f"{third} {kind_of(c.get('third_label'))}")
    first, second = pair
    where = f"first {first}: {plotly_text(pair_labels[0])}<br>second {second}: {plotly_text(pair_labels[1])}<br>"
    views = _metric_views(
        grids,
        lambda t: f"{plotly_text(config_name)}: third crash points after {first} and {second} ({t})",
        lambda t: (
            where
            + "third %{x}: %{customdata[0]}<br>"
            + t
            + ": %{z}<br>scenario %{customdata[1]} (click: its timeline)<extra></extra>"
        ),
    )
    view = views.get(metric) or views["duplicates"]
    return {
        "data": [
            _trace(
                view,
                x=list(range(1, width + 1)),
                y=[f"{first} × {second}"],
                customdata=custom,
                **_cell_text(text, len(cells)),
            )
        ],
        "layout": {
            "title": {"text": view["relayout"]["title.text"]},
            "xaxis": {
                "title": {"text": "third crash point (in the second restart)", "standoff": 12},
                "tickmode": "array",
                "tickvals": list(range(1, width + 1)),
                "ticktext": ticks,
                "tickangle": -90,
                "automargin": True,
                "zeroline": False,
                "showgrid": False,
            },
            "yaxis": {"title": {"text": "first × second"}, "automargin": True, "zeroline": False, "showgrid": False},
            "plot_bgcolor": GAP_COLOR,
            "height": 300,
            "margin": {"t": 50, "r": 20, "b": 50},
        },
        "metrics": views,
    }


def to_json(fig: Mapping[str, Any]) -> str:
    """The figure as compact JSON for Plotly.newPlot (plain values: no Plotly encoder needed)."""
    return json.dumps(fig, separators=(",", ":"))
