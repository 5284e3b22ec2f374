"""Exports: the table through agentcore.report.render with the sweep's conditions, scenario rows as CSV and
JSON lines."""

from __future__ import annotations

import csv
import io
import json

import pytest

from agentcore import COLUMNS, TableRow
from agentcore import render_table as render
from sweeps import exports, selectors
from sweeps.configs import Conditions
from sweeps.models import Sweep

ROWS = [TableRow("save once per turn", 18, 225, 40, 52, 3, calls_plus=7), TableRow("keys and markers", 43, 1014)]
# A world with faults: rows with the columns the chapter has not.
WORLD_ROWS = [TableRow("real loop, keyed tracker", 18, 225, wrong=2, avoidable=5), TableRow("keys", 18, 225)]
PANIC = Conditions()
POWER_CUT = Conditions("power-cut", False, "crash")
WORLD = Conditions("kill", True, "ttl:5", "k:2", "deny:0.5", "fickle", 7)


def row(**kw) -> dict:
    base = {f: 0 for f in exports.ROW_FIELDS}
    base.update(
        sweep=1,
        config=0,
        config_name="a, b",
        job="triage",
        design="keys",
        tracker="keyed",
        runs=1,
        first_point=1,
        first_kind="reply-arrived",
        first_label='reply-arrived turn "1"',
        second_point=None,
        second_kind=None,
        second_label=None,
        status="done",
    )
    base.update(kw)
    return base


def test_table_csv_is_agentcore_render_with_the_conditions_as_last_columns():
    lines = list(csv.reader(io.StringIO(exports.table_text(ROWS, "csv", POWER_CUT))))
    width = len(lines[0]) - len(exports.CONDITION_FIELDS)
    assert [line[:width] for line in lines] == list(csv.reader(io.StringIO(render(ROWS, "csv"))))
    assert lines[0][width:] == [
        "crash_model",
        "fsync",
        "tracker_fault",
        "tool_faults",
        "person_faults",
        "model",
        "seed",
    ]
    assert {tuple(line[width:]) for line in lines[1:]} == {
        ("power-cut", "off", "crash", "first", "truthful", "fixed", "0")
    }


def test_table_csv_and_json_carry_the_world_as_the_command_line_spells_it():
    lines = list(csv.DictReader(io.StringIO(exports.table_text(ROWS, "csv", WORLD))))
    assert {k: lines[0][k] for k in exports.CONDITION_FIELDS} == {
        "crash_model": "kill",
        "fsync": "on",
        "tracker_fault": "ttl:5",
        "tool_faults": "k:2",
        "person_faults": "deny:0.5",
        "model": "fickle",
        "seed": "7",
    }
    rows = json.loads(exports.table_text(ROWS, "json", WORLD))
    assert (rows[1]["tracker_fault"], rows[1]["seed"]) == ("ttl:5", 7)


def test_table_markdown_opens_with_the_world_in_agentcore_s_words():
    assert exports.table_text(ROWS, "md", WORLD).splitlines()[0] == (
        "crash model: kill, fsync on, tracker fault: ttl:5, tool faults: k:2, person: deny:0.5, model: fickle, seed: 7"
    )


def test_table_json_is_agentcore_render_with_the_conditions_in_every_row():
    rows = json.loads(exports.table_text(ROWS, "json", POWER_CUT))
    assert [{k: v for k, v in r.items() if k not in exports.CONDITION_FIELDS} for r in rows] == json.loads(
        render(ROWS, "json")
    )
    assert rows[0]["crash_model"] == "power-cut" and rows[0]["fsync"] == "off" and rows[0]["tracker_fault"] == "crash"


def test_table_markdown_opens_with_the_conditions_line_then_agentcore_render():
    assert exports.table_text(ROWS, "md", POWER_CUT) == (
        "crash model: power-cut, fsync off, tracker fault: crash\n\n" + render(ROWS, "markdown")
    )


def test_table_markdown_has_the_chapter_titles():
    assert exports.table_text(ROWS, "md", PANIC).splitlines()[2] == (
        "| design | once | twice | with dups | dups | missing | asks | calls+ |"
    )


def test_table_markdown_shows_a_column_the_chapter_has_not_only_when_a_row_has_one():
    lines = exports.table_text(WORLD_ROWS, "md", PANIC).splitlines()
    assert lines[2] == "| design | once | twice | with dups | dups | missing | wrong | asks | avoidable | calls+ |"
    assert lines[4] == "| real loop, keyed tracker | 18 | 225 | 0 | 0 | 0 | 2 | 0 | 5 | 0 |"


def test_table_csv_and_json_carry_every_column_even_at_zero():
    header = next(csv.reader(io.StringIO(exports.table_text(ROWS, "csv", PANIC))))
    assert header[1 : 1 + len(COLUMNS)] == list(COLUMNS)
    (first, _) = json.loads(exports.table_text(WORLD_ROWS, "json", PANIC))
    assert (first["wrong"], first["gave_up"], first["denied_ran"], first["avoidable"]) == (2, 0, 0, 5)


def test_table_of_the_default_conditions_says_them_too():
    assert exports.table_text(ROWS, "md", PANIC).splitlines()[0] == "crash model: panic, fsync on"


def test_rows_csv_header_and_values():
    lines = "".join(exports.rows_csv([row(), row(second_point=2, second_kind="save-renamed", duplicates=1)], PANIC))
    parsed = list(csv.DictReader(io.StringIO(lines)))
    assert tuple(parsed[0]) == exports.ROW_FIELDS
    assert parsed[0]["second_point"] == "" and parsed[1]["second_point"] == "2"
    assert parsed[0]["first_label"] == 'reply-arrived turn "1"' and parsed[0]["config_name"] == "a, b"


def test_rows_csv_of_nothing_is_the_header():
    assert "".join(exports.rows_csv([], PANIC)) == ",".join(exports.ROW_FIELDS) + "\r\n"


def test_rows_jsonl_one_object_per_line():
    text = "".join(exports.rows_jsonl([row(), row(first_point=2)], PANIC))
    objs = [json.loads(line) for line in text.splitlines()]
    assert [o["first_point"] for o in objs] == [1, 2]
    assert objs[0]["second_point"] is None and list(objs[0]) == list(exports.ROW_FIELDS)


def test_rows_are_produced_lazily_in_batches():
    produced = []

    def source():
        for i in range(1, 1201):
            produced.append(i)
            yield row(first_point=i)

    pieces = exports.rows_jsonl(source(), PANIC)
    first = next(pieces)
    assert first.count("\n") == exports.BATCH and len(produced) == exports.BATCH
    assert sum(p.count("\n") for p in pieces) == 1200 - exports.BATCH


def test_filename():
    assert exports.filename(3, "scenarios", "jsonl") == "sweep-3-scenarios.jsonl"


def test_compare_csv_has_both_sides_and_the_difference_per_column():
    rows = selectors.compare_tables(
        [TableRow("x", 1, 2, asks=3), TableRow("gone", 5)], [TableRow("x", 1, 4, asks=1, wrong=2)]
    )
    lines = list(csv.reader(io.StringIO(exports.compare_csv(rows, 7, 9, PANIC, PANIC, COLUMNS))))
    assert lines[0][:5] == ["sweep_a", "sweep_b", "configuration", "in", "changed"]
    assert lines[0][5:8] == ["once_a", "once_b", "once_diff"] and len(lines[0]) == 5 + 3 * len(COLUMNS) + 2
    x = dict(zip(lines[0], lines[1], strict=True))
    assert (x["sweep_a"], x["sweep_b"], x["in"], x["changed"]) == ("7", "9", "both", "yes")
    assert (x["twice_a"], x["twice_b"], x["twice_diff"], x["asks_diff"], x["once_diff"]) == ("2", "4", "2", "-2", "0")
    assert (x["wrong_a"], x["wrong_b"], x["wrong_diff"], x["avoidable_diff"]) == ("0", "2", "2", "0")
    gone = dict(zip(lines[0], lines[2], strict=True))
    assert (gone["in"], gone["once_a"], gone["once_b"], gone["once_diff"]) == ("a only", "5", "", "")


def test_rows_csv_carries_the_sweep_s_conditions_in_every_row():
    parsed = list(csv.DictReader(io.StringIO("".join(exports.rows_csv([row(), row(first_point=2)], POWER_CUT)))))
    assert {(r["crash_model"], r["fsync"], r["tracker_fault"]) for r in parsed} == {("power-cut", "off", "crash")}


def test_rows_jsonl_carries_the_sweep_s_conditions_after_the_configuration_name():
    (obj,) = [json.loads(line) for line in "".join(exports.rows_jsonl([row()], POWER_CUT)).splitlines()]
    assert list(obj)[2:10] == ["config_name", *exports.CONDITION_FIELDS]
    assert (obj["crash_model"], obj["fsync"], obj["tracker_fault"]) == ("power-cut", "off", "crash")


def test_compare_csv_says_each_sweep_s_conditions():
    rows = selectors.compare_tables([TableRow("x", 1)], [TableRow("x", 1)])
    header, line = csv.reader(io.StringIO(exports.compare_csv(rows, 7, 9, PANIC, POWER_CUT, COLUMNS)))
    x = dict(zip(header, line, strict=True))
    assert (x["conditions_a"], x["conditions_b"]) == ("panic, fsync on", "power-cut, fsync off, tracker fault: crash")
    header, line = csv.reader(io.StringIO(exports.compare_csv(rows, 7, 9, WORLD, PANIC, COLUMNS)))
    assert dict(zip(header, line, strict=True))["conditions_a"] == (
        "kill, fsync on, tracker fault: ttl:5, tool faults: k:2, person: deny:0.5, model: fickle, seed: 7"
    )


def test_condition_values_are_the_command_line_s_option_values():
    assert exports.condition_values(Conditions("kill", False, "none")) == {
        "crash_model": "kill",
        "fsync": "off",
        "tracker_fault": "none",
        "tool_faults": "first",
        "person_faults": "truthful",
        "model": "fixed",
        "seed": 0,
    }


# --- spreadsheet formulas (OWASP "CSV injection") -------------------------------------------------

FORMULAS = ['=HYPERLINK("http://x","y")', "+1+2", "-2+3", "@SUM(A1)", "\tx", "\rx"]


def test_table_csv_neutralises_a_name_a_spreadsheet_would_run():
    rows = [TableRow(name, 1, 2, calls_plus=-3) for name in FORMULAS]
    lines = list(csv.DictReader(io.StringIO(exports.table_text(rows, "csv", PANIC), newline="")))
    assert [line["name"] for line in lines] == ["'" + f for f in FORMULAS]
    assert {line["calls_plus"] for line in lines} == {"-3"}  # a negative number stays a number


def test_rows_csv_neutralises_every_text_cell_that_starts_a_formula():
    rows = [row(config_name=f, first_label=f, second_label="@x", first_kind="ok -", calls_plus=-1) for f in FORMULAS]
    lines = list(csv.DictReader(io.StringIO("".join(exports.rows_csv(rows, PANIC)), newline="")))
    assert [(line["config_name"], line["first_label"]) for line in lines] == [("'" + f, "'" + f) for f in FORMULAS]
    assert {line["second_label"] for line in lines} == {"'@x"} and {line["first_kind"] for line in lines} == {"ok -"}
    assert {line["calls_plus"] for line in lines} == {"-1"}


def test_compare_csv_neutralises_a_configuration_name():
    rows = selectors.compare_tables([TableRow("=cmd|' /C calc'!A0", 3, 2)], [TableRow("=cmd|' /C calc'!A0", 1, 2)])
    line = list(csv.DictReader(io.StringIO(exports.compare_csv(rows, 1, 2, PANIC, PANIC, COLUMNS), newline="")))[0]
    assert line["configuration"] == "'=cmd|' /C calc'!A0" and line["once_diff"] == "-2"


def test_json_keeps_the_text_as_it_is():
    rows = [row(config_name="=1+1")]
    assert json.loads("".join(exports.rows_jsonl(rows, PANIC)))["config_name"] == "=1+1"


def test_spreadsheet_cell_leaves_other_values_alone():
    assert [exports.spreadsheet_cell(v) for v in ("a=b", "", 0, -5, None, 1.5)] == ["a=b", "", 0, -5, None, 1.5]


# A depth-3 sweep's rows (agentcore's TableRow: thrice last, by name).
DEEP_ROWS = [
    TableRow("save once per turn", 18, 225, 2168, 4958, calls_plus=5562, thrice=2412),
    TableRow("keys and markers", 43, 1014, calls_plus=7500, thrice=17354),
]


def test_a_depth_3_table_csv_and_json_are_agentcore_s_with_thrice_after_twice():
    lines = list(csv.reader(io.StringIO(exports.table_text(DEEP_ROWS, "csv", PANIC))))
    cli = list(csv.reader(io.StringIO(render(DEEP_ROWS, "csv"))))
    assert [line[: len(cli[0])] for line in lines] == cli and cli[0][:4] == ["name", "once", "twice", "thrice"]
    assert [r["thrice"] for r in json.loads(exports.table_text(DEEP_ROWS, "json", PANIC))] == [2412, 17354]


def test_a_depth_3_sweep_s_scenario_rows_carry_the_third_point_after_the_second():
    third = {
        "second_point": 2,
        "second_kind": "save-renamed",
        "second_label": "save-renamed b",
        "third_point": 5,
        "third_kind": "tracker-accepted",
        "third_label": "tracker-accepted c",
    }
    text = "".join(exports.rows_csv([row(), row(**third)], PANIC, depth=3))
    header, once, thrice = list(csv.reader(io.StringIO(text)))
    assert tuple(header) == exports.THRICE_ROW_FIELDS
    assert header.index("third_point") == header.index("second_label") + 1
    assert dict(zip(header, once, strict=True))["third_point"] == ""
    assert dict(zip(header, thrice, strict=True))["third_label"] == "tracker-accepted c"
    (obj,) = [json.loads(line) for line in "".join(exports.rows_jsonl([row(**third)], PANIC, depth=3)).splitlines()]
    assert list(obj) == list(exports.THRICE_ROW_FIELDS) and (obj["third_point"], obj["third_kind"]) == (
        5,
        "tracker-accepted",
    )


def test_a_depth_1_or_2_sweep_s_scenario_rows_have_no_third_point():
    for depth in (1, 2):
        header = next(csv.reader(io.StringIO("".join(exports.rows_csv([], PANIC, depth=depth)))))
        assert header == list(exports.ROW_FIELDS)
    assert not [f for f in exports.ROW_FIELDS if f.startswith("third")]
    assert set(exports.THRICE_ROW_FIELDS) - set(exports.ROW_FIELDS) == {"third_point", "third_kind", "third_label"}


def test_compare_csv_of_a_depth_3_sweep_has_thrice_columns():
    columns = selectors.table_columns(Sweep(depth=2), Sweep(depth=3))
    rows = selectors.compare_tables([TableRow("x", 1, 2)], [TableRow("x", 1, 2, thrice=9)], columns)
    lines = list(csv.reader(io.StringIO(exports.compare_csv(rows, 7, 9, PANIC, PANIC, columns))))
    x = dict(zip(lines[0], lines[1], strict=True))
    assert lines[0][8:11] == ["twice_a", "twice_b", "twice_diff"] and lines[0][11:14] == [
        "thrice_a",
        "thrice_b",
        "thrice_diff",
    ]
    assert (x["thrice_a"], x["thrice_b"], x["thrice_diff"], x["changed"]) == ("0", "9", "9", "yes")


def test_compare_csv_refuses_columns_that_do_not_fit_the_rows():
    columns = selectors.table_columns(Sweep(depth=2), Sweep(depth=3))
    rows = selectors.compare_tables([TableRow("x", 1, 2)], [TableRow("x", 1, 2, thrice=9)], columns)
    with pytest.raises(ValueError, match=f"x: {len(columns)} cells for {len(COLUMNS)} columns"):
        exports.compare_csv(rows, 7, 9, PANIC, PANIC, COLUMNS)  # a depth-3 comparison under depth-2 headers
