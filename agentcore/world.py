"""Stand-ins for the outside world: the tracker, the tool server, the person (the model: agentcore.model).

Rules:
- Their state outlives every crash: the harness holds them, a crashed run only held references.
- The tracker records an effect, then fires `tracker-accepted`: the effect is real before the
  caller can hear of it. A keyed tracker that sees a known key fires `tracker-accepted` too,
  returns the first answer and records nothing. Search changes nothing and fires no point here.
- Modes: keyed (honours keys), keyless (ignores them), lookup (ignores keys for deduplication but
  answers "did the request with this key happen, and what was its answer?").
- A tracker that can crash (fault "crash") keeps its records through a write-ahead log: a request
  that would record something is appended to the log (`tracker-logged`), the log is synced
  (`tracker-synced`), and only then applied and answered (`tracker-accepted`). Its state is what
  its log replays to: `crash` drops a record appended but not synced and rebuilds the rest from the
  log, so a synced request has happened although its answer never left. A known key is answered
  from the records and logs nothing. A tracker that never crashes (fault "none") has no log and
  fires neither of the two points.
- Every effect carries its origin, (job run, call ID): bookkeeping of the stand-in, invisible to
  the loop, that lets a scenario count duplicates and missing effects exactly. The call ID is the
  job's: a call the model gave under a fresh provider ID counts as the job call it stands for
  (agentcore.model.job_origin), for the tracker, the flaky server and the person alike.
- The flaky tool server (the "tool fails after accept" situation) fails the first attempt of each
  changing call: odd-numbered changing calls die after the tracker accepted (the effect exists),
  even-numbered ones before the request reached it (nothing happened). The loop cannot tell which.
- The scripted person answers "did it happen?" truthfully from the tracker's records and approves
  gated calls; asked again about an approval request it already decided, it repeats its decision
  without being prompted again (the request ID is durable on both sides).
- The queue person (the dashboard's people) gets each "did it happen?" as a question of its own,
  numbered by the asks of the scenario: the truth can change between two asks about one call (a
  "no" makes the loop call again, a crash follows, the next ask's truth is "yes"), so an answer holds
  for its ask only. Answered truthfully, it answers as the scripted person does and is counted alike.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Protocol

from agentcore.crash import Hook, Kind
from agentcore.faults import tracker_fault
from agentcore.jobs import Call, Job, Tool
from agentcore.model import job_origin

MODES = ("keyed", "keyless", "lookup")
Origin = tuple[int, str]


class ToolFailed(Exception):
    """The tool server died mid-call: the loop cannot know whether the request took effect."""


class Tracker:
    __slots__ = ("mode", "fault", "effects", "answers", "next_issue", "next_comment", "labels", "log", "pending")

    def __init__(self, mode: str, fault: str = "none") -> None:
        if mode not in MODES:
            raise ValueError(f"unknown tracker mode {mode!r} (choose from {', '.join(MODES)})")
        tracker_fault(fault)  # agentcore.faults: raises ValueError for a fault it does not know
        self.mode = mode
        self.fault = fault
        self.effects: list[dict[str, Any]] = []
        self.answers: dict[str, dict[str, Any]] = {}  # key -> first answer (keyed, lookup)
        self.next_issue = 1
        self.next_comment = 1
        self.labels: set[tuple[Any, Any]] = set()
        self.log: list[dict[str, Any]] = []  # the synced requests (fault "crash")
        self.pending: dict[str, Any] | None = None  # a request appended to the log, not yet synced

    def request(self, op: str, args: dict[str, Any], key: str | None, origin: Origin, hook: Hook,
                detail: str) -> dict[str, Any]:
        if key is not None and self.mode == "keyed" and key in self.answers:
            hook(Kind.TRACKER_ACCEPTED, detail)
            return self.answers[key]
        if self.fault == "crash":
            self.pending = {"op": op, "args": args, "key": key, "origin": list(origin)}
            hook(Kind.TRACKER_LOGGED, detail)
            self.log.append(self.pending)  # the sync: from here on the request survives a crash
            self.pending = None
            hook(Kind.TRACKER_SYNCED, detail)
        answer = self._record(op, args, key, origin)
        hook(Kind.TRACKER_ACCEPTED, detail)
        return answer

    def crash(self) -> None:
        """The tracker dies and restarts from its log: the unsynced request is lost, every synced
        one is applied (its answer may never have been sent)."""
        self.pending = None
        fresh = Tracker(self.mode, self.fault)
        for r in self.log:
            fresh._record(r["op"], r["args"], r["key"], (r["origin"][0], r["origin"][1]))
        self.effects, self.answers, self.labels = fresh.effects, fresh.answers, fresh.labels
        self.next_issue, self.next_comment = fresh.next_issue, fresh.next_comment

    def _record(self, op: str, args: dict[str, Any], key: str | None, origin: Origin) -> dict[str, Any]:
        answer = self._apply(op, args, key, origin)
        if key is not None and self.mode != "keyless":
            self.answers.setdefault(key, answer)
        return answer

    def _apply(self, op: str, args: dict[str, Any], key: str | None, origin: Origin) -> dict[str, Any]:
        if op == "create_issue":
            answer = {"number": self.next_issue}
            self.next_issue += 1
        elif op == "comment":
            answer = {"comment": self.next_comment, "issue": args.get("issue")}
            self.next_comment += 1
        elif op == "label":
            pair = (_hashable(args.get("issue")), _hashable(args.get("label")))
            answer = {"issue": args.get("issue"), "label": args.get("label")}
            if pair in self.labels:  # idempotent: setting it again changes nothing
                return answer
            self.labels.add(pair)
        else:
            raise ValueError(f"{op} is not a changing operation")
        self.effects.append({"op": op, "args": args, "key": key, "origin": list(origin), "answer": answer})
        return answer

    def search(self, args: dict[str, Any]) -> dict[str, Any]:
        query = str(args.get("query", "")).lower()
        found = [e["answer"]["number"] for e in self.effects
                 if e["op"] == "create_issue" and query in str(e["args"].get("title", "")).lower()]
        return {"issues": found}

    def lookup(self, key: str) -> dict[str, Any] | None:
        """The answer of the request with this key, or None if it never happened (lookup mode)."""
        return self.answers.get(key)

    def find(self, origin: Origin) -> dict[str, Any] | None:
        """What a person sees looking at the tracker: the effect this call made, if any."""
        o = list(job_origin(origin))
        for e in self.effects:
            if e["origin"] == o:
                return e["answer"]
        return None

    def tally(self, expected: list[Origin]) -> tuple[int, int]:
        """(duplicates, missing) against the effects the job should have made once each."""
        counts = Counter(tuple(e["origin"]) for e in self.effects)
        dups = sum(n - 1 for n in counts.values() if n > 1) + sum(n for o, n in counts.items() if o not in expected)
        missing = sum(1 for o in expected if counts[o] == 0)
        return dups, missing

    def snapshot(self) -> dict[str, Any]:
        """The records as stored; a tracker with a fault adds it, one that can crash its (synced) log."""
        out = {"mode": self.mode, "effects": list(self.effects), "answers": dict(self.answers),
               "next_issue": self.next_issue, "next_comment": self.next_comment,
               "labels": [list(p) for p in self.labels]}
        if self.fault != "none":
            out["fault"] = self.fault
        if self.fault == "crash":
            out["log"] = list(self.log)
        return out

    @classmethod
    def restore(cls, data: dict[str, Any]) -> Tracker:
        """The tracker `snapshot` gave; one that can crash restarts from its log (older stored
        states have neither fault nor log: a tracker that never crashes)."""
        t = cls(data["mode"], data.get("fault", "none"))
        if t.fault == "crash":
            t.log = list(data["log"])  # records never change once synced
            t.crash()
            return t
        t.effects = list(data["effects"])  # effects themselves never change once made
        t.answers = dict(data["answers"])
        t.next_issue = data["next_issue"]
        t.next_comment = data["next_comment"]
        t.labels = {tuple(_hashable(x) for x in p) for p in data["labels"]}
        return t


def _hashable(v: Any) -> Any:
    return v if isinstance(v, (str, int, float, bool, type(None))) else repr(v)


class ToolServer:
    """Runs a call against the tracker; with `flaky`, dies mid-call as the module says."""

    __slots__ = ("tracker", "flaky_after", "attempts")

    def __init__(self, tracker: Tracker, job: Job, flaky: bool = False) -> None:
        self.tracker = tracker
        # call id -> True if its first attempt dies after the tracker accepted
        self.flaky_after = {c.id: i % 2 == 0 for i, c in enumerate(job.changing_calls())} if flaky else None
        self.attempts: Counter[Origin] = Counter()

    def call(self, tool: Tool, args: dict[str, Any], key: str | None, origin: Origin, hook: Hook,
             detail: str) -> dict[str, Any]:
        if tool.read_only:
            return self.tracker.search(args)
        origin = job_origin(origin)
        if self.flaky_after is not None:
            self.attempts[origin] += 1
            if self.attempts[origin] == 1:
                if self.flaky_after.get(origin[1], False):
                    self.tracker.request(tool.op, args, key, origin, hook, detail)
                raise ToolFailed(f"{tool.name} {origin[1]}: server died mid-call")
        return self.tracker.request(tool.op, args, key, origin, hook, detail)


class Person(Protocol):
    asks: int
    prompts: int

    def did_it_happen(self, origin: Origin, call: Call, key: str | None, why: str) -> dict[str, Any] | None: ...

    def approve(self, request_id: str, call: Call) -> bool: ...


class _Approver:
    """Approves gated calls, deciding once per request ID (a repeat gets the same decision)."""

    def __init__(self, tracker: Tracker) -> None:
        self.tracker = tracker
        self.asks = 0
        self.prompts = 0
        self.decisions: dict[str, bool] = {}

    def given(self) -> dict[str, bool]:
        """The answers to "did it happen?" this person was given so far (none: it looks itself)."""
        return {}

    def approve(self, request_id: str, call: Call) -> bool:
        if request_id not in self.decisions:
            self.prompts += 1
            self.decisions[request_id] = True
        return self.decisions[request_id]


class ScriptedPerson(_Approver):
    """A person who looks at the tracker and answers at once, truthfully."""

    def did_it_happen(self, origin: Origin, call: Call, key: str | None, why: str) -> dict[str, Any] | None:
        """The call's answer if it happened (read off the tracker), else None."""
        self.asks += 1
        return self.tracker.find(origin)


class Suspended(Exception):
    """A question waits for a real person (the dashboard's queue); the scenario pauses durably."""

    def __init__(self, question: dict[str, Any]) -> None:
        super().__init__(f"waiting for an answer about {question['call']['tool']} {question['call']['id']}")
        self.question = question

    def __reduce__(self) -> tuple[type[Suspended], tuple[dict[str, Any]]]:
        return Suspended, (self.question,)  # it crosses a pipe under the kill crash model


class QueuePerson(_Approver):
    """A person reached through a queue: an unanswered question suspends the scenario.

    `answers` maps a question ID to True (it happened) or False (it did not), as the person said.
    "It happened" makes the call's result whatever the tracker shows for it (a person would look up
    the issue number), or a bare confirmation if there is nothing to show: a wrong "yes" then shows
    as a missing effect, a wrong "no" as a duplicate. Approvals are granted, once per request.
    A question carries `truth`, what the tracker's records say at the ask: the harness's knowledge
    (for "answer truthfully" and for showing whether an answer was right), not the person's.
    """

    def __init__(self, tracker: Tracker, answers: dict[str, bool] | None = None,
                 log: list[tuple[str, str]] | None = None) -> None:
        super().__init__(tracker)
        self.answers = dict(answers or {})
        self.log = log  # a scenario's timeline: the question, and the answer when there is one

    def did_it_happen(self, origin: Origin, call: Call, key: str | None, why: str) -> dict[str, Any] | None:
        self.asks += 1
        qid = question_id(origin, self.asks)
        if self.log is not None:
            self.log.append(("question", f"waiting for a person: did {call.tool} {call.id} happen?"))
        if qid not in self.answers:
            raise Suspended({"id": qid, "run": origin[0], "ask": self.asks,
                             "call": {"id": call.id, "tool": call.tool, "args": call.args}, "key": key, "tried": why,
                             "truth": self.tracker.find(origin) is not None})
        if self.log is not None:
            self.log.append(("answer", "the person answered: " + ("it happened" if self.answers[qid]
                                                                  else "it did not happen")))
        if not self.answers[qid]:
            return None
        return self.tracker.find(origin) or {"confirmed": True}

    def given(self) -> dict[str, bool]:
        """The answers to the asks made so far: a later ask's answer is for a later moment."""
        return {q: a for q, a in self.answers.items() if ask_number(q) <= self.asks}


def question_id(origin: Origin, ask: int) -> str:
    """A question's ID: the job run, the call and the scenario's ask number, e.g. "0:call_1#2"."""
    return f"{origin[0]}:{origin[1]}#{ask}"


def ask_number(qid: str) -> int:
    """The ask number in a question ID (0 for an ID without one)."""
    _, sep, n = qid.rpartition("#")
    return int(n) if sep and n.isdigit() else 0
