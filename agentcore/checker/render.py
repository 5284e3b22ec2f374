"""The audit's reports: a verdict line per (design, tracker mode), its witness, text, Markdown or JSON.

Rules:
- A verdict is "safe" (with the expected losses listed) or the first world that breaks it; a
  witness prints the crash points, the counts, the events that show the loss and its link.
"""

from __future__ import annotations

import json
from typing import Any

from agentcore.checker.judge import AuditResult, Cell, Subject
from agentcore.checker.witness import Witness
from agentcore.checker.worlds import EXCUSES, KILL_NOTE, RUNS
from agentcore.errors import ConfigError

FORMATS = ("text", "markdown", "json")
_SHOWN = ("crash", "restart", "tracker", "ladder", "approval", "failed", "corrupt")  # the witness's lines
WITNESS_LINES = 12


def verdict(s: Subject) -> str:
    """One line: "safe" (with the expected losses, if any), or the first world that breaks it."""
    if s.broken:
        c = s.cells[s.broken]
        return f"{s.name}: broken by {s.broken} ({c.breaks} of {c.scenarios} scenarios)"
    excused = [f"{w} ({c.expected} scenarios)" for w, c in s.cells.items() if c.expected]
    return f"{s.name}: safe" + (f"; expected losses under {', '.join(excused)}" if excused else "")


def witness_lines(wit: Witness) -> list[str]:
    """The witness in a few lines: where it crashed, what it did to the tracker, its link."""
    r = wit.record
    where = f"crash at point {r.first_point} ({r.first_label})"
    if r.second_point is not None:
        where += f", then at point {r.second_point} of the restart ({r.second_label})"
    counts = ", ".join(
        f"{n} {what}"
        for n, what in (
            (r.duplicates, "dups"),
            (r.missing, "missing"),
            (r.wrong, "wrong"),
            (r.denied_ran, "denied ran"),
        )
        if n
    )
    status = "" if r.status == "done" else f", {r.status}"
    lines = [f"  witness ({wit.variant}): {where}: {counts}{status}; {len(wit.timeline)} events"]
    shown = [e for e in wit.timeline[: wit.needed] if e["kind"] in _SHOWN and not e["text"].startswith("answer ")]
    lines += [f"    {e['kind']}: {e['text']}" for e in shown[:WITNESS_LINES]]
    if len(shown) > WITNESS_LINES:
        lines.append(f"    ... {len(shown) - WITNESS_LINES} more")
    if wit.needed < len(wit.timeline):
        lines.append(f"    (then the later job runs, which lose nothing: {len(wit.timeline) - wit.needed} events)")
    lines.append(f"  {wit.link}")
    return lines


def render(result: AuditResult, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(to_dict(result), indent=2) + "\n"
    if fmt == "markdown":
        head = ["design", *(w.name for w in result.worlds)]
        lines = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
        lines += [
            "| "
            + " | ".join([s.name, *(s.cells[w.name].text if w.name in s.cells else "not swept" for w in result.worlds)])
            + " |"
            for s in result.subjects
        ]
        return "\n".join(lines) + "\n"
    if fmt != "text":
        raise ConfigError(f"unknown format {fmt!r} (choose from {', '.join(FORMATS)})")
    lines = [
        f"audit of job {result.job.name}: depth {result.depth}, {RUNS} job runs in sequence",
        "variants: "
        + ", ".join(v.name for v in result.variants)
        + "".join(f"; {name} skipped: {why}" for name, why in result.skipped),
        "world models: " + ", ".join(w.name for w in result.worlds),
        KILL_NOTE + ".",
    ]
    excuses = sorted(
        {
            w.excuse
            for w in result.worlds
            if w.excuse and any(s.cells.get(w.name, Cell()).expected for s in result.subjects)
        }
    )
    lines += [
        f"expected losses ({', '.join(w.name for w in result.worlds if w.excuse == e)}): {EXCUSES[e]}" for e in excuses
    ]
    for s in result.subjects:
        lines.append(verdict(s))
        if s.witness is not None:
            lines += witness_lines(s.witness)
    lines.append(f"{result.scenarios} scenarios; a broken design is not swept under the worlds after its first break")
    return "\n".join(lines) + "\n"


def to_dict(result: AuditResult) -> dict[str, Any]:
    def wit(w: Witness | None) -> dict[str, Any] | None:
        if w is None:
            return None
        return {
            "world": w.world,
            "variant": w.variant,
            "record": w.record.to_dict(),
            "timeline": w.timeline,
            "needed": w.needed,
            "link": w.link,
        }

    return {
        "job": result.job.name,
        "depth": result.depth,
        "runs": RUNS,
        "kill": KILL_NOTE,
        "worlds": [
            {"name": w.name, "conditions": w.conditions, "excuse": EXCUSES.get(w.excuse, "")} for w in result.worlds
        ],
        "variants": [v.name for v in result.variants],
        "skipped_variants": [list(s) for s in result.skipped],
        "scenarios": result.scenarios,
        "verdicts": [
            {
                "name": s.name,
                "design": s.design.name,
                "tracker": s.tracker,
                "verdict": "broken" if s.broken else "safe",
                "world": s.broken or None,
                "cells": {
                    w: {"scenarios": c.scenarios, "breaks": c.breaks, "expected": c.expected, "skipped": c.skipped}
                    for w, c in s.cells.items()
                },
                "witness": wit(s.witness),
            }
            for s in result.subjects
        ],
    }
