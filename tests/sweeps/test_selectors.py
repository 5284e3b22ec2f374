"""Reads: the table, progress, heatmap aggregates, filters, pages, export rows, question counts."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.paginator import InvalidPage
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from agentcore.records import ScenarioRecord, TableRow, table_row
from sweeps import selectors
from sweeps.models import Question, Scenario, Sweep
from tests.sweeps import _data

pytestmark = pytest.mark.django_db


@pytest.fixture
def sweep():
    s = _data.make_sweep(2, total_chunks=3)
    _data.add(s, 0, 1, duplicates=1, asks=2)
    _data.add(s, 0, 1, 1, duplicates=3, missing=1, calls_plus=2)
    _data.add(s, 0, 1, 2, calls_plus=-1, status=Scenario.Status.FAILED)
    _data.add(s, 0, 2, asks=1, status=Scenario.Status.WAITING)
    _data.add(s, 1, 1, missing=2)
    _data.chunk(s, 0, 1, scenarios=3)
    _data.chunk(s, 0, 2, scenarios=1)
    _data.chunk(s, 1, 1, stored=False, scenarios=0)
    return s


def test_table_rows_match_agentcore_table_row(sweep):
    def record(s: Scenario) -> ScenarioRecord:
        return ScenarioRecord(s.job, s.design, s.tracker, s.runs, s.first_point, s.first_kind, s.first_label,
                              s.second_point or None, s.second_kind or None, s.second_label or None, s.duplicates,
                              s.missing, s.asks, s.approvals, s.model_calls, s.calls_plus, s.status)

    expected = [table_row(c["name"], [record(s) for s in Scenario.objects.filter(sweep=sweep, config=i)])
                for i, c in enumerate(sweep.configs)]
    assert selectors.sweep_table_rows(sweep) == expected


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
    p = selectors.sweep_progress(sweep, now=sweep.created_at + timedelta(seconds=10))
    assert p["rate"] == 0.5  # 5 scenarios in 10 s
    assert p["eta_seconds"] == 5.0  # 2 chunks took 10 s, 1 is left


def test_progress_counts_open_questions(sweep):
    _data.question(Scenario.objects.get(sweep=sweep, config=0, first_point=2))
    assert selectors.sweep_progress(sweep)["open_questions"] == 1


def test_heatmap_config_first_sums_in_sql(sweep):
    assert selectors.heatmap_config_first(sweep, "duplicates") == [
        {"config": 0, "first_point": 1, "value": 4}, {"config": 0, "first_point": 2, "value": 0},
        {"config": 1, "first_point": 1, "value": 0}]


def test_heatmap_config_first_is_one_grouped_query(sweep):
    with CaptureQueriesContext(connection) as ctx:
        selectors.heatmap_config_first(sweep, "asks")
    assert len(ctx.captured_queries) == 1 and "GROUP BY" in ctx.captured_queries[0]["sql"]


def test_heatmap_first_second(sweep):
    assert selectors.heatmap_first_second(sweep, 0, "calls_plus") == [
        (1, 1, 2, "tracker-accepted q1"), (1, 2, -1, "tool-returned q2")]


def test_heatmap_refuses_unknown_metrics(sweep):
    with pytest.raises(ValueError):
        selectors.heatmap_config_first(sweep, "id); DROP TABLE x; --")


def test_point_labels_from_chunks(sweep):
    assert selectors.point_labels(sweep)[(0, 2)] == "tool-returned p2"


def test_point_labels_without_chunks_come_from_once_rows():
    s = _data.make_sweep(1)
    _data.add(s, 0, 3, first_label="save-renamed run-1.json")
    assert selectors.point_labels(s) == {(0, 3): "save-renamed run-1.json"}


@pytest.mark.parametrize("filters,expected", [
    ({}, 5), ({"config": 0}, 4), ({"has_dups": True}, 2), ({"has_dups": False}, 3), ({"asked": True}, 2),
    ({"missing": True}, 2), ({"extra_calls": True}, 2), ({"extra_calls": False}, 3), ({"twice": True}, 2),
    ({"status": "waiting"}, 1), ({"first_point": 1, "second_point": 0}, 2), ({"design": "after-reply"}, 1),
    ({"config": None, "design": ""}, 5), ({"tracker": "keyed"}, 5), ({"tracker": "keyless"}, 0),
    ({"design": "once-per-turn", "tracker": "keyed"}, 4), ({"design": "once-per-turn", "config": 1}, 0),
])
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


def test_export_rows_are_agentcore_records(sweep):
    rows = list(selectors.scenario_export_rows(sweep, {"config": 0, "first_point": 1}))
    assert [r["second_point"] for r in rows] == [None, 1, 2]
    assert rows[0]["second_kind"] is None and rows[1]["second_label"] == "tracker-accepted q1"
    assert rows[0]["config_name"] == sweep.configs[0]["name"] and rows[0]["sweep"] == sweep.pk
    record_fields = set(ScenarioRecord.__dataclass_fields__) - {"timeline", "effects"}
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
    _data.question(sc, "0:call_2", truth=False, status=Question.Status.ANSWERED, answer=False,
                   answered_at=timezone.now())
    _data.question(sc, "0:call_3", truth=False, status=Question.Status.RESUMED, answer=True,
                   answered_at=timezone.now())
    assert [q.qid for q in selectors.question_list(sweep, "open")] == ["0:call_1"]
    assert {q.qid for q in selectors.question_list(None, "answered")} == {"0:call_2", "0:call_3"}
    assert selectors.question_counts(sweep) == {"open": 1, "answered": 2, "right": 1}
