"""The model stand-in: it replies from the job script, and may change its mind when asked again.

Rules:
- Asked about turn N of job run R, it gives turn N's calls (arguments filled from earlier results)
  or, past the last turn, the job's final answer. It counts how many times it was asked about each
  (job run, turn): that count is world state (agentcore.harness.state), so a later process, or a twice
  scenario started from a noted state, meets a model that remembers being asked.
- The first ask about a turn gives the job's calls under the job's call IDs. Asked again, it
  behaves as `Config.model` says (agentcore.standins.faults): `fixed` repeats itself exactly; `fresh-ids`
  gives the same calls under new provider call IDs, "CALL~K" for the Kth ask; `fickle` gives them
  under new IDs too, and changes its mind about a turn once something of it took effect (the
  tracker holds an effect of one of its job calls): each call then comes unchanged, with an
  argument changed, twice (the copy "CALL~Kb"), or not at all, chosen by a hash of (seed, job
  run, turn, ask, call ID), never a stateful random generator, so every process and every replay
  chooses alike. A reply lost before anything of it took effect is not a plan the world can count
  against: the job script stands for the first reply acted on, so the fickle model gives it again
  (a design that saves the reply before running tools only ever asks again then; a design that
  asks again after running some of the turn's calls meets a model that chose otherwise).
- A provider call ID maps back to the job call it stands for (`job_call_id`, the text before the
  separator `SEP`; job files may not use it, agentcore.jobs), so the world's bookkeeping (the
  tracker's origins, the flaky server's attempts, the person looking up an effect) counts an
  effect made under a new ID against the job's call: a second effect of one job call is a
  duplicate, a job call none of whose stand-ins ran is missing.
- Results come back keyed by the IDs the model gave; it reads them by job call ID to fill in
  references, as a real model reads the conversation.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable
from typing import Any

from agentcore.jobs import SEP, Job, resolve
from agentcore.standins.faults import model as parse_model

__all__ = ["SEP", "ScriptedModel", "job_call_id", "job_origin"]

FICKLE = ("keep", "change", "twice", "drop")  # what a fickle model does with a call, asked again
CHANGED = " (reworded)"  # appended to the argument a fickle model changes


def job_call_id(cid: str) -> str:
    """The job's call ID a provider call ID stands for ("call_1~2" -> "call_1")."""
    return cid.split(SEP, 1)[0]


def job_origin(origin: tuple[int, str]) -> tuple[int, str]:
    """An effect's origin by the job call it stands for: (job run, job call ID)."""
    return origin[0], job_call_id(origin[1])


def _draw(*parts: Any) -> float:
    """A number in [0, 1) from a hash of `parts`: the same parts give the same number everywhere."""
    return int.from_bytes(hashlib.blake2b(repr(parts).encode(), digest_size=8).digest()) / 2**64


class ScriptedModel:
    """Replies from the job, as the module says; `calls` counts every ask, `asked` per (run, turn)."""

    __slots__ = ("job", "mode", "seed", "calls", "asked", "effect")

    def __init__(
        self, job: Job, mode: str = "fixed", seed: int = 0, effect: Callable[[tuple[int, str]], object] | None = None
    ) -> None:
        self.job = job
        self.mode = parse_model(mode)
        self.seed = seed
        self.effect = effect  # the tracker's effect of a job call (job run, call ID), or None
        self.calls = 0
        self.asked: Counter[tuple[int, int]] = Counter()

    def reply(self, run: int, turn: int, results: dict[str, Any]) -> list[dict[str, Any]] | str:
        """The calls of turn `turn` of job run `run` (args filled from earlier `results`), or the
        final answer."""
        self.calls += 1
        self.asked[(run, turn)] += 1
        if turn >= len(self.job.turns):
            return self.job.final
        ask = self.asked[(run, turn)]
        by_job_id = {job_call_id(cid): r for cid, r in results.items()}
        fickle = (
            self.mode == "fickle"
            and self.effect is not None
            and any(self.effect((run, c.id)) is not None for c in self.job.turns[turn])
        )
        calls: list[dict[str, Any]] = []
        for c in self.job.turns[turn]:
            args = resolve(c.args, by_job_id)
            if ask == 1 or self.mode == "fixed":
                calls.append({"id": c.id, "tool": c.tool, "args": args})
                continue
            fresh = f"{c.id}{SEP}{ask}"
            what = FICKLE[int(_draw(self.seed, run, turn, ask, c.id) * len(FICKLE))] if fickle else "keep"
            if what == "drop":
                continue
            calls.append({"id": fresh, "tool": c.tool, "args": _changed(args) if what == "change" else args})
            if what == "twice":
                calls.append({"id": fresh + "b", "tool": c.tool, "args": args})
        return calls

    def asks(self) -> list[list[int]]:
        """How many times each (job run, turn) was asked, as [run, turn, n] (the stored shape)."""
        return [[r, t, n] for (r, t), n in sorted(self.asked.items())]

    def remember(self, asks: list[list[int]]) -> None:
        """Take back the counts `asks` gave (a restored world)."""
        self.asked = Counter({(r, t): n for r, t, n in asks})


def _changed(args: dict[str, Any]) -> dict[str, Any]:
    """`args` with its first text argument (by name) reworded, or a note added if it has none."""
    for name in sorted(args):
        if isinstance(args[name], str):
            return {**args, name: args[name] + CHANGED}
    return {**args, "note": CHANGED.strip(" ()")}
