"""Reads: the table, progress, heatmap aggregates, filters, pages, export rows, question counts."""

from __future__ import annotations

from dataclasses import fields
from datetime import timedelta

import pytest
from django.core.paginator import InvalidPage
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from agentcore import COLUMNS, ScenarioRecord, TableRow
from agentcore.records import table_row
from sweeps import selectors
from sweeps.models import Chunk, Question, Scenario, Sweep
from tests.sweeps import _data

pytestmark = pytest.mark.django_db


@pytest.fixture
def sweep():
    s = _data.make_sweep(2, total_chunks=3)
    _data.add(s, 0, 1, duplicates=1, asks=2, avoidable=1)
    _data.add(s, 0, 1, 1, duplicates=3, missing=1, calls_plus=2, wrong=1, denied_ran=1)
    _data.add(s, 0, 1, 2, calls_plus=-1, status=Scenario.Status.FAILED)
    _data.add(s, 0, 2, asks=1, status=Scenario.Status.WAITING)
    _data.add(s, 1, 1, missing=2, gave_up=1)
    _data.chunk(s, 0, 1, scenarios=3)
    _data.chunk(s, 0, 2, scenarios=1)
    _data.chunk(s, 1, 1, stored=False, scenarios=0)
    return s


def test_table_rows_match_agentcore_table_row(sweep):
    def record(s: Scenario) -> ScenarioRecord:
        values = {
            f.name: getattr(s, f.name)
            for f in fields(ScenarioRecord)
            if f.name not in ("timeline", "effects") and not f.name.startswith("third_")
        }
        once = {f: values[f] or None for f in ("second_point", "second_kind", "second_label")}  # stored as 0, ""
        return ScenarioRecord(**values | once)

    expected = [
        table_row(c["name"], [record(s) for s in Scenario.objects.filter(sweep=sweep, config=i)])
        for i, c in enumerate(sweep.configs)
    ]
    assert selectors.sweep_table_rows(sweep) == expected


def test_waiting_scenarios_are_counted_until_their_answer_is_resumed(sweep):
    waiting = Scenario.objects.get(sweep=sweep, status=Scenario.Status.WAITING)
    q = _data.question(waiting, "0:call_1#1", status=Question.Status.ANSWERED)
    assert selectors.waiting_by_config(sweep) == {0: 1}
    Question.objects.filter(pk=q.pk).update(status=Question.Status.RESUMED)
    assert selectors.waiting_by_config(sweep) == {}


def test_the_live_table_hides_what_an_answer_can_change_in_a_row_that_waits(sweep):
    _data.question(Scenario.objects.get(sweep=sweep, status=Scenario.Status.WAITING), "0:call_1#1")
    table = selectors.sweep_table_live(sweep)
    assert (table["partial"], table["waiting"]) == (True, 1)
    assert table["rows"][0]["values"] == {"once": 2} | dict.fromkeys(COLUMNS[1:])
    assert table["rows"][1] == {
        "name": sweep.configs[1]["name"],
        "waiting": 0,
        "values": dict(zip(COLUMNS, (1, 0, 0, 0, 2, 0, 1, 0, 0, 0, 0), strict=True)),
    }


def test_the_live_table_of_a_done_sweep_is_not_partial(sweep):
    Sweep.objects.filter(pk=sweep.pk).update(status=Sweep.Status.DONE)
    sweep.refresh_from_db()
    assert selectors.sweep_table_live(sweep)["partial"] is False


def test_table_rows_use_the_cached_table(sweep):
    sweep.table = [TableRow("cached", once=9).to_dict()]
    assert selectors.sweep_table_rows(sweep) == [TableRow("cached", once=9)]


def test_progress_counts_stored_rows(sweep):
    p = selectors.sweep_progress(sweep)
    assert (p["chunks_stored"], p["total_chunks"], p["scenarios"], p["percent"]) == (2, 3, 5, 66.7)
    assert p["finished"] is False


def test_progress_rate_and_eta(sweep):
    Sweep.objects.filter(pk=sweep.pk).update(created_at=timezone.now() - timedelta(seconds=10))
    sweep.refresh_from_db()
    Chunk.objects.filter(sweep=sweep, stored=True).update(stored_at=sweep.created_at + timedelta(seconds=5))
    p = selectors.sweep_progress(sweep, now=sweep.created_at + timedelta(seconds=10))
    assert p["rate"] == 0.5  # 5 scenarios in 10 s
    # Work weighed per chunk as its restart's length, n - f + 1 (config 0: n = 2, both stored: 2 + 1;
    # config 1: n = 1, not stored: 1): 3 of 4 took 10 s, 1 is left.
    assert p["eta_seconds"] == 3.3
    assert p["eta_range"] == [2.3, 4.7]  # 0.7 to 1.4 times the estimate


def _chunks(sweep, stored_at):
    """One chunk per first point; stored_at[f - 1] is its store time (None: not stored)."""
    for f, at in enumerate(stored_at, 1):
        c = _data.chunk(sweep, 0, f, stored=at is not None)
        Chunk.objects.filter(pk=c.pk).update(stored_at=at)


def test_progress_eta_weighs_chunks_by_their_restart_s_length():
    """2 of 4 chunks stored is more than half of the work when they are the first points."""
    s = _data.make_sweep(1, total_chunks=4)
    _chunks(s, [s.created_at, s.created_at, None, None])
    p = selectors.sweep_progress(s, now=s.created_at + timedelta(seconds=56))
    assert p["eta_seconds"] == 24.0  # weights 4 + 3 stored in 56 s, 2 + 1 left (counting chunks: 56 s)


def test_progress_eta_of_depth_3_weighs_chunks_by_their_restart_s_length_squared():
    """At depth 3 a chunk holds about (n - f + 1)^2 scenarios: the first points are most of the work."""
    s = _data.make_sweep(1, total_chunks=4, depth=3)
    _chunks(s, [s.created_at, s.created_at, None, None])
    p = selectors.sweep_progress(s, now=s.created_at + timedelta(seconds=50))
    assert p["eta_seconds"] == 10.0  # weights 16 + 9 stored in 50 s, 4 + 1 left


def test_progress_eta_of_depth_1_counts_chunks():
    s = _data.make_sweep(1, total_chunks=4, depth=1)
    _chunks(s, [s.created_at, None, None, None])
    p = selectors.sweep_progress(s, now=s.created_at + timedelta(seconds=10))
    assert p["eta_seconds"] == 30.0


def test_progress_eta_reads_the_rate_of_the_last_minute():
    """A sweep resumed after a pause: one chunk stored long ago, one in the last minute."""
    s = _data.make_sweep(1, total_chunks=4, depth=1)
    now = s.created_at + timedelta(seconds=600)
    _chunks(s, [s.created_at + timedelta(seconds=10), now - timedelta(seconds=30), None, None])
    assert selectors.sweep_progress(s, now=now)["eta_seconds"] == 120.0  # 1 chunk a minute (since launch: 600)


@pytest.mark.parametrize(("stored", "seconds"), [(2, 60), (3, 2.0)])
def test_progress_hides_the_eta_until_it_is_stable(stored, seconds):
    """Hidden before 15 % of the work is stored (2 of 20), or before 3 s have passed (3 of 20)."""
    s = _data.make_sweep(1, total_chunks=20, depth=1)
    _chunks(s, [s.created_at] * stored + [None] * (20 - stored))
    p = selectors.sweep_progress(s, now=s.created_at + timedelta(seconds=seconds))
    assert p["eta_seconds"] is None and p["eta_range"] is None
    later = selectors.sweep_progress(s, now=s.created_at + timedelta(seconds=max(seconds, 3)))
    assert (later["eta_seconds"] is None) is (stored < 3)  # and shown once it is stable


def test_progress_has_no_eta_once_cancelled(sweep):
    Sweep.objects.filter(pk=sweep.pk).update(
        status=Sweep.Status.CANCELLED, finished_at=timezone.now(), created_at=timezone.now() - timedelta(seconds=10)
    )
    sweep.refresh_from_db()
    p = selectors.sweep_progress(sweep)
    assert p["eta_seconds"] is None and p["finished"] is True


def test_progress_counts_open_questions(sweep):
    _data.question(Scenario.objects.get(sweep=sweep, config=0, first_point=2))
    assert selectors.sweep_progress(sweep)["open_questions"] == 1


def test_heatmap_config_first_sums_every_metric_in_sql(sweep):
    assert selectors.heatmap_config_first(sweep) == [
        {
            "config": 0,
            "first_point": 1,
            "duplicates": 4,
            "asks": 2,
            "calls_plus": 1,
            "missing": 1,
            "wrong": 1,
            "gave_up": 0,
            "denied_ran": 1,
            "avoidable": 1,
        },
        {
            "config": 0,
            "first_point": 2,
            "duplicates": 0,
            "asks": 1,
            "calls_plus": 0,
            "missing": 0,
            "wrong": 0,
            "gave_up": 0,
            "denied_ran": 0,
            "avoidable": 0,
        },
        {
            "config": 1,
            "first_point": 1,
            "duplicates": 0,
            "asks": 0,
            "calls_plus": 0,
            "missing": 2,
            "wrong": 0,
            "gave_up": 1,
            "denied_ran": 0,
            "avoidable": 0,
        },
    ]


def test_heatmap_config_first_is_one_grouped_query(sweep):
    with CaptureQueriesContext(connection) as ctx:
        selectors.heatmap_config_first(sweep)
    assert len(ctx.captured_queries) == 1 and "GROUP BY" in ctx.captured_queries[0]["sql"]


def test_heatmap_first_second_gives_each_twice_scenario_with_its_id(sweep):
    ids = dict(Scenario.objects.filter(sweep=sweep, config=0, second_point__gt=0).values_list("second_point", "id"))
    assert selectors.heatmap_first_second(sweep, 0) == [
        {
            "id": ids[1],
            "first_point": 1,
            "second_point": 1,
            "second_label": "tracker-accepted q1",
            "duplicates": 3,
            "asks": 0,
            "calls_plus": 2,
            "missing": 1,
            "wrong": 1,
            "gave_up": 0,
            "denied_ran": 1,
            "avoidable": 0,
        },
        {
            "id": ids[2],
            "first_point": 1,
            "second_point": 2,
            "second_label": "tool-returned q2",
            "duplicates": 0,
            "asks": 0,
            "calls_plus": -1,
            "missing": 0,
            "wrong": 0,
            "gave_up": 0,
            "denied_ran": 0,
            "avoidable": 0,
        },
    ]


def test_point_labels_from_chunks(sweep):
    assert selectors.point_labels(sweep)[(0, 2)] == "tool-returned p2"


def test_point_labels_without_chunks_come_from_once_rows():
    s = _data.make_sweep(1)
    _data.add(s, 0, 3, first_label="save-renamed run-1.json")
    assert selectors.point_labels(s) == {(0, 3): "save-renamed run-1.json"}


@pytest.mark.parametrize(
    "filters,expected",
    [
        ({}, 5),
        ({"config": 0}, 4),
        ({"has_dups": True}, 2),
        ({"has_dups": False}, 3),
        ({"asked": True}, 2),
        ({"missing": True}, 2),
        ({"extra_calls": True}, 2),
        ({"extra_calls": False}, 3),
        ({"twice": True}, 2),
        ({"status": "waiting"}, 1),
        ({"first_point": 1, "second_point": 0}, 2),
        ({"design": "after-reply"}, 1),
        ({"config": None, "design": ""}, 5),
        ({"tracker": "keyed"}, 5),
        ({"tracker": "keyless"}, 0),
        ({"design": "once-per-turn", "tracker": "keyed"}, 4),
        ({"design": "once-per-turn", "config": 1}, 0),
        ({"has_wrong": True}, 1),
        ({"has_wrong": False}, 4),
        ({"gave_up": True}, 1),
        ({"gave_up": False}, 4),
        ({"denied_ran": True}, 1),
        ({"avoidable": True}, 1),
        ({"avoidable": False}, 4),
        ({"config": 0, "has_wrong": True, "denied_ran": True}, 1),
        ({"gave_up": True, "config": 0}, 0),
    ],
)
def test_scenario_filter(sweep, filters, expected):
    assert selectors.scenario_filter(sweep, filters).count() == expected


def test_scenario_page_is_ordered_and_sized(sweep):
    page, rows = selectors.scenario_page(sweep, {}, 2, per_page=2)
    assert [(r.config, r.first_point, r.second_point) for r in rows] == [(0, 1, 2), (0, 2, 0)]
    assert page.paginator.num_pages == 3


def test_scenario_page_skips_the_json_columns(sweep):
    _, rows = selectors.scenario_page(sweep, {}, 1)
    assert {"timeline", "effects"} <= rows[0].get_deferred_fields()


def test_scenario_page_out_of_range(sweep):
    with pytest.raises(InvalidPage):
        selectors.scenario_page(sweep, {}, 9)


def test_scenario_totals_sum_each_metric_over_the_filtered_rows(sweep):
    assert selectors.scenario_totals(sweep, {"config": 0}) == {
        "count": 4,
        "duplicates": 4,
        "asks": 3,
        "calls_plus": 1,
        "missing": 1,
        "wrong": 1,
        "gave_up": 0,
        "denied_ran": 1,
        "avoidable": 1,
    }


def test_scenario_totals_of_no_row_are_zeros(sweep):
    assert selectors.scenario_totals(sweep, {"tracker": "keyless"}) == {
        "count": 0,
        **dict.fromkeys(selectors.METRICS, 0),
    }


def test_scenario_totals_is_one_aggregate_query(sweep):
    with CaptureQueriesContext(connection) as ctx:
        selectors.scenario_totals(sweep, {"has_dups": True})
    assert len(ctx.captured_queries) == 1 and "GROUP BY" not in ctx.captured_queries[0]["sql"]


def test_scenario_page_with_a_known_count_runs_no_count_query(sweep):
    with CaptureQueriesContext(connection) as ctx:
        page, rows = selectors.scenario_page(sweep, {}, 1, per_page=2, count=5)
    assert len(rows) == 2 and page.paginator.num_pages == 3
    assert not any("COUNT(" in q["sql"].upper() for q in ctx.captured_queries)


def test_export_rows_are_agentcore_records(sweep):
    rows = list(selectors.scenario_export_rows(sweep, {"config": 0, "first_point": 1}))
    assert [r["second_point"] for r in rows] == [None, 1, 2]
    assert rows[0]["second_kind"] is None and rows[1]["second_label"] == "tracker-accepted q1"
    assert rows[0]["config_name"] == sweep.configs[0]["name"] and rows[0]["sweep"] == sweep.pk
    record_fields = set(ScenarioRecord.__dataclass_fields__) - {
        "timeline",
        "effects",
        "third_point",
        "third_kind",
        "third_label",
    }
    assert record_fields <= set(rows[0])


def test_export_rows_stream_in_chunks(sweep):
    with CaptureQueriesContext(connection) as ctx:
        rows = list(selectors.scenario_export_rows(sweep, {}, chunk_size=2))
    assert len(rows) == 5 and "timeline" not in ctx.captured_queries[0]["sql"]


def test_sweep_list_counts_stored_chunks(sweep):
    assert selectors.sweep_list().get(pk=sweep.pk).chunks_stored == 2


def test_sweep_get_unknown():
    with pytest.raises(Sweep.DoesNotExist):
        selectors.sweep_get(404)


def test_question_list_and_counts(sweep, django_user_model):
    sc = Scenario.objects.get(sweep=sweep, config=0, first_point=2)
    _data.question(sc, "0:call_1", truth=True)
    _data.question(
        sc, "0:call_2", truth=False, status=Question.Status.ANSWERED, answer=False, answered_at=timezone.now()
    )
    _data.question(sc, "0:call_3", truth=False, status=Question.Status.RESUMED, answer=True, answered_at=timezone.now())
    assert [q.qid for q in selectors.question_list(sweep, "open")] == ["0:call_1"]
    assert {q.qid for q in selectors.question_list(None, "answered")} == {"0:call_2", "0:call_3"}
    assert selectors.question_counts(sweep) == {"open": 1, "answered": 2, "right": 1}


# --- comparing two sweeps ----------------------------------------------------------------------


def test_compare_tables_matches_rows_by_name_and_marks_differences():
    a = [TableRow("x", 1, 2), TableRow("y", 3, 4, with_dups=1, dups=2, calls_plus=5)]
    b = [TableRow("y", 3, 4, calls_plus=5), TableRow("x", 1, 2)]
    x, y = selectors.compare_tables(a, b)
    assert (x["name"], x["changed"], y["name"], y["changed"]) == ("x", False, "y", True)
    assert [c["column"] for c in y["cells"] if c["changed"]] == ["with_dups", "dups"]
    assert y["cells"][3] == {"column": "dups", "a": 2, "b": 0, "diff": -2, "changed": True}


def test_compare_tables_lists_rows_only_one_sweep_has():
    rows = selectors.compare_tables(
        [TableRow("x", 1), TableRow("only a", 2)], [TableRow("only b", 3), TableRow("x", 1)]
    )
    assert [(r["name"], r["a"] is not None, r["b"] is not None, r["changed"]) for r in rows] == [
        ("x", True, True, False),
        ("only a", True, False, True),
        ("only b", False, True, True),
    ]
    assert rows[2]["cells"][0] == {"column": "once", "a": None, "b": 3, "diff": None, "changed": True}


def test_compare_tables_pairs_repeated_names_in_order():
    rows = selectors.compare_tables([TableRow("x", 1), TableRow("x", 2)], [TableRow("x", 1), TableRow("x", 5)])
    assert [r["cells"][0]["diff"] for r in rows] == [0, 3]


def test_sweep_compare_reads_both_tables(sweep):
    other = _data.make_sweep(2)
    _data.add(other, 0, 1, duplicates=1)
    rows = selectors.sweep_compare(sweep, other)
    assert [c["diff"] for c in rows[0]["cells"]] == [-1, -2, -1, -3, -1, -1, 0, -1, -3, -1, -1]
    assert rows[1]["cells"][4] == {"column": "missing", "a": 2, "b": 0, "diff": -2, "changed": True}


def test_sweep_compare_never_compares_a_number_that_is_not_final(sweep):
    _data.question(Scenario.objects.get(sweep=sweep, status=Scenario.Status.WAITING), "0:call_1#1")
    other = _data.make_sweep(2)
    _data.add(other, 0, 1, duplicates=1)
    cells = {c["column"]: c for c in selectors.sweep_compare(sweep, other)[0]["cells"]}
    assert cells["once"] == {"column": "once", "a": 2, "b": 1, "diff": -1, "changed": True}
    assert cells["dups"] == {"column": "dups", "a": None, "b": 1, "diff": None, "changed": False}


def test_same_job_compares_the_job_files(sweep):
    assert selectors.same_job(sweep, _data.make_sweep(1))
    assert not selectors.same_job(sweep, _data.make_sweep(1, job_source='{"name": "other"}'))


def test_compare_choices_lists_the_latest_and_the_asked_for():
    first = _data.make_sweep(1, name="before")
    later = [_data.make_sweep(1) for _ in range(3)]
    assert [pk for pk, _ in selectors.compare_choices(limit=2)] == [later[2].pk, later[1].pk]
    choices = dict(selectors.compare_choices([first.pk], limit=2))
    assert choices[first.pk] == f"{first.pk}: before, running"
