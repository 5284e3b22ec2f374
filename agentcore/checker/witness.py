"""A witness of a break: the scenario, its timeline, how much of it shows the loss, and its link.

Rules:
- A witness names the world, the variant, the scenario's record (its crash points) and its
  timeline; `needed` counts the events through the last job run that crashed or lost. Its link is
  the dashboard's page of that scenario (`link`): the caller gives the dashboard's address (`site`),
  agentcore knows none.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from agentcore.checker.worlds import World
from agentcore.records import ScenarioRecord

if TYPE_CHECKING:
    from agentcore.config import Config


class PlayedLike(Protocol):
    """What a played scenario tells a witness (agentcore.harness.scenario.Played has it)."""

    wrong: int
    denied_ran: int
    status: str
    effects: list[dict[str, Any]] | None


@dataclass(slots=True)
class Witness:
    world: str
    variant: str
    record: ScenarioRecord
    timeline: list[dict[str, Any]]
    link: str
    needed: int = 0  # the events that show the loss: through the last job run with a crash or a loss


def loss_runs(cfg: Config, p: PlayedLike) -> set[int]:
    """The job runs (0-based) where a played scenario doubled or lost an effect; every run when
    something else went wrong (a wrong effect, a denied call run, a stop), which the effects do
    not place."""
    if p.wrong or p.denied_ran or p.status != "done":
        return set(range(cfg.runs))
    seen: Counter[tuple[int, str]] = Counter((e["origin"][0], e["origin"][1]) for e in p.effects or [])
    expected = set(cfg.expected)
    return {o[0] for o, n in seen.items() if n > 1 or o not in expected} | {o[0] for o in expected if not seen[o]}


def needed(timeline: list[dict[str, Any]], loss_runs: set[int]) -> int:
    """How many of a timeline's events show its loss: through the last job run that crashed or
    lost. A job run is told by the run ID its start names ("run-2", "run-2.p3": run 1, 0-based);
    a run ID that names no number (a planted bug's) leaves the timeline whole."""
    run, last, runs = 0, max(loss_runs, default=0), []
    for e in timeline:
        if e["kind"] == "start":
            m = _RUN_ID.search(e["text"])
            run = int(m.group(1)) - 1 if m else run
        runs.append(run)
        if e["kind"] == "crash":
            last = max(last, run)
    return sum(1 for r in runs if r <= last)


_RUN_ID = re.compile(r"\brun run-(\d+)\b")


def link(
    site: str, cfg: Config, variant: str, w: World, first: int, second: int | None, audit_id: int | None = None
) -> str:
    """The dashboard's page of one scenario: the job (a built-in one by name, or the dashboard's
    audit `audit_id` whose stored job it is), its variant, the design, tracker mode, job runs, crash
    points and the world's conditions (fsync as on/off, as the CLI spells it)."""
    job: dict[str, Any] = {"job": cfg.job.name.removesuffix(f"+{variant}")} if audit_id is None else {"audit": audit_id}
    params: dict[str, Any] = {
        **job,
        "variant": variant,
        "design": cfg.design.name,
        "tracker": cfg.tracker,
        "runs": cfg.runs,
        "first": first,
    }
    if second is not None:
        params["second"] = second
    for c, v in w.conditions.items():
        params[c] = ("on" if v else "off") if c == "fsync" else v
    from urllib.parse import urlencode  # here: a few ms of every command's start-up otherwise

    return f"{site.rstrip('/')}/witness/?{urlencode(params)}"
