"""views/downloads.py: a sweep's table and scenarios exported, with its conditions."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.urls import reverse

from agentcore.report import render
from sweeps import exports, selectors
from sweeps.configs import Conditions
from sweeps.models import Scenario, Sweep
from tests.sweeps import _data
from tests.sweeps._web import exported, text

pytestmark = pytest.mark.django_db


def test_export_needs_login_even_where_reading_is_public(anon, sweep, settings):
    settings.SWEEPSITE_PUBLIC_READ = True
    for url in (
        reverse("sweeps:export_table", args=[sweep.pk, "csv"]),
        reverse("sweeps:export_scenarios", args=[sweep.pk, "jsonl"]),
    ):
        r = anon.get(url)
        assert r.status_code == 302 and r["Location"].startswith(reverse("login"))


@pytest.mark.parametrize("suffix", ["csv", "json", "md"])
def test_export_table_is_the_chapter_layout_with_the_sweep_s_conditions(auth, sweep, suffix):
    Sweep.objects.filter(pk=sweep.pk).update(status=Sweep.Status.DONE)
    r = auth.get(reverse("sweeps:export_table", args=[sweep.pk, suffix]))
    assert r.status_code == 200
    assert text(r) == exports.table_text(selectors.sweep_table(sweep), suffix, Conditions())
    assert f'filename="sweep-{sweep.pk}-table.{suffix}"' in r["Content-Disposition"]


def test_export_table_markdown_is_agentcore_s_after_the_conditions_line(auth, sweep):
    Sweep.objects.filter(pk=sweep.pk).update(status=Sweep.Status.DONE, crash_model="power-cut", fsync=False)
    r = auth.get(reverse("sweeps:export_table", args=[sweep.pk, "md"]))
    assert text(r) == "crash model: power-cut, fsync off\n\n" + render(selectors.sweep_table(sweep), "markdown")


def test_export_table_csv_carries_the_sweep_s_conditions(auth, sweep):
    Sweep.objects.filter(pk=sweep.pk).update(
        status=Sweep.Status.DONE, crash_model="kill", fsync=False, tracker_fault="crash"
    )
    rows = list(csv.DictReader(io.StringIO(text(auth.get(reverse("sweeps:export_table", args=[sweep.pk, "csv"]))))))
    assert len(rows) == 3 and {(r["crash_model"], r["fsync"], r["tracker_fault"]) for r in rows} == {
        ("kill", "off", "crash")
    }


def test_export_table_json_carries_the_sweep_s_conditions(auth, sweep):
    Sweep.objects.filter(pk=sweep.pk).update(status=Sweep.Status.DONE, crash_model="power-cut")
    rows = json.loads(text(auth.get(reverse("sweeps:export_table", args=[sweep.pk, "json"]))))
    assert {(r["crash_model"], r["fsync"], r["tracker_fault"]) for r in rows} == {("power-cut", "on", "none")}


def test_export_scenarios_carry_the_sweep_s_conditions(auth, sweep):
    Sweep.objects.filter(pk=sweep.pk).update(crash_model="power-cut", fsync=False)
    r = exported(auth, reverse("sweeps:export_scenarios", args=[sweep.pk, "jsonl"]))
    lines = [json.loads(line) for line in b"".join(r.streaming_content).decode().splitlines()]
    assert len(lines) == 5 and {(x["crash_model"], x["fsync"], x["tracker_fault"]) for x in lines} == {
        ("power-cut", "off", "none")
    }


def test_export_scenarios_csv_of_a_corrupt_scenario_says_so(auth, sweep):
    _data.add(sweep, 2, 1, status=Scenario.Status.CORRUPT)
    r = exported(auth, reverse("sweeps:export_scenarios", args=[sweep.pk, "csv"]) + "?status=corrupt")
    (row,) = csv.DictReader(io.StringIO(b"".join(r.streaming_content).decode()))
    assert (row["config"], row["status"]) == ("2", "corrupt")


@pytest.mark.parametrize("suffix", ["csv", "json", "md"])
def test_export_table_of_a_sweep_not_done_is_refused_as_not_final(auth, sweep, suffix):
    r = auth.get(reverse("sweeps:export_table", args=[sweep.pk, suffix]))
    assert r.status_code == 409 and "not final" in text(r)


def test_export_scenarios_leaves_a_waiting_scenario_s_outcome_empty(auth, sweep):
    _data.add(sweep, 2, 1, status=Scenario.Status.WAITING, missing=2, asks=1, calls_plus=-3)
    r = exported(auth, reverse("sweeps:export_scenarios", args=[sweep.pk, "jsonl"]) + "?config=2")
    (line,) = [json.loads(x) for x in b"".join(r.streaming_content).decode().splitlines()]
    assert line["status"] == "waiting"
    assert [line[k] for k in ("duplicates", "missing", "asks", "approvals", "model_calls", "calls_plus")] == [None] * 6


def test_export_scenarios_csv(auth, sweep):
    r = exported(auth, reverse("sweeps:export_scenarios", args=[sweep.pk, "csv"]))
    assert r.streaming
    rows = list(csv.DictReader(io.StringIO(b"".join(r.streaming_content).decode())))
    assert len(rows) == 5
    assert rows[1]["second_point"] == "1" and rows[0]["second_point"] == ""
    assert rows[1]["duplicates"] == "2" and rows[1]["config_name"] == sweep.configs[0]["name"]


def test_export_scenarios_jsonl_with_filters(auth, sweep):
    r = exported(auth, reverse("sweeps:export_scenarios", args=[sweep.pk, "jsonl"]) + "?has_dups=yes")
    lines = [json.loads(line) for line in b"".join(r.streaming_content).decode().splitlines()]
    assert [(x["config"], x["first_point"], x["second_point"], x["duplicates"]) for x in lines] == [
        (0, 1, 1, 2),
        (1, 1, None, 1),
    ]


def test_export_unknown_format_is_404(auth, sweep):
    assert auth.get(reverse("sweeps:export_table", args=[sweep.pk, "xlsx"])).status_code == 404
    assert auth.get(reverse("sweeps:export_scenarios", args=[sweep.pk, "md"])).status_code == 404


def test_export_bad_filter_is_400(auth, sweep):
    assert auth.get(reverse("sweeps:export_scenarios", args=[sweep.pk, "csv"]) + "?config=99").status_code == 400


def test_export_unknown_sweep_is_404(auth):
    assert auth.get(reverse("sweeps:export_table", args=[777, "csv"])).status_code == 404


def test_a_depth_3_sweep_s_scenario_exports_carry_the_third_point(auth, deep):
    url = reverse("sweeps:export_scenarios", args=[deep.pk, "csv"]) + "?config=0"
    rows = list(csv.DictReader(io.StringIO(b"".join(exported(auth, url).streaming_content).decode())))
    assert list(rows[0])[-14:-11] == ["third_point", "third_kind", "third_label"]
    assert [(r["second_point"], r["third_point"], r["third_label"]) for r in rows] == [
        ("", "", ""),
        ("1", "", ""),
        ("1", "1", "tool-returned r1"),
        ("1", "2", "result-saved r2"),
        ("2", "", ""),
        ("2", "1", "reply-arrived r1"),
    ]
    url = reverse("sweeps:export_scenarios", args=[deep.pk, "jsonl"]) + "?thrice=yes"
    lines = [json.loads(line) for line in b"".join(exported(auth, url).streaming_content).decode().splitlines()]
    assert [(d["third_point"], d["third_kind"]) for d in lines] == [
        (1, "tool-returned"),
        (2, "result-saved"),
        (1, "reply-arrived"),
    ]


def test_a_depth_3_sweep_s_table_export_is_agentcore_s_with_thrice(auth, deep):
    Sweep.objects.filter(pk=deep.pk).update(status=Sweep.Status.DONE)
    rows = list(csv.DictReader(io.StringIO(text(auth.get(reverse("sweeps:export_table", args=[deep.pk, "csv"]))))))
    assert list(rows[0])[:5] == ["name", "once", "twice", "thrice", "with_dups"] and rows[0]["thrice"] == "3"
    md = text(auth.get(reverse("sweeps:export_table", args=[deep.pk, "md"])))
    assert md.split("\n\n", 1)[1] == render(selectors.sweep_table(deep), "markdown") and "| thrice |" in md
