"""Table rows to text, JSON, CSV and Markdown: the chapter's layout, shared by the CLI and the dashboard.

Rules: JSON is a list of objects with exactly `name` and the columns; CSV has a header row of the
same keys; text and Markdown use the chapter's column titles.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence

from agentcore.records import COLUMNS, TableRow

FORMATS = ("text", "json", "csv", "markdown")
TITLES = ("design", "once", "twice", "with dups", "dups", "missing", "asks", "calls+")


def render(rows: Sequence[TableRow], fmt: str) -> str:
    if fmt == "json":
        return json.dumps([r.to_dict() for r in rows], indent=2) + "\n"
    if fmt == "csv":
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        w.writerow(("name", *COLUMNS))
        for r in rows:
            w.writerow((r.name, *r.values()))
        return out.getvalue()
    if fmt == "markdown":
        lines = ["| " + " | ".join(TITLES) + " |", "|---" + "|---:" * len(COLUMNS) + "|"]
        lines += [f"| {r.name} | " + " | ".join(str(v) for v in r.values()) + " |" for r in rows]
        return "\n".join(lines) + "\n"
    if fmt == "text":
        width = max([len(TITLES[0])] + [len(r.name) for r in rows])
        cells = [(TITLES[0], *TITLES[1:])] + [(r.name, *(str(v) for v in r.values())) for r in rows]
        return "".join(c[0].ljust(width) + "".join(v.rjust(10) for v in c[1:]) + "\n" for c in cells)
    raise ValueError(f"unknown format {fmt!r} (choose from {', '.join(FORMATS)})")
