"""The tracker stand-in: the issue tracker the loop acts on (its modes and faults).

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
- A tracker that forgets (fault "ttl:N") counts every request it receives, its clock: each changing
  request (answered from a key, refused or not), each search and each lookup (a search is traffic
  like any other; what the person reads off the tracker is not a request). A key is known to the N
  requests after the one that stored it; from the (N+1)th on it is forgotten: a repeat is a new
  request (a second issue) and stores the key again, a lookup answers "never happened". The count
  and the keys' ages are world state (snapshot, restore), so they outlive the agent's crashes.
- A strict tracker (fault "strict-params", as Stripe's) compares a known key's request with the one
  that stored it: another op or other arguments are refused (`Refused`: a known outcome, nothing
  happened), the same ones are answered as its mode answers them. It applies where keys are
  remembered (keyed, lookup). The origins whose last request was refused are world state too
  (`refused`): the loop records a refusal as the call's (error) result and moves on, so a scenario
  counts them as calls given up on, and a call the job needed that only a refused request stood
  for is missing.
- Every effect carries its origin, (job run, call ID): bookkeeping of the stand-in, invisible to
  the loop, that lets a scenario count duplicates and missing effects exactly. The call ID is the
  job's: a call the model gave under a fresh provider ID counts as the job call it stands for
  (agentcore.standins.model.job_origin), for the tracker, the flaky server and the person alike.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from agentcore.crash import Hook, Kind
from agentcore.errors import ConfigError
from agentcore.standins.faults import tracker_fault
from agentcore.standins.model import job_origin

MODES = ("keyed", "keyless", "lookup")
Origin = tuple[int, str]


class Refused(Exception):
    """The tracker refused the request (strict-params: its key is known with other arguments):
    nothing happened, and the same request would be refused again."""


class Tracker:
    __slots__ = (
        "mode",
        "fault",
        "effects",
        "answers",
        "next_issue",
        "next_comment",
        "labels",
        "log",
        "pending",
        "ttl",
        "strict",
        "requests",
        "stored",
        "params",
        "refused",
    )

    def __init__(self, mode: str, fault: str = "none") -> None:
        if mode not in MODES:
            raise ConfigError(f"unknown tracker mode {mode!r} (choose from {', '.join(MODES)})")
        kind, n = tracker_fault(fault)  # agentcore.standins.faults: raises ConfigError for a fault it does not know
        self.mode = mode
        self.fault = fault
        self.effects: list[dict[str, Any]] = []
        self.answers: dict[str, dict[str, Any]] = {}  # key -> first answer (keyed, lookup)
        self.next_issue = 1
        self.next_comment = 1
        self.labels: set[tuple[Any, Any]] = set()
        self.log: list[dict[str, Any]] = []  # the synced requests (fault "crash")
        self.pending: dict[str, Any] | None = None  # a request appended to the log, not yet synced
        self.ttl = n if kind == "ttl" else None
        self.strict = kind == "strict-params"
        self.requests = 0  # requests received: the clock of a tracker that forgets
        self.stored: dict[str, int] = {}  # key -> the request that stored it (ttl)
        self.params: dict[str, list[Any]] = {}  # key -> [op, args] of the request that stored it (strict-params)
        self.refused: list[list[Any]] = []  # origins whose last request was refused (strict-params)

    def request(
        self, op: str, args: dict[str, Any], key: str | None, origin: Origin, hook: Hook, detail: str
    ) -> dict[str, Any]:
        self._received()
        if key is not None and key in self.answers:  # a key is remembered in keyed and lookup mode
            if self.strict and self.params[key] != [op, args]:
                if list(origin) not in self.refused:
                    self.refused.append(list(origin))
                raise Refused(f"{detail}: key {key} was sent before with other arguments")
            if self.mode == "keyed":
                self._answered(origin)
                hook(Kind.TRACKER_ACCEPTED, detail)
                return self.answers[key]
        self._answered(origin)
        if self.fault == "crash":
            self.pending = {"op": op, "args": args, "key": key, "origin": list(origin)}
            hook(Kind.TRACKER_LOGGED, detail)
            self.log.append(self.pending)  # the sync: from here on the request survives a crash
            self.pending = None
            hook(Kind.TRACKER_SYNCED, detail)
        answer = self._record(op, args, key, origin)
        hook(Kind.TRACKER_ACCEPTED, detail)
        return answer

    def _received(self) -> None:
        """One more request: a tracker that forgets drops the keys it now has held for N requests."""
        self.requests += 1
        if self.ttl is not None:
            for k in [k for k, n in self.stored.items() if self.requests - n > self.ttl]:
                del self.stored[k], self.answers[k]
                self.params.pop(k, None)

    def _answered(self, origin: Origin) -> None:
        if self.refused and list(origin) in self.refused:
            self.refused.remove(list(origin))

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
        if key is not None and self.mode != "keyless" and key not in self.answers:
            self.answers[key] = answer
            if self.ttl is not None:
                self.stored[key] = self.requests
            if self.strict:
                self.params[key] = [op, args]
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
        self._received()
        query = str(args.get("query", "")).lower()
        found = [
            e["answer"]["number"]
            for e in self.effects
            if e["op"] == "create_issue" and query in str(e["args"].get("title", "")).lower()
        ]
        return {"issues": found}

    def lookup(self, key: str) -> dict[str, Any] | None:
        """The answer of the request with this key, or None if it never happened (lookup mode)."""
        self._received()
        return self.answers.get(key)

    def find(self, origin: Origin) -> dict[str, Any] | None:
        """What a person sees looking at the tracker: the effect this call made, if any."""
        o = list(job_origin(origin))
        for e in self.effects:
            if e["origin"] == o:
                return e["answer"]
        return None

    def tally(self, expected: list[Origin], denied: frozenset[Origin] = frozenset()) -> tuple[int, int]:
        """(duplicates, missing) against the effects the job should have made once each; a call in
        `denied` should have made none: its absence is not missing (`made` counts its presence)."""
        counts = Counter(tuple(e["origin"]) for e in self.effects)
        dups = sum(n - 1 for n in counts.values() if n > 1) + sum(n for o, n in counts.items() if o not in expected)
        missing = sum(1 for o in expected if counts[o] == 0 and o not in denied)
        return dups, missing

    def made(self, origins: frozenset[Origin]) -> int:
        """How many of these calls made an effect (once or more)."""
        return len(origins & {tuple(e["origin"]) for e in self.effects})

    def snapshot(self) -> dict[str, Any]:
        """The records as stored; a tracker with a fault adds it, one that can crash its (synced) log."""
        out = {
            "mode": self.mode,
            "effects": list(self.effects),
            "answers": dict(self.answers),
            "next_issue": self.next_issue,
            "next_comment": self.next_comment,
            "labels": [list(p) for p in self.labels],
        }
        if self.fault != "none":
            out["fault"] = self.fault
        if self.fault == "crash":
            out["log"] = list(self.log)
        if self.ttl is not None:
            out |= {"requests": self.requests, "stored": dict(self.stored)}
        if self.strict:
            out |= {"params": dict(self.params), "refused": [list(o) for o in self.refused]}
        return out

    @classmethod
    def restore(cls, data: dict[str, Any]) -> Tracker:
        """The tracker `snapshot` gave; one that can crash restarts from its log (older stored
        states have neither fault nor log: a tracker that never crashes). A stored field of the
        wrong type raises TypeError, a missing one KeyError."""
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
        if t.ttl is not None:
            t.requests = _typed(data["requests"], int)
            t.stored = {k: _typed(n, int) for k, n in _typed(data["stored"], dict).items()}
        if t.strict:
            t.params = {k: list(_typed(p, list)) for k, p in _typed(data["params"], dict).items()}
            t.refused = [list(_typed(o, list)) for o in _typed(data["refused"], list)]
        return t


def _typed(value: Any, kind: type) -> Any:
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise TypeError(f"expected {kind.__name__}, not {type(value).__name__}")
    return value


def _hashable(v: Any) -> Any:
    return v if isinstance(v, (str, int, float, bool, type(None))) else repr(v)
