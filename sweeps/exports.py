"""Exports: the results table (CSV, JSON, Markdown), scenario rows (CSV, JSON lines) and two sweeps' tables
compared (CSV). Pure, no queries.

Rules:
- The table is agentcore.report.render's (what `python -m agentcore table --format ...` prints for
  the same rows), with the sweep's conditions added, since the numbers mean nothing without them:
  CSV and JSON rows end with the conditions (CONDITION_FIELDS: agentcore.conditions' names, in their
  order), valued as the command line's options are written (`--crash-model power-cut --fsync off
  --tracker-fault ttl:5 ...`), Markdown opens with a line "crash model: power-cut, fsync off, tracker
  fault: ttl:5" (agentcore's words: what is not at its default) and a blank line. Markdown shows a
  column the chapter has not (wrong, gave up, denied ran, avoidable) only when a row has one, as
  agentcore.report does; CSV and JSON carry every column.
- A scenario row carries the same condition fields after its configuration's name; a depth-3 sweep's
  rows carry the third point (third_point, third_kind, third_label) after the second's, empty but in a
  thrice scenario, and a depth-1 or 2 sweep's rows have no such fields (as agentcore's records). The
  table's CSV has thrice after twice when a row has some (agentcore.records.columns, as the CLI's
  CSV). The comparison CSV carries each sweep's conditions in words, and each column of the page's.
- CSV cells are safe to open in a spreadsheet program: a text cell that starts with =, +, -, @, a tab
  or a carriage return (a formula, or what a program takes for one: OWASP's "CSV injection") is
  written with a ' in front (`spreadsheet_cell`), which the program shows and does not run. Numbers
  are written as they are (a negative count stays a number). JSON, JSON lines and Markdown are
  written as they are.
- Scenario rows are produced lazily, a few hundred rows per piece of text, so the file a worker
  writes them into (services/export_files.py) never has 800,000 rows in memory at once.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from agentcore import CONDITIONS, TableRow, table_columns
from agentcore import conditions_words as agent_conditions
from agentcore import render_table as render
from sweeps.configs import Conditions
from sweeps.schema import RECORD_FIELDS, TWICE_FIELDS

# URL suffix -> (agentcore.report format, content type)
TABLE_FORMATS: dict[str, tuple[str, str]] = {
    "csv": ("csv", "text/csv; charset=utf-8"),
    "json": ("json", "application/json"),
    "md": ("markdown", "text/markdown; charset=utf-8"),
}
# URL suffix -> content type
ROW_FORMATS: dict[str, str] = {"csv": "text/csv; charset=utf-8", "jsonl": "application/x-ndjson"}
# The sweep's conditions as exported fields (agentcore.conditions' names: agentcore.config.Config's fields).
CONDITION_FIELDS = Conditions._fields
# A scenario row's columns: where it comes from, then the agentcore record's fields in order; a depth-3
# sweep's with the third point's.
ROW_FIELDS = ("sweep", "config", "config_name", *CONDITION_FIELDS, *TWICE_FIELDS)
THRICE_ROW_FIELDS = ("sweep", "config", "config_name", *CONDITION_FIELDS, *RECORD_FIELDS)


def row_fields(depth: int) -> tuple[str, ...]:
    """The scenario rows' columns of a sweep of this depth."""
    return THRICE_ROW_FIELDS if depth == 3 else ROW_FIELDS


BATCH = 500
# RFC 4180's line end: with it, Python's csv module quotes a cell holding a carriage return (with "\n"
# alone it writes a bare \r, which readers take for the end of the line).
CSV_LINE_END = "\r\n"
# What a spreadsheet program may read as the start of a formula (OWASP, CSV injection).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_cell(value: Any) -> Any:
    """A CSV cell's value, neutralised if it is text a spreadsheet would take for a formula (see the rules)."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def _cells(values: Iterable[Any]) -> list[Any]:
    return [spreadsheet_cell(v) for v in values]


def condition_values(conditions: Conditions) -> dict[str, Any]:
    """The conditions as the command line's options take them: {"crash_model": "power-cut", "fsync": "off", ...}."""
    return {c.name: c.text(v) for c, v in zip(CONDITIONS, conditions, strict=True)}


def conditions_line(conditions: Conditions) -> str:
    """ "crash model: power-cut, fsync off" (agentcore's words, as the sweep page says them)."""
    return f"crash model: {agent_conditions(**conditions._asdict())}"


def table_text(rows: Sequence[TableRow], suffix: str, conditions: Conditions) -> str:
    """The table in the chapter's layout with the sweep's conditions (see the rules); suffix is a key
    of TABLE_FORMATS."""
    fmt = TABLE_FORMATS[suffix][0]
    values = condition_values(conditions)
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator=CSV_LINE_END)
        columns = table_columns(rows)
        writer.writerow(("name", *columns, *CONDITION_FIELDS))
        writer.writerows(_cells((r.name, *r.values(columns), *values.values())) for r in rows)
        return out.getvalue()
    if fmt == "json":
        return json.dumps([{**r.to_dict(), **values} for r in rows], indent=2) + "\n"
    return f"{conditions_line(conditions)}\n\n{render(rows, fmt)}"


def _batched(lines: Iterable[str], size: int = BATCH) -> Iterator[str]:
    buf: list[str] = []
    for line in lines:
        buf.append(line)
        if len(buf) >= size:
            yield "".join(buf)
            buf = []
    if buf:
        yield "".join(buf)


def _with_conditions(
    rows: Iterable[Mapping[str, Any]], conditions: Conditions, fields: Sequence[str]
) -> Iterator[list[Any]]:
    """Each row's values in `fields` order, the sweep's conditions (see the rules) in their places."""
    values = condition_values(conditions)
    for r in rows:
        yield [values[f] if f in values else r.get(f) for f in fields]


def rows_csv(rows: Iterable[Mapping[str, Any]], conditions: Conditions, depth: int = 2) -> Iterator[str]:
    """A header of row_fields(depth), then one line per row (None as an empty cell)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator=CSV_LINE_END)
    fields = row_fields(depth)

    def lines() -> Iterator[str]:
        writer.writerow(fields)
        yield _take(out)
        for values in _with_conditions(rows, conditions, fields):
            writer.writerow(_cells("" if v is None else v for v in values))
            yield _take(out)

    return _batched(lines())


def _take(out: io.StringIO) -> str:
    text = out.getvalue()
    out.seek(0)
    out.truncate(0)
    return text


def rows_jsonl(rows: Iterable[Mapping[str, Any]], conditions: Conditions, depth: int = 2) -> Iterator[str]:
    """One JSON object per line, keys in row_fields(depth) order."""
    fields = row_fields(depth)
    return _batched(
        json.dumps(dict(zip(fields, values, strict=True))) + "\n"
        for values in _with_conditions(rows, conditions, fields)
    )


def filename(sweep_id: int, what: str, suffix: str) -> str:
    return f"sweep-{sweep_id}-{what}.{suffix}"


def compare_csv(
    rows: Iterable[Mapping[str, Any]],
    a_id: int,
    b_id: int,
    a_conditions: Conditions,
    b_conditions: Conditions,
    columns: Sequence[str],
) -> str:
    """Two sweeps' tables compared (selectors.compare_tables rows) as CSV: per configuration, which
    sweeps have it, whether anything differs, then each column's value in A, in B and B - A (empty
    where a sweep lacks the row; `columns`: selectors.table_columns of the two), then each sweep's
    conditions in words ("power-cut, fsync off")."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator=CSV_LINE_END)
    writer.writerow(
        [
            "sweep_a",
            "sweep_b",
            "configuration",
            "in",
            "changed",
            *(f"{c}_{side}" for c in columns for side in ("a", "b", "diff")),
            "conditions_a",
            "conditions_b",
        ]
    )
    words = [agent_conditions(**a_conditions._asdict()), agent_conditions(**b_conditions._asdict())]
    for r in rows:
        where = "both" if r["a"] is not None and r["b"] is not None else ("a only" if r["b"] is None else "b only")
        if len(r["cells"]) != len(columns):  # a header that does not fit its rows would say wrong things
            raise ValueError(f"{r['name']}: {len(r['cells'])} cells for {len(columns)} columns")
        cells = [("" if v is None else v) for c in r["cells"] for v in (c["a"], c["b"], c["diff"])]
        writer.writerow(_cells([a_id, b_id, r["name"], where, "yes" if r["changed"] else "no", *cells, *words]))
    return out.getvalue()
