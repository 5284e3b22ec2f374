"""The audit's variants of a job: the job and variants of it that stress the key.

Rules:
- Variants (`variants`) are made from any job with dataclasses.replace: "job" (as it is),
  "same-args" (its first changing call twice in its turn, the second under a new call ID: two
  calls with identical arguments, both to be made), "no-key" (its first changing tool that sends a
  key sends none, and so has no lookup either), "idempotent" (a label tool that sends no key,
  called in a turn of its own on the first issue the job creates). A variant a job cannot have
  is skipped with the reason (no changing call; no tool with a key to take away; no issue to label).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from agentcore.jobs import Call, Job, Tool


@dataclass(frozen=True, slots=True)
class Variant:
    name: str
    job: Job


VARIANTS = ("job", "same-args", "no-key", "idempotent")


def variants(job: Job) -> tuple[list[Variant], list[tuple[str, str]]]:
    """The job and its variants that stress the key (the module's rules), and the variants
    skipped, with why."""
    made, skipped = [Variant("job", job)], []
    for name, make in (("same-args", _same_args), ("no-key", _no_key), ("idempotent", _idempotent)):
        v = make(job)
        if isinstance(v, str):
            skipped.append((name, v))
        else:
            made.append(Variant(name, replace(v, name=f"{job.name}+{name}")))
    return made, skipped


def _fresh(base: str, taken: set[str]) -> str:
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}_{n}"
    return name


def _call_ids(job: Job) -> set[str]:
    return {c.id for t in job.turns for c in t}


def _same_args(job: Job) -> Job | str:
    changing = job.changing_calls()
    if not changing:
        return "the job has no changing call to repeat"
    first = changing[0]
    twin = Call(_fresh(first.id + "_same", _call_ids(job)), first.tool, first.args)
    turns = tuple(tuple(c for call in t for c in ((call, twin) if call is first else (call,))) for t in job.turns)
    return replace(job, turns=turns)


def _no_key(job: Job) -> Job | str:
    keyed = [t for t in job.tools.values() if not t.read_only and t.sends_key]
    if not keyed:
        return "no changing tool sends a key: the job itself has none to take away"
    bare = replace(keyed[0], sends_key=False, lookup=False)  # a lookup asks by key
    return replace(job, tools={**job.tools, bare.name: bare})


def _idempotent(job: Job) -> Job | str:
    creates = [c for c in job.changing_calls() if job.tools[c.tool].op == "create_issue"]
    if not creates:
        return "the job creates no issue for an idempotent label to go on"
    tool = Tool(_fresh("label", set(job.tools)), "label", idempotent=True)
    call = Call(
        _fresh("label_1", _call_ids(job)),
        tool.name,
        {"issue": {"$result": creates[0].id, "field": "number"}, "label": "audited"},
    )
    return replace(job, tools={**job.tools, tool.name: tool}, turns=(*job.turns, (call,)))
