"""Exports: the results table (CSV, JSON, Markdown), scenario rows (CSV, JSON lines) and two sweeps' tables
compared (CSV). Pure, no queries.

The table goes through agentcore.report.render, so a download is byte for byte what
`python -m agentcore table --format ...` prints for the same rows. Scenario rows are produced lazily,
a few hundred rows per piece of text, so a streamed response never holds 100,000 rows at once.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from agentcore.records import COLUMNS, TableRow
from agentcore.report import render
from sweeps.schema import RECORD_FIELDS

# URL suffix -> (agentcore.report format, content type)
TABLE_FORMATS: dict[str, tuple[str, str]] = {
    "csv": ("csv", "text/csv; charset=utf-8"),
    "json": ("json", "application/json"),
    "md": ("markdown", "text/markdown; charset=utf-8"),
}
# URL suffix -> content type
ROW_FORMATS: dict[str, str] = {
    "csv": "text/csv; charset=utf-8",
    "jsonl": "application/x-ndjson",
}
# A scenario row's columns: where it comes from, then the agentcore record's fields in order.
ROW_FIELDS = ("sweep", "config", "config_name", *RECORD_FIELDS)
BATCH = 500


def table_text(rows: Sequence[TableRow], suffix: str) -> str:
    """The table in the chapter's layout; suffix is a key of TABLE_FORMATS."""
    return render(rows, TABLE_FORMATS[suffix][0])


def _batched(lines: Iterable[str], size: int = BATCH) -> Iterator[str]:
    buf: list[str] = []
    for line in lines:
        buf.append(line)
        if len(buf) >= size:
            yield "".join(buf)
            buf = []
    if buf:
        yield "".join(buf)


def rows_csv(rows: Iterable[Mapping[str, Any]]) -> Iterator[str]:
    """A header of ROW_FIELDS, then one line per row (None as an empty cell)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")

    def lines() -> Iterator[str]:
        writer.writerow(ROW_FIELDS)
        yield _take(out)
        for r in rows:
            writer.writerow(["" if r.get(f) is None else r.get(f) for f in ROW_FIELDS])
            yield _take(out)

    return _batched(lines())


def _take(out: io.StringIO) -> str:
    text = out.getvalue()
    out.seek(0)
    out.truncate(0)
    return text


def rows_jsonl(rows: Iterable[Mapping[str, Any]]) -> Iterator[str]:
    """One JSON object per line, keys in ROW_FIELDS order."""
    return _batched(json.dumps({f: r.get(f) for f in ROW_FIELDS}) + "\n" for r in rows)


def filename(sweep_id: int, what: str, suffix: str) -> str:
    return f"sweep-{sweep_id}-{what}.{suffix}"


def compare_csv(rows: Iterable[Mapping[str, Any]], a_id: int, b_id: int) -> str:
    """Two sweeps' tables compared (selectors.compare_tables rows) as CSV: per configuration, which
    sweeps have it, whether anything differs, then each column's value in A, in B and B - A (empty
    where a sweep lacks the row)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["sweep_a", "sweep_b", "configuration", "in", "changed",
                     *(f"{c}_{side}" for c in COLUMNS for side in ("a", "b", "diff"))])
    for r in rows:
        where = "both" if r["a"] is not None and r["b"] is not None else ("a only" if r["b"] is None else "b only")
        cells = [("" if v is None else v) for c in r["cells"] for v in (c["a"], c["b"], c["diff"])]
        writer.writerow([a_id, b_id, r["name"], where, "yes" if r["changed"] else "no", *cells])
    return out.getvalue()
