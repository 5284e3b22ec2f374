"""The audit of a target: its sweep under every world model that applies to it, and one verdict.

Rules:
- A world applies to a target when each condition it changes is one the port's world takes: the
  model (fixed, fresh-ids, fickle, with its seed), the tracker stand-in's fault (ttl:N,
  strict-params) and the person's (wrong:P, adversarial: it is asked "did it happen?" only). The
  others are listed with the reason they do not apply (NOT_APPLICABLE), never swept as if they did.
- Each world is swept as `python -m agentcore sweep --target` sweeps (agentcore.port.sweep), the
  chapter's defaults but for the world's conditions (so "panic" is the chapter's model, fixed IDs;
  "model-fresh-ids" a real provider's), and each scenario judged as agentcore's designs are
  (agentcore.checker.judge). The verdict is "safe" if no world breaks it, else the first world that
  does, with its witness: the breaking scenario with the fewest crashes, then the fewest model
  calls (its plan, the labels to crash at, replays it: `sweep --target` plays the same plans).
- A target that is not deterministic is audited on a sample (AUTO_SAMPLES passes per world, or
  `samples`): its "safe" says no pass broke it, with each world's rate and Wilson interval.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agentcore.checker.judge import BREAK, EXPECTED, judge
from agentcore.checker.worlds import WORLDS, World
from agentcore.conditions import NAMED, TARGET_TAKES
from agentcore.jobs import Job
from agentcore.port.sampled import Rate
from agentcore.port.sweep import TargetSweep, sweep_target
from agentcore.records import ScenarioRecord

NOT_APPLICABLE = {
    "crash_model": "the target's store is its own: a power cut is modelled for agentcore's checkpoint store only",
    "fsync": "the target's store is its own: a power cut is modelled for agentcore's checkpoint store only",
    "tracker_fault:crash": "the tracker stand-in lives in the fork server, which is never crashed",
    "tool_faults": "the port's tools inject no faults yet",
    "person_faults:deny": "the port's person answers 'did it happen?' only: it decides no approvals",
}


def why_not(w: World) -> str:
    """Why world `w` does not apply to a target ("" if it does)."""
    for name, value in w.conditions.items():
        if name == "tracker_fault" and str(value).startswith("crash"):
            return NOT_APPLICABLE["tracker_fault:crash"]
        if name == "person_faults" and str(value).startswith("deny"):
            return NOT_APPLICABLE["person_faults:deny"]
        if name not in TARGET_TAKES:
            return NOT_APPLICABLE.get(name, f"the port takes no {name}")
    return ""


@dataclass
class WorldRow:
    world: str
    sweep: TargetSweep
    breaks: list[ScenarioRecord] = field(default_factory=list)
    expected: int = 0  # losses the world makes unavoidable (agentcore.checker.judge: a wrong person's)

    @property
    def rate(self) -> Rate:
        return Rate("breaking", len(self.breaks), len(self.sweep.records))


@dataclass
class TargetAudit:
    target: str
    job: Job
    depth: int
    rows: list[WorldRow]
    skipped: list[tuple[str, str]]  # (world, why it does not apply)

    @property
    def broken(self) -> WorldRow | None:
        return next((r for r in self.rows if r.breaks), None)

    @property
    def sampled(self) -> bool:
        return any(r.sweep.samples > 1 or not r.sweep.ordered for r in self.rows)


def world_conditions(w: World) -> dict[str, Any]:
    """The port's conditions under world `w`: the chapter's defaults but for the world's."""
    return {name: w.conditions.get(name, NAMED[name].default) for name in TARGET_TAKES}


def witness(breaks: list[ScenarioRecord]) -> ScenarioRecord:
    """The shortest breaking scenario: the fewest crashes, then the fewest model calls."""
    return min(
        breaks,
        key=lambda r: (sum(p is not None for p in (r.first_label, r.second_label, r.third_label)), r.model_calls),
    )


def audit_target(
    target: str,
    job: Job,
    job_path: str,
    *,
    worlds: tuple[World, ...] = WORLDS,
    depth: int = 1,
    progress: Callable[[str], Callable[[int, int], None] | None] | None = None,
    **sweep_kw: Any,
) -> TargetAudit:
    """Audit `target` on `job` under each world of `worlds` that applies (the module's rules);
    `sweep_kw` go to every sweep_target (workers, python, timeout, samples)."""
    rows, skipped = [], []
    for w in worlds:
        if why := why_not(w):
            skipped.append((w.name, why))
            continue
        c = world_conditions(w)
        result = sweep_target(
            target,
            job,
            job_path,
            depth=depth,
            model=c["model"],
            seed=int(c["seed"]),
            tracker_fault=c["tracker_fault"],
            person_faults=c["person_faults"],
            progress=progress(w.name) if progress else None,
            **sweep_kw,
        )
        judged = [judge(r, w) for r in result.records]
        breaks = [r for r, j in zip(result.records, judged, strict=True) if j == BREAK]
        rows.append(WorldRow(w.name, result, breaks, judged.count(EXPECTED)))
    return TargetAudit(target, job, depth, rows, skipped)


def plan_of(r: ScenarioRecord) -> list[str]:
    return [p for p in (r.first_label, r.second_label, r.third_label) if p]


def verdict(a: TargetAudit) -> str:
    broken = a.broken
    if broken is None:
        excused = [f"{r.expected} under {r.world}" for r in a.rows if r.expected]
        return (
            "safe"
            + (" in every pass of the sample" if a.sampled else "")
            + (f" (losses the world made unavoidable, the loop asking: {', '.join(excused)})" if excused else "")
        )
    w = witness(broken.breaks)
    counts = (("duplicates", w.duplicates), ("missing", w.missing), ("wrong", w.wrong))
    what = ", ".join(f"{n} {k}" for n, k in counts if k)
    return f"broken under {broken.world}: crash at {' then '.join(map(repr, plan_of(w)))} gives {what or w.status}"


def render(a: TargetAudit, fmt: str = "text") -> str:
    """The audit as text (a row per world, the verdict, the worlds left out) or JSON."""
    if fmt == "json":
        return (
            json.dumps(
                {
                    "target": a.target,
                    "job": a.job.name,
                    "depth": a.depth,
                    "verdict": verdict(a),
                    "worlds": [
                        {
                            "world": r.world,
                            "scenarios": len(r.sweep.records),
                            "breaking": len(r.breaks),
                            "expected": r.expected,
                            "samples": r.sweep.samples,
                            "sampled": r.sweep.samples > 1 or not r.sweep.ordered,
                            "rate": r.rate.text(),
                            "witness": plan_of(witness(r.breaks)) if r.breaks else None,
                        }
                        for r in a.rows
                    ],
                    "not_applicable": dict(a.skipped),
                },
                indent=2,
            )
            + "\n"
        )
    lines = [
        f"audit of {a.target} on {a.job.name}, depth {a.depth}",
        f"{'world':<22}{'scenarios':>10}{'breaking':>10}{'expected':>10}  rate",
    ]
    for r in a.rows:
        rate = r.rate.text() if (r.sweep.samples > 1 or not r.sweep.ordered) else ""
        lines.append(f"{r.world:<22}{len(r.sweep.records):>10}{len(r.breaks):>10}{r.expected:>10}  {rate}")
    lines.append(f"verdict: {verdict(a)}")
    lines += [f"not applicable: {name}: {why}" for name, why in a.skipped]
    return "\n".join(lines) + "\n"
