"""A scenario's timeline laid out as swimlanes (lanes, marks, bars, labels), which a template draws as
SVG. Pure: no queries, no Django."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

TL_STEP = 16  # px per event along x, at least (more while the events fit in TL_WIDTH, up to TL_MAX_STEP)
TL_MAX_STEP = 40
TL_WIDTH = 1200  # the page's width for the drawing; a longer timeline scrolls
TL_LANE = 34  # px per lane
TL_LEFT = 130  # the lane names
TL_TOP = 26  # the labels above the marks (crash 1, duplicate, ...)
TL_BOTTOM = 30  # the event numbers
TL_R = 5  # a mark's half size


def _shape(shape: str, x: float, y: float, r: float = TL_R) -> str:
    """An SVG path for a mark centred on (x, y)."""
    if shape == "circle":
        return f"M{x - r:g},{y:g}a{r:g},{r:g} 0 1,0 {2 * r:g},0a{r:g},{r:g} 0 1,0 {-2 * r:g},0Z"
    if shape == "diamond":
        return f"M{x:g},{y - r:g}L{x + r:g},{y:g}L{x:g},{y + r:g}L{x - r:g},{y:g}Z"
    if shape == "square":
        return f"M{x - r:g},{y - r:g}h{2 * r:g}v{2 * r:g}h{-2 * r:g}Z"
    if shape == "triangle":  # pointing right: a process starts
        return f"M{x - r:g},{y - r:g}L{x + r:g},{y:g}L{x - r:g},{y + r:g}Z"
    if shape == "cross":
        return f"M{x - r:g},{y - r:g}L{x + r:g},{y + r:g}M{x + r:g},{y - r:g}L{x - r:g},{y + r:g}"
    raise ValueError(f"unknown shape {shape!r}")


def _effect_answer_events(events: Sequence[Mapping[str, Any]], effects: Sequence[Mapping[str, Any]]) -> set[int]:
    """The numbers (1-based) of the tracker answers that made a duplicate effect: an effect whose
    origin (job run, call) an earlier effect already has. The loop logs an answer as
    "answer TOOL CALL RESULT", and a made effect's answer is unique (issue and comment numbers only
    grow), so the answer text finds the event. An effect whose answer never reached the loop (the
    tool server died after the tracker took the request) has no answer event and is not marked."""
    seen: set[tuple[Any, ...]] = set()
    wanted: set[tuple[str, str]] = set()
    for e in effects:
        origin = e.get("origin")
        key = tuple(origin) if isinstance(origin, list) else (origin,)
        if key in seen and isinstance(origin, list) and len(origin) == 2:
            wanted.add((str(origin[1]), str(e.get("answer"))))
        seen.add(key)
    found = set()
    for n, ev in enumerate(events, 1):
        parts = str(ev.get("text", "")).split(" ", 3)
        if ev.get("kind") == "tracker" and len(parts) == 4 and parts[0] == "answer" and (parts[2], parts[3]) in wanted:
            wanted.discard((parts[2], parts[3]))
            found.add(n)
    return found


def _lane_of(kind: str, text: str) -> tuple[str, str, str]:
    """(lane: "process", "checkpoint", "tracker" or "person"; css class; shape) of an event."""
    if kind == "save":
        return "checkpoint", "save", "square"
    if kind == "tracker":
        return ("tracker", "answer", "circle") if text.startswith("answer") else ("tracker", "request", "diamond")
    if kind == "tool":
        return "tracker", "tool-failed", "cross"
    if kind == "ladder":
        if ": ask says" in text:
            return "person", "person", "circle"
        if ": lookup says" in text:
            return "tracker", "lookup", "circle"
        return "process", "ladder", "diamond"
    if kind in ("approval", "question"):
        return "person", kind, "circle"
    if kind == "answer":
        return "person", "person", "circle"
    if kind == "crash":
        return "process", "crash", "cross"
    if kind == "restart":
        return "process", "restart", "triangle"
    if kind in ("start", "model", "failed"):
        return "process", kind, {"start": "circle", "model": "diamond", "failed": "cross"}[kind]
    return "process", "other", "circle"


def _place(events: Sequence[Mapping[str, Any]], dup_events: set[int]) -> list[tuple[int, int, str, str, str, str, str]]:
    """Each event's (n, process index, lane, cls, shape, kind, text): a restart starts the next process."""
    placed = []
    proc = 0
    for n, ev in enumerate(events, 1):
        kind, text = str(ev.get("kind", "")), str(ev.get("text", ""))
        if n > 1 and kind == "restart":
            proc += 1
        lane, cls, shape = _lane_of(kind, text)
        placed.append((n, proc, lane, "dup" if n in dup_events else cls, shape, kind, text))
    return placed


def _annotate(n: int, kind: str, text: str, cls: str, crashes: int) -> tuple[str, tuple[str, int, str] | None]:
    """A mark's tooltip, and its label above it (text, px above the mark, class) if it has one."""
    if kind == "crash":
        return f"#{n} crash {crashes}: {text}", (f"crash {crashes}", 4, "crash")
    if kind == "restart":
        return f"#{n} {kind}: {text}", ("restart", 4, "restart")
    if cls == "dup":
        return f"#{n} duplicate effect made here: {text}", ("duplicate", 5, "dup")
    return f"#{n} {kind}: {text}", None


def timeline_lanes(
    events: Sequence[Mapping[str, Any]], effects: Sequence[Mapping[str, Any]] = (), width: int = TL_WIDTH
) -> dict[str, Any]:
    """A scenario's timeline as swimlanes (after Jepsen's timelines and Temporal's event history).

    x is the order of events; the lanes are the loop's processes (a crash ends one, the next starts at
    the restart; a person's answer continues the process that asked), then the checkpoint
    (saves), the tracker (requests and answers, the tool server's failures, lookups) and the person
    (approvals, answers to "did it happen?", open questions). Every event is one mark, numbered as
    the event table numbers it; a mark off its process's lane has a link line back to the process.
    Crashes are crosses labelled "crash N", restarts triangles; the tracker answer that made a
    duplicate effect is marked "duplicate". The events share `width` (between TL_STEP and TL_MAX_STEP
    px each: a long timeline is wider than the page and scrolls). Returns plain values for the template:
    {"width", "height", "lanes": [{"name", "y", "process"}], "bars": [{"x1", "x2", "y", "end"}],
     "marks": [{"n", "x", "y", "cls", "path", "title", "link"}], "labels": [{"x", "y", "text", "cls"}],
     "ticks": [{"x", "text"}], "crashes", "duplicates": [event numbers]}
    """
    events = [e for e in events if isinstance(e, Mapping)]
    dup_events = _effect_answer_events(events, effects)
    placed = _place(events, dup_events)
    processes = placed[-1][1] + 1 if placed else 0
    names = [f"process {i + 1}" for i in range(processes)] + ["checkpoint", "tracker", "person"]
    lane_y = {name: TL_TOP + TL_LANE * i + TL_LANE / 2 for i, name in enumerate(names)}

    step = max(TL_STEP, min(TL_MAX_STEP, (width - TL_LEFT - 20) // max(len(events), 1)))

    def x_of(n: int) -> float:
        return TL_LEFT + (n - 0.5) * step

    marks, labels, first, last, end = [], [], {}, {}, {}
    crashes = 0
    for n, p, lane, cls, shape, kind, text in placed:
        pname = f"process {p + 1}"
        y = lane_y[pname if lane == "process" else lane]
        x = x_of(n)
        first.setdefault(p, x)
        last[p] = x
        if kind in ("crash", "failed") or (kind == "question" and n == len(events)):  # waiting for an answer
            end[p] = kind
        crashes += kind == "crash"
        title, label = _annotate(n, kind, text, cls, crashes)
        if label is not None:
            labels.append({"x": x, "y": y - TL_R - label[1], "text": label[0], "cls": label[2]})
        r = TL_R + 2 if cls in ("crash", "dup", "question") else TL_R
        marks.append(
            {
                "n": n,
                "x": x,
                "y": y,
                "cls": cls,
                "path": _shape(shape, x, y, r),
                "title": title,
                "link": None if lane == "process" else {"y1": lane_y[pname], "y2": y},
            }
        )
    bars = [
        {
            "x1": first[p] - step / 2,
            "x2": last[p] + step / 2,
            "y": lane_y[f"process {p + 1}"],
            "end": end.get(p, "done"),
        }
        for p in range(processes)
    ]
    every = 5 if len(events) <= 60 else 10
    ticks = [{"x": x_of(n), "text": str(n)} for n in range(1, len(events) + 1) if n == 1 or n % every == 0]
    return {
        "width": TL_LEFT + step * len(events) + 20,
        "height": TL_TOP + TL_LANE * len(names) + TL_BOTTOM,
        "lanes": [{"name": name, "y": lane_y[name], "process": name.startswith("process")} for name in names],
        "bars": bars,
        "marks": marks,
        "labels": labels,
        "ticks": ticks,
        "axis_y": TL_TOP + TL_LANE * len(names) + 16,
        "crashes": crashes,
        "duplicates": sorted(dup_events),
    }
