"""Table rows to text, JSON, CSV and Markdown: the chapter's layout, shared by the CLI and the dashboard.

Rules: JSON is a list of objects with exactly `name` and the columns; CSV has a header row of the
same keys; text and Markdown use the chapter's column titles, and show a column the chapter has not
(wrong, gave up, denied ran, avoidable asks) only when some row has one (every format shows thrice,
a depth-3 sweep's, only then): the chapter's world has
none, and its table reads as the chapter prints it.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence

from agentcore.errors import ConfigError
from agentcore.records import CHAPTER_COLUMNS, COLUMNS, DEPTH_COLUMNS, TableRow
from agentcore.records import columns as table_columns

FORMATS = ("text", "json", "csv", "markdown")
TITLES = {
    "once": "once",
    "twice": "twice",
    "with_dups": "with dups",
    "dups": "dups",
    "missing": "missing",
    "wrong": "wrong",
    "gave_up": "gave up",
    "denied_ran": "denied ran",
    "asks": "asks",
    "avoidable": "avoidable",
    "calls_plus": "calls+",
    "thrice": "thrice",
}
assert tuple(TITLES) == COLUMNS + DEPTH_COLUMNS, "a title per column"


def shown(rows: Sequence[TableRow]) -> tuple[str, ...]:
    """The columns text and Markdown show: the chapter's, and each other one some row has."""
    always = CHAPTER_COLUMNS + DEPTH_COLUMNS  # thrice is in table_columns only when a row has some
    return tuple(c for c in table_columns(rows) if c in always or any(getattr(r, c) for r in rows))


def render(rows: Sequence[TableRow], fmt: str) -> str:
    if fmt == "json":
        return json.dumps([r.to_dict() for r in rows], indent=2) + "\n"
    if fmt == "csv":
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        cols = table_columns(rows)
        w.writerow(("name", *cols))
        for r in rows:
            w.writerow((r.name, *r.values(cols)))
        return out.getvalue()
    columns = shown(rows)
    titles = ("design", *(TITLES[c] for c in columns))
    if fmt == "markdown":
        lines = ["| " + " | ".join(titles) + " |", "|---" + "|---:" * len(columns) + "|"]
        lines += [f"| {r.name} | " + " | ".join(str(v) for v in r.values(columns)) + " |" for r in rows]
        return "\n".join(lines) + "\n"
    if fmt == "text":
        width = max([len(titles[0])] + [len(r.name) for r in rows])
        cells = [titles] + [(r.name, *(str(v) for v in r.values(columns))) for r in rows]
        return "".join(c[0].ljust(width) + "".join(v.rjust(10) for v in c[1:]) + "\n" for c in cells)
    raise ConfigError(f"unknown format {fmt!r} (choose from {', '.join(FORMATS)})")
