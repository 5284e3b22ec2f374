"""The person stand-ins: the scripted person and the dashboard's queue person.

Rules:
- The scripted person answers "did it happen?" from the tracker's records and decides approval
  requests; asked again about an approval request it already decided, it repeats its decision
  without being prompted again (the request ID is durable on both sides), whichever call the
  request is about. How it errs is `Config.person_faults` (agentcore.standins.faults), its draws seeded:
  truthful answers truly and approves everything; deny:P decides against a call with probability
  P (chance of seed, job run, call ID: the person judges the call shown, so a restart's new
  request for the same call is judged alike); wrong:P answers an ask wrongly with probability P
  (chance of seed, job run, call ID, ask number); adversarial answers every ask wrongly and
  approves everything (an approval has no true answer to get wrong; deny:P is the option for
  denials). A wrong "yes" makes the call's result a bare confirmation (the call is taken as done,
  its effect missing), a wrong "no" makes the loop call again (a duplicate where no key stops it).
- The person's verdict on a gated call (`denies`) is what it decides, or would decide, about that
  call: a loop that hands it a request ID already decided for another call (another job run's)
  gets that old decision back, while the verdict stays the person's judgement of this call. A
  scenario counts a denied call's effect as denied_ran, and never as missing (agentcore.records).
- Every "did it happen?" comes graded (agentcore.durable.ladder.avoidable): the person counts the
  avoidable asks, and the queue's question carries the grade (`avoidable`).
- The queue person (the dashboard's people) gets each "did it happen?" as a question of its own,
  numbered by the asks of the scenario: the truth can change between two asks about one call (a
  "no" makes the loop call again, a crash follows, the next ask's truth is "yes"), so an answer holds
  for its ask only. Answered truthfully, it answers as the scripted person does and is counted alike;
  it approves every gated call.
"""

from __future__ import annotations

from typing import Any, Protocol

from agentcore.jobs import Call
from agentcore.standins.faults import chance, person_faults
from agentcore.standins.model import job_origin
from agentcore.standins.tracker import Origin, Tracker


class Person(Protocol):
    asks: int
    avoidable: int
    prompts: int

    def did_it_happen(
        self, origin: Origin, call: Call, key: str | None, why: str, avoidable: bool = False
    ) -> dict[str, Any] | None: ...

    def approve(self, request_id: str, call: Call, origin: Origin) -> bool: ...

    def denies(self, origin: Origin) -> bool: ...


class _Approver:
    """Decides gated calls once per request ID (a repeat gets the same decision); approves them all."""

    def __init__(self, tracker: Tracker) -> None:
        self.tracker = tracker
        self.asks = 0
        self.avoidable = 0  # the asks graded avoidable
        self.prompts = 0
        self.decisions: dict[str, bool] = {}

    def given(self) -> dict[str, bool]:
        """The answers to "did it happen?" this person was given so far (none: it looks itself)."""
        return {}

    def approve(self, request_id: str, call: Call, origin: Origin) -> bool:
        if request_id not in self.decisions:
            self.prompts += 1
            self.decisions[request_id] = not self.denies(origin)
        return self.decisions[request_id]

    def denies(self, origin: Origin) -> bool:
        """The person's verdict on the gated call `origin`: True if it denies (or would deny) it."""
        return False

    def _asked(self, avoidable: bool) -> None:
        self.asks += 1
        self.avoidable += avoidable


class ScriptedPerson(_Approver):
    """A person who looks at the tracker and answers at once, erring as `faults` says (the module
    says how), its draws seeded with `seed`."""

    def __init__(self, tracker: Tracker, faults: str = "truthful", seed: int = 0) -> None:
        super().__init__(tracker)
        self.kind, self.p = person_faults(faults)
        self.seed = seed

    def did_it_happen(
        self, origin: Origin, call: Call, key: str | None, why: str, avoidable: bool = False
    ) -> dict[str, Any] | None:
        """The call's answer if the person says it happened (read off the tracker), else None."""
        self._asked(avoidable)
        found = self.tracker.find(origin)
        lies = self.kind == "adversarial" or (
            self.kind == "wrong" and chance("wrong", self.seed, *job_origin(origin), self.asks) < self.p
        )
        return said(self.tracker, origin, (found is not None) != lies)

    def denies(self, origin: Origin) -> bool:
        return self.kind == "deny" and chance("deny", self.seed, *job_origin(origin)) < self.p


def said(tracker: Tracker, origin: Origin, happened: bool) -> dict[str, Any] | None:
    """The call's result as a person's answer makes it: None for "it did not happen"; for "it
    happened", what the tracker shows for it (a person would look up the issue number), or a bare
    confirmation if there is nothing to show (a wrong "yes")."""
    if not happened:
        return None
    return tracker.find(origin) or {"confirmed": True}


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
    An answer makes the call's result as `said` says: a wrong "yes" then shows as a missing effect,
    and a later call built on that result (a comment on the issue) as a wrong one (agentcore.checker.effects:
    it goes to issue None); a wrong "no" shows as a duplicate. A true "yes" always has something to
    show, so only a wrong one is bare (the planted bug `happened_without_result` makes every "yes"
    bare). Approvals are granted, once per request.
    A question carries `truth`, what the tracker's records say at the ask: the harness's knowledge
    (for "answer truthfully" and for showing whether an answer was right), not the person's.
    """

    def __init__(
        self, tracker: Tracker, answers: dict[str, bool] | None = None, log: list[tuple[str, str]] | None = None
    ) -> None:
        super().__init__(tracker)
        self.answers = dict(answers or {})
        self.log = log  # a scenario's timeline: the question, and the answer when there is one

    def did_it_happen(
        self, origin: Origin, call: Call, key: str | None, why: str, avoidable: bool = False
    ) -> dict[str, Any] | None:
        self._asked(avoidable)
        qid = question_id(origin, self.asks)
        if self.log is not None:
            self.log.append(("question", f"waiting for a person: did {call.tool} {call.id} happen?"))
        if qid not in self.answers:
            raise Suspended(
                {
                    "id": qid,
                    "run": origin[0],
                    "ask": self.asks,
                    "call": {"id": call.id, "tool": call.tool, "args": call.args},
                    "key": key,
                    "tried": why,
                    "avoidable": avoidable,
                    "truth": self.tracker.find(origin) is not None,
                }
            )
        if self.log is not None:
            self.log.append(
                ("answer", "the person answered: " + ("it happened" if self.answers[qid] else "it did not happen"))
            )
        return said(self.tracker, origin, self.answers[qid])

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
