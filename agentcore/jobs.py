"""Job files: what the scripted model will ask for, and the tools it may call.

Rules:
- A job is JSON: {"name", "tools", "turns"}. `tools` maps a tool name to its declaration:
  {"op": one of OPS, "read_only", "idempotent", "sends_key", "lookup", "approval"} (flags default
  to false). `turns` is a list of replies: each but the last is {"calls": [{"id", "tool",
  "args"}]}, the last is {"final": "text"}. Call IDs are unique within the job and never contain
  SEP, which a model's fresh provider call IDs add to the job's (agentcore.standins.model).
- An argument may be {"$result": CALL_ID, "field": NAME}: the model fills in that field of an
  earlier turn's result (the model cannot see a result of its own turn).
- A declaration may not contradict its op: search is read-only, the others change the tracker;
  label (set a label) is idempotent by nature.
- Every problem is a JobError "FILE: FIELD: PROBLEM". Size and nesting are bounded so that a
  hostile file costs little.
- An object names each key once: JSON would keep the last of two silently (a second `name`, a
  tool's second `op`), so a repeated key is refused with its path (`tools.file_issue.op`).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from typing import Any

from agentcore.errors import BadInput
from agentcore.limits import MAX_CALLS, MAX_JOB_BYTES, MAX_NESTING

OPS = ("create_issue", "comment", "search", "label")
FLAGS = ("read_only", "idempotent", "sends_key", "lookup", "approval")
MAX_BYTES = MAX_JOB_BYTES  # the name the dashboard's command reads
BUILTIN = {"triage": "triage.json"}
SEP = "~"  # agentcore.standins.model: "call_1~2" is the 2nd ask's ID for call_1


class JobError(BadInput):
    """A job file is unusable; the message names the file, the field and the problem."""


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    op: str
    read_only: bool = False
    idempotent: bool = False
    sends_key: bool = False
    lookup: bool = False
    approval: bool = False


@dataclass(frozen=True, slots=True)
class Call:
    id: str
    tool: str
    args: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Job:
    name: str
    tools: dict[str, Tool]
    turns: tuple[tuple[Call, ...], ...]  # the replies with tool calls, in order
    final: str
    source: str  # the file (or "builtin:NAME") it came from

    def changing_calls(self) -> list[Call]:
        return [c for t in self.turns for c in t if not self.tools[c.tool].read_only]


def load(path: str) -> Job:
    """A job from a file path, or a built-in job by name ("triage")."""
    if path in BUILTIN:
        return parse(_builtin(path), f"builtin:{path}")
    try:
        if os.stat(path).st_size > MAX_JOB_BYTES:
            raise JobError(f"{path}: file: larger than {MAX_JOB_BYTES} bytes")
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise JobError(f"{path}: file: cannot read ({e.strerror})") from None
    return parse(raw, path)


def _builtin(name: str) -> bytes:
    # A plain path beside this module, not importlib.resources: that import (pathlib, urllib, ...)
    # took a tenth of every command's start-up.
    with open(os.path.join(os.path.dirname(__file__), "jobfiles", BUILTIN[name]), "rb") as f:
        return f.read()


def carried_bytes(job: Job) -> int:
    """The bytes of the job a scenario's every state carries: its calls (ID, tool, arguments) and
    its final text, as UTF-8 JSON. Checkpoints, the tracker's records and the model's history copy
    them; the description and the tool declarations are read once and carried nowhere."""
    calls = [[c.id, c.tool, c.args] for turn in job.turns for c in turn]
    return len(json.dumps([calls, job.final], ensure_ascii=False).encode("utf-8", "surrogatepass"))


def turn_pairs(n: int) -> Job:
    """A generated job of `n` turn pairs, the growth benchmark's (bench/bench_growth.py): turn A
    files an issue and searches, turn B comments on A's issue; the triage job's tools."""
    return parse(turn_pairs_source(n), f"generated:pairs-{n}")


def turn_pairs_source(n: int) -> str:
    """turn_pairs(n) as the JSON text of a job file (what the dashboard takes as an uploaded job)."""
    if not 1 <= n <= MAX_CALLS // 3:
        raise BadInput(f"turn pairs must be 1 to {MAX_CALLS // 3}, not {n}")
    triage = json.loads(_builtin("triage"))
    turns: list[dict[str, Any]] = []
    for i in range(n):
        a, s, c = (f"call_{3 * i + k}" for k in (1, 2, 3))
        turns.append(
            {
                "calls": [
                    {"id": a, "tool": "create_issue", "args": {"title": f"Issue {i + 1}"}},
                    {"id": s, "tool": "search", "args": {"query": f"issue {i + 1}"}},
                ]
            }
        )
        turns.append(
            {
                "calls": [
                    {
                        "id": c,
                        "tool": "comment",
                        "args": {"issue": {"$result": a, "field": "number"}, "body": f"Seen again ({i + 1})."},
                    }
                ]
            }
        )
    turns.append({"final": f"Filed {n} issues and commented on each."})
    return json.dumps({"name": f"pairs-{n}", "tools": triage["tools"], "turns": turns})


def parse(raw: bytes | str, source: str) -> Job:
    if len(raw) > MAX_JOB_BYTES:
        raise JobError(f"{source}: file: larger than {MAX_JOB_BYTES} bytes")
    repeated: list[_Repeated] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(items)
        if len(obj) == len(items):
            return obj
        seen: set[str] = set()
        for key, _ in items:
            if key in seen:
                break
            seen.add(key)
        obj = _Repeated(obj, key)
        repeated.append(obj)
        return obj

    try:
        data = json.loads(raw, parse_constant=_no_constant, parse_float=_finite, object_pairs_hook=pairs)
    except (ValueError, RecursionError) as e:  # ValueError: bad JSON, bad UTF-8, 5,000-digit numbers
        raise JobError(f"{source}: file: not valid JSON ({e})") from None
    return _Checker(source).job(data, repeated=bool(repeated))


class _Repeated(dict):  # type: ignore[type-arg]
    """A parsed JSON object that named `key` more than once (the parser kept the last value)."""

    def __init__(self, items: dict[str, Any], key: str) -> None:
        super().__init__(items)
        self.key = key


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is too large for a number")
    return value


class _Checker:
    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, field: str, problem: str) -> JobError:
        return JobError(f"{self.source}: {field}: {problem}")

    def depth(self, value: Any, field: str, level: int = 0) -> None:
        if level > MAX_NESTING:
            raise self.fail(field, f"nested deeper than {MAX_NESTING} levels")
        if isinstance(value, dict):
            for v in value.values():
                self.depth(v, field, level + 1)
        elif isinstance(value, list):
            for v in value:
                self.depth(v, field, level + 1)

    def obj(self, value: Any, field: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(field, f"must be an object, not {type(value).__name__}")
        return value

    def text(self, value: Any, field: str) -> str:
        if not isinstance(value, str) or not value.strip():
            raise self.fail(field, "must be a non-empty string")
        if len(value) > 200 and field.endswith(("name", ".id", ".tool")):
            raise self.fail(field, "longer than 200 characters")
        return value

    def keys_once(self, value: Any, field: str) -> None:
        """Refuse the first object (outermost first, in the file's order) that repeats a key."""
        if isinstance(value, _Repeated):
            raise self.fail(
                f"{field}.{value.key}" if field else value.key,
                f"the key {value.key!r} appears more than once in its object (JSON would keep "
                "only the last, silently): write it once",
            )
        if isinstance(value, dict):
            for k, v in value.items():
                self.keys_once(v, f"{field}.{k}" if field else k)
        elif isinstance(value, list):
            for i, v in enumerate(value):
                self.keys_once(v, f"{field}[{i}]" if field else f"[{i}]")

    def job(self, data: Any, *, repeated: bool = False) -> Job:
        self.depth(data, "file")
        if repeated:
            self.keys_once(data, "")
        data = self.obj(data, "file")
        unknown = set(data) - {"name", "description", "tools", "turns"}
        if unknown:
            raise self.fail(sorted(unknown)[0], "unknown field")
        name = self.text(data.get("name"), "name")
        tools = self.tools(data.get("tools"))
        raw_turns = data.get("turns")
        if not isinstance(raw_turns, list) or not raw_turns:
            raise self.fail("turns", "must be a non-empty list")
        seen: dict[str, int] = {}  # call id -> turn index
        turns: list[tuple[Call, ...]] = []
        final = None
        for i, t in enumerate(raw_turns):
            field = f"turns[{i}]"
            t = self.obj(t, field)
            last = i == len(raw_turns) - 1
            if last:
                if set(t) != {"final"}:
                    raise self.fail(field, 'the last turn must be {"final": "text"}')
                final = self.text(t["final"], field + ".final")
                continue
            if set(t) != {"calls"}:
                raise self.fail(field, 'must be {"calls": [...]} (only the last turn is final)')
            calls = t["calls"]
            if not isinstance(calls, list) or not calls:
                raise self.fail(field + ".calls", "must be a non-empty list")
            turns.append(tuple(self.call(c, f"{field}.calls[{j}]", i, tools, seen) for j, c in enumerate(calls)))
            if len(seen) > MAX_CALLS:
                raise self.fail(field, f"more than {MAX_CALLS} calls in the job")
        assert final is not None
        return Job(name, tools, tuple(turns), final, self.source)

    def tools(self, value: Any) -> dict[str, Tool]:
        value = self.obj(value, "tools")
        if not value:
            raise self.fail("tools", "declares no tool")
        tools = {}
        for name, decl in value.items():
            field = f"tools.{name}"
            self.text(name, field + ".name")
            decl = self.obj(decl, field)
            unknown = set(decl) - {"op", *FLAGS}
            if unknown:
                raise self.fail(f"{field}.{sorted(unknown)[0]}", "unknown field")
            op = decl.get("op")
            if op not in OPS:
                raise self.fail(field + ".op", f"must be one of {', '.join(OPS)}")
            flags = {}
            for flag in FLAGS:
                v = decl.get(flag, False)
                if not isinstance(v, bool):
                    raise self.fail(f"{field}.{flag}", "must be true or false")
                flags[flag] = v
            if op == "search" and not flags["read_only"]:
                raise self.fail(field + ".read_only", "search changes nothing: declare it read_only")
            if op != "search" and flags["read_only"]:
                raise self.fail(field + ".read_only", f"{op} changes the tracker: it cannot be read_only")
            if op == "label":
                flags["idempotent"] = True
            tools[name] = Tool(name, op, **flags)
        return tools

    def call(self, value: Any, field: str, turn: int, tools: dict[str, Tool], seen: dict[str, int]) -> Call:
        value = self.obj(value, field)
        if set(value) != {"id", "tool", "args"}:
            raise self.fail(field, "a call has exactly the fields id, tool, args")
        cid = self.text(value["id"], field + ".id")
        if SEP in cid:
            raise self.fail(field + ".id", f"call ID {cid!r} contains {SEP!r}, which fresh provider call IDs use")
        if cid in seen:
            raise self.fail(field + ".id", f"call ID {cid!r} is used twice")
        tool = self.text(value["tool"], field + ".tool")
        if tool not in tools:
            raise self.fail(field + ".tool", f"unknown tool {tool!r} (declared: {', '.join(tools)})")
        args = self.obj(value["args"], field + ".args")
        self.refs(args, field + ".args", turn, seen)
        seen[cid] = turn
        return Call(cid, tool, args)

    def refs(self, value: Any, field: str, turn: int, seen: dict[str, int]) -> None:
        if isinstance(value, dict):
            if "$result" in value:
                if set(value) != {"$result", "field"}:
                    raise self.fail(field, 'a reference is {"$result": CALL_ID, "field": NAME}')
                ref = value["$result"]
                if not isinstance(ref, str) or seen.get(ref, turn) >= turn:
                    raise self.fail(field, f"refers to {ref!r}, which is no call of an earlier turn")
                self.text(value["field"], field + ".field")
                return
            for k, v in value.items():
                self.refs(v, f"{field}.{k}", turn, seen)
        elif isinstance(value, list):
            for i, v in enumerate(value):
                self.refs(v, f"{field}[{i}]", turn, seen)


def resolve(args: Any, results: dict[str, Any]) -> Any:
    """Fill in references to earlier results (a missing field becomes null, as a model would guess)."""
    if isinstance(args, dict):
        if "$result" in args:
            result = results.get(args["$result"])
            return result.get(args["field"]) if isinstance(result, dict) else None
        return {k: resolve(v, results) for k, v in args.items()}
    if isinstance(args, list):
        return [resolve(v, results) for v in args]
    return args
