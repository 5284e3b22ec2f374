"""Exports: the results table (CSV, JSON, Markdown) and scenario rows (CSV, JSON lines). Pure, no queries.

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

from agentcore.records import TableRow
from agentcore.report import render

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
ROW_FIELDS = ("sweep", "config", "config_name", "job", "design", "tracker", "runs", "first_point", "first_kind",
              "first_label", "second_point", "second_kind", "second_label", "duplicates", "missing", "asks",
              "approvals", "model_calls", "calls_plus", "status")
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
