"""Heatmap figures: cells land where the rows say, and Plotly accepts the figures. Timeline swimlanes."""

from __future__ import annotations

import json

import plotly.graph_objects as go
import pytest

import agentcore as agentsweep
from agentcore import Kind, designs, jobs
from agentcore.port.labels import KINDS as PORT_KINDS
from sweeps import charts, selectors, swimlanes

NAMES = ["save once per turn", "keys and markers"]
CELLS = [
    {"config": 0, "first_point": 1, "duplicates": 2, "asks": 1, "calls_plus": 0, "missing": 0},
    {"config": 0, "first_point": 3, "duplicates": 0, "asks": 0, "calls_plus": 4, "missing": 0},
    {"config": 1, "first_point": 2, "duplicates": None, "asks": 0, "calls_plus": 0, "missing": 1},
]
LABELS = {(0, 1): "reply-arrived turn 1", (0, 3): "save-renamed run-1.json", (1, 2): "tracker-accepted call_1"}


def pair(first, second, duplicates, label, pk=None, **metrics):
    return {
        "id": pk or first * 100 + second,
        "first_point": first,
        "second_point": second,
        "second_label": label,
        "duplicates": duplicates,
        "asks": 0,
        "calls_plus": 0,
        "missing": 0,
        **metrics,
    }


PAIRS = [
    pair(1, 1, 4, "reply-arrived turn 2"),
    pair(1, 2, 0, "save-half-done"),
    pair(3, 1, 1, "tool-returned call_2", asks=2),
]
# The thrice scenarios of one (first, second) pair: third points 1 and 3 (2 is not stored).
THIRDS = [
    {"id": 41, "third_point": 1, "third_label": "tracker-accepted call_3", "duplicates": 1, "asks": 0},
    {"id": 43, "third_point": 3, "third_label": "save-renamed run-1.json", "duplicates": 0, "asks": 2},
]


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
    assert heat["z"] == [[4, None, 1], [0, None, None]]  # x: first point, y: second point
    assert heat["customdata"][0][2] == ["save-renamed", "tool-returned call_2", 301]


def test_first_second_is_a_valid_plotly_figure():
    go.Figure(charts.first_second_figure(PAIRS, {}, "keys", "calls_plus"))


def test_to_json_round_trips():
    fig = charts.design_first_figure(CELLS, NAMES, LABELS, "duplicates")
    assert json.loads(charts.to_json(fig)) == fig


def test_colour_range_starts_at_zero_and_keeps_negatives():
    heat = charts.design_first_figure(CELLS, NAMES, LABELS, "duplicates")["data"][0]
    assert (heat["zmin"], heat["zmax"]) == (0, 2)
    heat = charts.first_second_figure([pair(1, 1, 0, "a", calls_plus=-2)], {}, "keys", "calls_plus")["data"][0]
    assert (heat["zmin"], heat["zmax"]) == (-2, 1)


def test_design_first_cells_name_their_kind():
    heat = charts.design_first_figure(CELLS, NAMES, LABELS, "duplicates")["data"][0]
    assert heat["text"] == [["RA", "", "SR"], ["", "TA", ""]]  # no "null" written in an empty cell
    assert heat["texttemplate"] == "%{text}"


def test_kind_codes_are_one_per_crash_point_kind():
    assert set(charts.KIND_CODES) == {k.value for k in Kind} | set(PORT_KINDS)
    assert len(set(charts.KIND_CODES.values())) == len(Kind) + len(PORT_KINDS)
    # The codes the legend and the README name, spelled out (the mapping above is built from them).
    assert {
        k: charts.KIND_CODES[k]
        for k in ("tracker-accepted", "save-half-done", "save-renamed", "reply-arrived", "approval-pending")
    } == {
        "tracker-accepted": "TA",
        "save-half-done": "SH",
        "save-renamed": "SR",
        "reply-arrived": "RA",
        "approval-pending": "AP",
    }
    # A target's points (agentcore.port): put, put_writes, reply, effect.
    assert [charts.KIND_CODES[k] for k in PORT_KINDS] == ["P", "PW", "R", "E"]


def test_a_kind_added_later_never_takes_an_earlier_kind_s_code():
    kinds = [k.value for k in Kind]
    codes = charts.kind_codes([*kinds, "tracker-crashed", "tracker-restarted"])
    assert {k: codes[k] for k in kinds} == {k: charts.KIND_CODES[k] for k in kinds}
    assert (codes["tracker-crashed"], codes["tracker-restarted"]) == ("TC", "TRE")
    assert len(set(codes.values())) == len(codes)


def test_the_file_operation_and_tracker_log_kinds_have_codes_of_their_own():
    assert {
        k: charts.KIND_CODES[k]
        for k in ("save-synced", "save-removed", "save-dir-synced", "tracker-logged", "tracker-synced")
    } == {
        "save-synced": "SS",
        "save-removed": "SRE",
        "save-dir-synced": "SD",
        "tracker-logged": "TL",
        "tracker-synced": "TS",
    }


def test_kind_codes_are_never_shared_even_past_the_second_word_s_letters():
    codes = charts.kind_codes(["a-b", "ab", "a", "a-b-c"])
    assert len(set(codes.values())) == 4 and codes["a-b"] == "AB"


def test_a_kind_the_codes_do_not_know_shows_a_question_mark():
    assert charts.kind_code("save-from-the-future x") == "?"


def test_a_big_map_leaves_the_cells_without_text():
    cells = [{"config": 0, "first_point": f, "duplicates": 0} for f in range(1, charts.MAX_TEXT_CELLS + 2)]
    assert "text" not in charts.design_first_figure(cells, ["x"], {}, "duplicates")["data"][0]


def test_cells_have_gaps_on_a_grey_that_zero_stands_out_from():
    fig = charts.design_first_figure(CELLS, NAMES, LABELS, "duplicates")
    heat = fig["data"][0]
    assert heat["xgap"] >= 2 and heat["ygap"] >= 2
    assert fig["layout"]["plot_bgcolor"] == charts.GAP_COLOR != charts.COLORSCALE[0][1]


@pytest.mark.parametrize(
    "make",
    [
        lambda m: charts.design_first_figure(CELLS, NAMES, LABELS, m),
        lambda m: charts.first_second_figure(PAIRS, {}, "keys", m),
        lambda m: charts.third_figure(THIRDS, "keys", (1, 2), ("reply-arrived turn 1", "save-half-done"), m),
    ],
    ids=["first", "second", "third"],
)
def test_a_figure_carries_every_metric_view(make):
    """What the page swaps in on another metric is the figure it would have drawn for that metric."""
    views = make("duplicates")["metrics"]
    assert set(views) == set(charts.METRIC_TITLES)
    for metric, view in views.items():
        fig = make(metric)
        heat = fig["data"][0]
        assert view["restyle"]["z"] == [heat["z"]] and view["restyle"]["zmax"] == [heat["zmax"]]
        assert view["restyle"]["hovertemplate"] == [heat["hovertemplate"]]
        assert view["relayout"]["title.text"] == fig["layout"]["title"]["text"]


def test_metric_views_differ_by_metric():
    views = charts.design_first_figure(CELLS, NAMES, LABELS, "duplicates")["metrics"]
    assert views["duplicates"]["restyle"]["z"] == [[[2, None, 0], [None, 0, None]]]
    assert views["calls_plus"]["restyle"]["z"] == [[[0, None, 4], [None, 0, None]]]
    assert "missing effects" in views["missing"]["relayout"]["title.text"]


def test_the_world_metrics_have_their_own_views_and_titles():
    cells = [{"config": 0, "first_point": 1, "wrong": 3, "avoidable": 2}, {"config": 1, "first_point": 2, "gave_up": 1}]
    views = charts.design_first_figure(cells, NAMES, LABELS, "wrong")["metrics"]
    assert views["wrong"]["restyle"]["z"] == [[[3, None], [None, 0]]]
    assert views["gave_up"]["restyle"]["z"] == [[[0, None], [None, 1]]]
    assert views["avoidable"]["restyle"]["colorbar.title.text"] == ["avoidable questions"]
    assert "denied calls that ran" in views["denied_ran"]["relayout"]["title.text"]


def test_every_metric_the_selectors_sum_has_a_title():
    assert set(charts.METRIC_TITLES) == set(selectors.METRICS)


def test_first_second_x_axis_names_each_first_points_kind():
    fig = charts.first_second_figure(PAIRS, {1: "reply-arrived turn 1", 3: "save-renamed run-1.json"}, "k", "asks")
    assert fig["layout"]["xaxis"]["ticktext"] == ["1 reply-arrived", "2", "3 save-renamed"]
    assert fig["data"][0]["text"] == [["RA", "", "TR"], ["SH", "", ""]]


def test_first_second_has_a_column_for_every_first_point():
    fig = charts.first_second_figure(PAIRS, {1: "a x", 3: "b y", 4: "save-renamed final"}, "k", "asks")
    assert fig["data"][0]["x"] == [1, 2, 3, 4] and fig["data"][0]["z"][0][3] is None
    assert fig["layout"]["xaxis"]["ticktext"][3] == "4 save-renamed"


def test_first_second_hover_names_the_scenario_a_click_opens():
    heat = charts.first_second_figure(PAIRS, {}, "keys", "duplicates")["data"][0]
    assert "%{customdata[2]}" in heat["hovertemplate"] and heat["customdata"][1][0][2] == 102


# --- the visual timeline -----------------------------------------------------------------------


def played(design, tracker, plan):
    job = jobs.load("triage")
    p = agentsweep.play(agentsweep.Config(job, designs.get(design), tracker), plan, agentsweep.Options(timeline=True))
    return p.timeline, json.loads(json.dumps(p.effects))  # as stored: through JSON


def marks_of(lanes, cls):
    return [m for m in lanes["marks"] if m["cls"] == cls]


def lane_name(lanes, y):
    return next(lane["name"] for lane in lanes["lanes"] if lane["y"] == y)


def test_lanes_one_process_per_restart_then_checkpoint_tracker_person():
    events, effects = played("once-per-turn", "keyed", (5, 3))
    lanes = swimlanes.timeline_lanes(events, effects)
    assert [lane["name"] for lane in lanes["lanes"]] == [
        "process 1",
        "process 2",
        "process 3",
        "checkpoint",
        "tracker",
        "person",
    ]
    assert [b["end"] for b in lanes["bars"]] == ["crash", "crash", "done"]


def test_every_event_is_one_mark_numbered_as_the_table():
    events, effects = played("once-per-turn", "keyed", (5, 3))
    lanes = swimlanes.timeline_lanes(events, effects)
    assert [m["n"] for m in lanes["marks"]] == list(range(1, len(events) + 1))
    assert all(m["title"].startswith(f"#{m['n']} ") for m in lanes["marks"])


def test_crashes_are_marked_on_the_lane_of_the_process_they_end():
    events, effects = played("once-per-turn", "keyed", (5, 3))
    lanes = swimlanes.timeline_lanes(events, effects)
    crashes = marks_of(lanes, "crash")
    assert [lane_name(lanes, m["y"]) for m in crashes] == ["process 1", "process 2"]
    assert lanes["crashes"] == 2
    assert [x["text"] for x in lanes["labels"] if x["cls"] == "crash"] == ["crash 1", "crash 2"]
    assert [lane_name(lanes, m["y"]) for m in marks_of(lanes, "restart")] == ["process 2", "process 3"]


def test_the_duplicate_effect_is_marked_at_the_answer_that_made_it():
    events, effects = played("once-per-turn", "keyed", (5, 3))
    lanes = swimlanes.timeline_lanes(events, effects)
    (dup,) = marks_of(lanes, "dup")
    assert events[dup["n"] - 1] == {"kind": "tracker", "text": "answer create_issue call_1 {'number': 2}"}
    assert lane_name(lanes, dup["y"]) == "tracker" and lanes["duplicates"] == [dup["n"]]
    assert dup["link"] == {"y1": lanes["bars"][2]["y"], "y2": dup["y"]}  # made by process 3


def test_no_duplicate_no_duplicate_mark():
    events, effects = played("keys-and-markers", "keyed", (9, 4))
    lanes = swimlanes.timeline_lanes(events, effects)
    assert lanes["duplicates"] == [] and marks_of(lanes, "dup") == []


def test_saves_go_to_the_checkpoint_and_questions_and_answers_to_the_person():
    # A person's answer continues the process that asked (a paused process, not a restart).
    events = [
        {"kind": "start", "text": "fresh run run-1"},
        {"kind": "save", "text": "start"},
        {"kind": "ladder", "text": "create_issue call_1: unknown outcome -> ask"},
        {"kind": "question", "text": "waiting for a person: did create_issue call_1 happen?"},
        {"kind": "answer", "text": "the person answered: it happened"},
        {"kind": "ladder", "text": "create_issue call_1: ask says it happened"},
    ]
    lanes = swimlanes.timeline_lanes(events)
    where = [lane_name(lanes, m["y"]) for m in lanes["marks"]]
    assert where == ["process 1", "checkpoint", "process 1", "person", "person", "person"]
    assert [b["end"] for b in lanes["bars"]] == ["done"]


def test_a_waiting_scenario_s_process_ends_at_its_open_question():
    events = [
        {"kind": "start", "text": "fresh run run-1"},
        {"kind": "question", "text": "waiting for a person: did create_issue call_1 happen?"},
    ]
    assert [b["end"] for b in swimlanes.timeline_lanes(events)["bars"]] == ["question"]


def test_a_short_timeline_spreads_over_the_width_a_long_one_scrolls():
    short = swimlanes.timeline_lanes([{"kind": "start", "text": ""}] * 10, width=1000)
    long = swimlanes.timeline_lanes([{"kind": "start", "text": ""}] * 500, width=1000)
    assert short["width"] == swimlanes.TL_LEFT + 10 * swimlanes.TL_MAX_STEP + 20 <= 1000
    assert long["width"] == swimlanes.TL_LEFT + 500 * swimlanes.TL_STEP + 20


def test_an_empty_timeline_has_no_process_lane():
    lanes = swimlanes.timeline_lanes([])
    assert [lane["name"] for lane in lanes["lanes"]] == ["checkpoint", "tracker", "person"] and lanes["marks"] == []


# --- job text is shown as text, not as Plotly's markup ------------------------------------------

HOSTILE = '<span style="color:red;font-size:40px">big</span> & <b>bold</b>'
ESCAPED = '&lt;span style="color:red;font-size:40px"&gt;big&lt;/span&gt; &amp; &lt;b&gt;bold&lt;/b&gt;'


def test_design_first_escapes_labels_and_configuration_names():
    fig = charts.design_first_figure(
        CELLS, [HOSTILE, "plain"], {**LABELS, (0, 1): "reply-arrived " + HOSTILE}, "duplicates"
    )
    assert fig["data"][0]["customdata"][0][0] == "reply-arrived " + ESCAPED
    assert fig["layout"]["yaxis"]["ticktext"] == [ESCAPED, "plain"]
    assert fig["data"][0]["text"][0][0] == "RA"  # the kind's code is read from the label as written


def test_first_second_escapes_labels_and_the_configuration_name():
    fig = charts.first_second_figure(
        [pair(1, 1, 4, "reply-arrived " + HOSTILE)], {1: "tool-returned <i>x</i>"}, HOSTILE, "duplicates"
    )
    heat = fig["data"][0]
    assert heat["customdata"][0][0][:2] == ["tool-returned &lt;i&gt;x&lt;/i&gt;", "reply-arrived " + ESCAPED]
    assert fig["layout"]["title"]["text"].startswith(ESCAPED + ":")
    assert all(ESCAPED in v["relayout"]["title.text"] for v in fig["metrics"].values())


def test_plotly_text_escapes_only_what_plotly_reads_as_markup():
    assert charts.plotly_text("a \"quoted\" 'x' <br> & done") == "a \"quoted\" 'x' &lt;br&gt; &amp; done"


def test_third_cells_are_one_row_of_the_pair_s_thrice_scenarios():
    fig = charts.third_figure(THIRDS, "keys", (1, 2), ("reply-arrived turn 1", "save-half-done"), "asks")
    heat = fig["data"][0]
    assert heat["z"] == [[0, None, 2]] and heat["y"] == ["1 × 2"]
    assert heat["customdata"] == [[["tracker-accepted call_3", 41], None, ["save-renamed run-1.json", 43]]]
    assert heat["text"] == [["TA", "", "SR"]]
    assert fig["layout"]["xaxis"]["ticktext"] == ["1 tracker-accepted", "", "3 save-renamed"]
    assert "first 1: reply-arrived turn 1<br>second 2: save-half-done" in heat["hovertemplate"]
    assert "third crash points after 1 and 2" in fig["layout"]["title"]["text"]


def test_third_is_a_valid_plotly_figure():
    go.Figure(charts.third_figure(THIRDS, "keys", (1, 2), ("a", "b"), "duplicates"))
    go.Figure(charts.third_figure([], "keys", (1, 2), ("a", "b"), "duplicates"))


def test_third_escapes_labels_and_the_configuration_name():
    fig = charts.third_figure(
        [{"id": 7, "third_point": 1, "third_label": "tool-returned " + HOSTILE, "duplicates": 1}],
        HOSTILE,
        (1, 2),
        ("reply-arrived <i>a</i>", "save-renamed <b>b</b>"),
        "duplicates",
    )
    heat = fig["data"][0]
    assert heat["customdata"][0][0] == ["tool-returned " + ESCAPED, 7]
    assert "reply-arrived &lt;i&gt;a&lt;/i&gt;" in heat["hovertemplate"] and "<b>b</b>" not in heat["hovertemplate"]
    assert fig["layout"]["title"]["text"].startswith(ESCAPED + ":")
