"""Point labels and crash plans: plain functions over plain data (no I/O).

Rules:
- A point is named `<kind> <detail> #<occurrence in this process>`: the kind (reply, effect, put,
  or the user's own), a detail the target keeps stable from run to run (a step number, a node, an
  effect's arguments; never a position in the run) and how many times this process has met that
  kind and detail so far. A runtime that reorders its writes keeps the same names.
- A plan is one label per process of a scenario: the first process crashes at its label's point,
  the restart at the second label, and so on; the last process, with no label, runs to the end.
  A process crashes at the first point that carries its label; a label it never meets lets it
  finish (the outcome says so: `missed`).
- A target is swept only if two uninterrupted runs meet the same set of labels: otherwise a plan
  could name points that a later run never reaches, and the counts would not mean what they say.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

# The kinds the port and its adapters name (a user's own `point(kind, ...)` comes as it is named).
KINDS = ("put", "put_writes", "reply", "effect")
DETAIL_CHARS = 60  # a detail is cut to this many characters: labels stay readable in a table


def detail_text(*parts: object) -> str:
    """A detail from its parts, one space apart, cut to DETAIL_CHARS (newlines folded)."""
    text = " ".join(str(p) for p in parts if p is not None and p != "").replace("\n", " ")
    return text if len(text) <= DETAIL_CHARS else text[: DETAIL_CHARS - 1] + "…"


class Labeller:
    """Names the points of one process as they come (the occurrence counts are this process's)."""

    __slots__ = ("seen", "labels")

    def __init__(self) -> None:
        self.seen: Counter[tuple[str, str]] = Counter()
        self.labels: list[str] = []

    def name(self, kind: str, detail: str) -> str:
        self.seen[(kind, detail)] += 1
        label = f"{kind} {detail} #{self.seen[(kind, detail)]}" if detail else f"{kind} #{self.seen[(kind, detail)]}"
        self.labels.append(label)
        return label


def kind_of(label: str) -> str:
    """The kind a label starts with ("put step=3 #1" -> "put")."""
    return label.split(" ", 1)[0]


def label_set_difference(a: Sequence[str], b: Sequence[str]) -> str:
    """ "" when two runs met the same labels; else what each met that the other did not."""
    only_a, only_b = sorted(set(a) - set(b)), sorted(set(b) - set(a))
    if not (only_a or only_b):
        return ""
    return (
        f"only the first run met: {', '.join(only_a) or 'nothing'}; "
        f"only the second run met: {', '.join(only_b) or 'nothing'}"
    )


def plans(first: Sequence[str], restarts: dict[tuple[str, ...], Sequence[str]], depth: int) -> list[tuple[str, ...]]:
    """The plans at `depth` whose restarts' labels are known: every label of the uninterrupted run
    `first` (depth 1), then for each plan of depth d, every label its restart met (`restarts`
    maps a plan to the labels its last process met)."""
    out = [(label,) for label in first]
    frontier = list(out)
    for _ in range(depth - 1):
        frontier = [plan + (label,) for plan in frontier for label in restarts.get(plan, ())]
        out.extend(frontier)
    return out
