"""The audit: every design under every world model, on a job and on variants of it that stress the key.

Rules:
- A world model (`WORLDS`) is the chapter's world with one factor changed, as Config's condition
  fields (agentcore.config.CONDITIONS): panic (the chapter), power-cut, power-cut without fsync, a
  tracker that crashes, a tracker that forgets keys (ttl:TTL), a strict tracker, tool faults past
  the loop's attempts (k:MAX_ATTEMPTS+1) and for good (always), a person who denies (deny:0.5),
  errs (wrong:0.3) or lies (adversarial), a model that renames its calls (fresh-ids) or changes
  its mind (fickle, seed 0). The kill crash model is left out: tests/agentcore/test_crash_models.py
  proves its records equal panic's, and it costs about 20 times as much.
- TTL is DEFAULT_SWEEP_DEPTH + 1 (3): the shortest time a tracker may keep keys under the chapter's
  advice at depth 2. The loop repeats a key only in the retries right after its crashes (at most
  one per crash) and, with a flaky tool, after the failed first attempt: a shorter TTL is a tracker
  that forgets a key inside the retry window, which no loop can survive and the advice rules out.
- Tool-fault worlds act only on a design with a flaky tool server (agentcore.standins.faults): for the
  others they are the chapter's world again, so they are not swept ("n/a").
- Variants (`variants`) are made from any job with dataclasses.replace: "job" (as it is),
  "same-args" (its first changing call twice in its turn, the second under a new call ID: two
  calls with identical arguments, both to be made), "no-key" (its first changing tool that sends a
  key sends none, and so has no lookup either), "idempotent" (a label tool that sends no key,
  called in a turn of its own on the first issue the job creates). A variant a job cannot have
  is skipped with the reason (no changing call; no tool with a key to take away; no issue to label).
- A scenario (its record) is judged by `judge`: "ok" (no duplicate, missing, wrong or denied-yet-
  run effect, and not "corrupt"); else an "expected" loss where the world makes it unavoidable and
  the design reports rather than hides it; else a "break". Expected losses, by world (`excuse`):
  tool faults (the tool does not recover within MAX_ATTEMPTS attempts, or never): effects missing
  in a scenario that ended "failed" (the loop gave up on a call more often than the restarts allow:
  the tool never recovered), with nothing doubled or wrong. A scenario that gave up and still ended
  "done" had a tool that recovered: a restart must then make every effect, so its missing ones are a
  break (a loop that skips a given-up call and moves on, the planted bug skip_given_up); a wrong
  or lying person (wrong:P, adversarial): any double, loss or wrong effect of a scenario that
  asked the person (the ladder asks only when no key and no lookup can settle the call: there was
  nothing to check the lie against; the record does not say whether an answer was a lie, so a
  scenario whose answers all happened to be true is excused too: a loss with a truthful person is
  caught in the worlds where the person is truthful, which every design is swept under first);
  power-cut without fsync: doubles, losses and corrupt checkpoints (the store did not sync: the
  chapter's advice is to sync, and no design survives a disk that keeps no write), but not wrong
  effects. A denied call that ran is always a break.
- A verdict per (design, tracker mode): worlds in WORLDS' order, each swept at `depth` with RUNS
  (2) job runs in sequence, on every variant; "safe" if no world breaks it (with its expected
  losses listed), else the first world that breaks it, with a minimal witness: among the breaking
  scenarios of that world, the one with the shortest timeline. Only the CANDIDATES breaking
  scenarios that promise the shortest timeline (fewest model calls, asks, approvals, duplicates
  and crashes: `_promise`) are replayed with their timelines, never all of them. It prints
  through the last job run that crashed or lost (`needed`), and links to the dashboard's page of
  one scenario (`link`: /witness/ with the job, variant, design, tracker mode, runs, crash points
  and the world's conditions).
- Cost: once broken, a (design, tracker mode) is not swept under later worlds (its verdict is
  known); `every=True` (the Markdown table) sweeps every cell. Scenarios stream through: only
  counts and the witness candidates are kept. On triage with 2 workers, the built-in designs'
  verdicts in every world but power-cut without fsync take about 11 minutes (3.1 M scenarios), their
  table 20 (3.9 M), unmerged; power-cut without fsync, merged (agentcore.harness.merge), 34 minutes for its
  whole column (12.9 M scenarios).
"""

from __future__ import annotations

import heapq
import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from agentcore.config import CONDITIONS, Config, config_name
from agentcore.durable.designs import Design
from agentcore.harness.chunks import replay
from agentcore.harness.scenario import Played
from agentcore.harness.sweep import plan_chunks, run_chunks
from agentcore.jobs import Call, Job, Tool
from agentcore.limits import DEFAULT_SWEEP_DEPTH, MAX_ATTEMPTS
from agentcore.records import ScenarioRecord

RUNS = 2  # job runs in sequence: a daily job's second run must not collide with its first
TTL = DEFAULT_SWEEP_DEPTH + 1
AUDIT_DEPTHS = (1, 2)  # a witness (replay, link, /witness/) names a first and a second crash point
CANDIDATES = 16  # breaking scenarios replayed per broken (design, tracker mode) to find the shortest
OK, EXPECTED, BREAK = "ok", "expected", "break"
SITE = "http://127.0.0.1:8000"
KILL_NOTE = ("kill is left out: tests/agentcore/test_crash_models.py proves its records equal panic's, "
             "at about 20 times the cost")


@dataclass(frozen=True, slots=True)
class World:
    """A world model: a name, its Config condition fields that differ from the chapter's world, the
    losses it excuses (`judge`), and whether it acts only on a flaky tool server."""

    name: str
    conditions: dict[str, Any]
    excuse: str = ""  # "", "tool", "person" or "fsync"
    flaky_only: bool = False


WORLDS: tuple[World, ...] = (
    World("panic", {}),
    World("power-cut", {"crash_model": "power-cut"}),
    World("power-cut-no-fsync", {"crash_model": "power-cut", "fsync": False}, "fsync"),
    World("tracker-crash", {"tracker_fault": "crash"}),
    World(f"ttl:{TTL}", {"tracker_fault": f"ttl:{TTL}"}),
    World("strict-params", {"tracker_fault": "strict-params"}),
    World(f"tool-faults-k:{MAX_ATTEMPTS + 1}", {"tool_faults": f"k:{MAX_ATTEMPTS + 1}"}, "tool", True),
    World("tool-faults-always", {"tool_faults": "always"}, "tool", True),
    World("person-deny:0.5", {"person_faults": "deny:0.5"}),
    World("person-wrong:0.3", {"person_faults": "wrong:0.3"}, "person"),
    World("person-adversarial", {"person_faults": "adversarial"}, "person"),
    World("model-fresh-ids", {"model": "fresh-ids"}),
    World("model-fickle", {"model": "fickle", "seed": 0}),
)
assert all(set(w.conditions) <= set(CONDITIONS) for w in WORLDS), "worlds change Config's conditions only"
EXCUSES = {"tool": "the tool did not recover within the loop's attempts: the loop gave up and said so",
           "person": "the person was wrong where no key or lookup could check the answer",
           "fsync": "the store did not sync: a power cut took its checkpoint (the chapter's advice is to sync)"}


def world(name: str) -> World:
    for w in WORLDS:
        if w.name == name:
            return w
    raise ValueError(f"unknown world model {name!r} (choose from {', '.join(w.name for w in WORLDS)})")


# --- variants of a job ----------------------------------------------------------------------------

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
    call = Call(_fresh("label_1", _call_ids(job)), tool.name,
                {"issue": {"$result": creates[0].id, "field": "number"}, "label": "audited"})
    return replace(job, tools={**job.tools, tool.name: tool}, turns=(*job.turns, (call,)))


# --- judging a scenario -----------------------------------------------------------------------------

def judge(r: ScenarioRecord, w: World) -> str:
    """OK, EXPECTED or BREAK for one scenario's record under world `w` (the module's rules)."""
    if not (r.duplicates or r.missing or r.wrong or r.denied_ran or r.status == "corrupt"):
        return OK
    if r.denied_ran:
        return BREAK
    if w.excuse == "tool" and r.gave_up and r.status == "failed" and not (r.duplicates or r.wrong):
        return EXPECTED
    if w.excuse == "person" and r.asks and r.status != "corrupt":
        return EXPECTED
    if w.excuse == "fsync" and not r.wrong:
        return EXPECTED
    return BREAK


def _promise(r: ScenarioRecord) -> int:
    """How long a scenario's timeline promises to be, from its record: each model reply, question,
    approval and extra effect is an event or more, and each crash two (the crash and the restart)."""
    return r.model_calls + r.asks + r.approvals + r.duplicates + (4 if r.second_point is not None else 2)


# --- the audit ------------------------------------------------------------------------------------

@dataclass(slots=True)
class Cell:
    """One (design, tracker mode) under one world model, over every variant."""

    scenarios: int = 0
    breaks: int = 0
    expected: int = 0
    skipped: str = ""  # why it was not swept ("" if it was)
    # the breaking scenarios most promising as a witness, as a max-heap: (-promise, -seen, config, record)
    candidates: list[tuple[int, int, int, ScenarioRecord]] = field(default_factory=list)

    @property
    def text(self) -> str:
        """The Markdown table's cell: "safe", the count of breaking scenarios, or "n/a"."""
        if self.skipped:
            return "n/a"
        if self.breaks:
            return str(self.breaks)
        return f"safe ({self.expected} expected)" if self.expected else "safe"


@dataclass(slots=True)
class Witness:
    world: str
    variant: str
    record: ScenarioRecord
    timeline: list[dict[str, Any]]
    link: str
    needed: int = 0  # the events that show the loss: through the last job run with a crash or a loss


@dataclass(slots=True)
class Subject:
    """One (design, tracker mode) audited: its cells by world, and its verdict."""

    design: Design
    tracker: str
    cells: dict[str, Cell] = field(default_factory=dict)
    broken: str = ""  # the first world that breaks it ("" while none does)
    witness: Witness | None = None

    @property
    def name(self) -> str:
        return config_name(self.design.name, self.tracker)


@dataclass(slots=True)
class AuditResult:
    job: Job
    depth: int
    worlds: list[World]
    variants: list[Variant]
    skipped: list[tuple[str, str]]
    subjects: list[Subject]
    scenarios: int = 0


def audit(job: Job, designs: Sequence[Design], trackers: Sequence[str], worlds: Sequence[World] = WORLDS,
          depth: int = DEFAULT_SWEEP_DEPTH, workers: int = 1, every: bool = False, site: str = SITE,
          progress: Callable[[str], Callable[[int, int], None]] | None = None) -> AuditResult:
    """Audit each design with each tracker mode on `job` and its variants under `worlds` (the
    module's rules). `every`: sweep every cell, also past a (design, tracker mode)'s first break.
    `progress(world)` gives a callback (chunks done, chunks) for that world's sweep."""
    if depth not in AUDIT_DEPTHS:
        raise ValueError(f"the audit's depth is {' or '.join(map(str, AUDIT_DEPTHS))}, not {depth}: its witnesses "
                         "replay and link two crash points at most")
    made, skipped = variants(job)
    result = AuditResult(job, depth, list(worlds), made, skipped, [Subject(d, t) for d in designs for t in trackers])
    for w in worlds:
        todo = []
        for s in result.subjects:
            if s.broken and not every:
                continue
            cell = s.cells[w.name] = Cell()
            if w.flaky_only and not s.design.flaky:
                cell.skipped = "the world acts only on a flaky tool server"
            else:
                todo.append(s)
        configs = [Config(v.job, s.design, s.tracker, runs=RUNS, **w.conditions) for s in todo for v in made]
        owners = [(s, v) for s in todo for v in made]
        result.scenarios += _sweep(w, configs, owners, depth, workers, progress(w.name) if progress else None)
        for s in todo:
            if s.cells[w.name].breaks and not s.broken:
                s.broken = w.name
                s.witness = _witness(w, configs, owners, s, site)
    return result


def tally(cell: Cell, r: ScenarioRecord, w: World, config: int, seen: int, keep: bool = True) -> str:
    """Count one scenario's record in its cell under world `w` and, if it breaks and `keep`, offer it
    as a witness candidate (`config` indexes the sweep's configurations, `seen` orders ties: the
    earlier swept wins); its judge outcome. The one counting of the CLI and the dashboard."""
    cell.scenarios += 1
    outcome = judge(r, w)
    if outcome == EXPECTED:
        cell.expected += 1
    elif outcome == BREAK:
        cell.breaks += 1
        if keep:
            heapq.heappush(cell.candidates, (-_promise(r), -seen, config, r))
            if len(cell.candidates) > CANDIDATES:  # drop the least promising, the later of a tie
                heapq.heappop(cell.candidates)
    return outcome


def unit_configs(made: Sequence[Variant], design: Design, tracker: str, w: World) -> list[Config]:
    """One (design, tracker mode)'s configurations under world `w`: one per variant, in `made`'s order."""
    return [Config(v.job, design, tracker, runs=RUNS, **w.conditions) for v in made]


def sweep_unit(made: Sequence[Variant], design: Design, tracker: str, w: World, depth: int = DEFAULT_SWEEP_DEPTH,
               workers: int = 1) -> Cell:
    """One cell of the audit: a (design, tracker mode) under one world over every variant, counted
    by `tally` (candidates' configs index `made`). The dashboard's unit of work; a flaky-only world
    of a design without a flaky tool server is skipped, as `audit` skips it."""
    cell = Cell()
    if w.flaky_only and not design.flaky:
        cell.skipped = "the world acts only on a flaky tool server"
        return cell
    owner = Subject(design, tracker, {w.name: cell})
    configs = unit_configs(made, design, tracker, w)
    _sweep(w, configs, [(owner, v) for v in made], depth, workers, None)
    return cell


def _sweep(w: World, configs: list[Config], owners: list[tuple[Subject, Variant]], depth: int, workers: int,
           progress: Callable[[int, int], None] | None) -> int:
    """Sweep `configs` under `w`, counting each owner's cell; returns the scenarios played."""
    if not configs:
        return 0
    chunks = plan_chunks(configs)
    played = 0
    for n, res in enumerate(run_chunks(configs, chunks, depth, workers), 1):
        subject = owners[res.config][0]
        cell = subject.cells[w.name]
        for r in res.records:
            played += 1
            tally(cell, r, w, res.config, played, keep=not subject.broken)
        if progress is not None:
            progress(n, len(chunks))
    return played


def _witness(w: World, configs: list[Config], owners: list[tuple[Subject, Variant]], s: Subject,
             site: str) -> Witness:
    return shortest(w, configs, [v.name for _, v in owners], s.cells[w.name].candidates, site)


def shortest(w: World, configs: Sequence[Config], variant_names: Sequence[str],
             candidates: Sequence[tuple[int, int, int, ScenarioRecord]], site: str,
             audit_id: int | None = None) -> Witness:
    """The witness: the shortest timeline among `candidates` (Cell.candidates' tuples; their config
    indexes `configs` and `variant_names`), of those as short, the first swept; each is replayed.
    Its link names the dashboard's audit `audit_id` in place of the job, if given."""
    best: tuple[tuple[int, int], int, ScenarioRecord, Played] | None = None
    for _, neg_seen, i, r in candidates:
        p = replay(configs[i], r.first_point, r.second_point)
        rank = (len(p.timeline or []), -neg_seen)
        if best is None or rank < best[0]:
            best = (rank, i, r, p)
    assert best is not None
    _, i, r, p = best
    cfg, variant, timeline = configs[i], variant_names[i], p.timeline or []
    return Witness(w.name, variant, r, timeline, link(site, cfg, variant, w, r.first_point, r.second_point, audit_id),
                   needed(timeline, _loss_runs(cfg, p)))


def _loss_runs(cfg: Config, p: Played) -> set[int]:
    """The job runs (0-based) where a played scenario doubled or lost an effect; every run when
    something else went wrong (a wrong effect, a denied call run, a stop), which the effects do
    not place."""
    if p.wrong or p.denied_ran or p.status != "done":
        return set(range(cfg.runs))
    seen: Counter[tuple[int, str]] = Counter((e["origin"][0], e["origin"][1]) for e in p.effects or [])
    expected = set(cfg.expected)
    return ({o[0] for o, n in seen.items() if n > 1 or o not in expected}
            | {o[0] for o in expected if not seen[o]})


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


def link(site: str, cfg: Config, variant: str, w: World, first: int, second: int | None,
         audit_id: int | None = None) -> str:
    """The dashboard's page of one scenario: the job (a built-in one by name, or the dashboard's
    audit `audit_id` whose stored job it is), its variant, the design, tracker mode, job runs, crash
    points and the world's conditions (fsync as on/off, as the CLI spells it)."""
    job: dict[str, Any] = ({"job": cfg.job.name.removesuffix(f"+{variant}")} if audit_id is None
                           else {"audit": audit_id})
    params: dict[str, Any] = {**job, "variant": variant, "design": cfg.design.name, "tracker": cfg.tracker,
                              "runs": cfg.runs, "first": first}
    if second is not None:
        params["second"] = second
    for c, v in w.conditions.items():
        params[c] = ("on" if v else "off") if c == "fsync" else v
    from urllib.parse import urlencode  # here: a few ms of every command's start-up otherwise

    return f"{site.rstrip('/')}/witness/?{urlencode(params)}"


# --- reports --------------------------------------------------------------------------------------

FORMATS = ("text", "markdown", "json")
_SHOWN = ("crash", "restart", "tracker", "ladder", "approval", "failed", "corrupt")  # the witness's lines
WITNESS_LINES = 12


def verdict(s: Subject) -> str:
    """One line: "safe" (with the expected losses, if any), or the first world that breaks it."""
    if s.broken:
        c = s.cells[s.broken]
        return f"{s.name}: broken by {s.broken} ({c.breaks} of {c.scenarios} scenarios)"
    excused = [f"{w} ({c.expected} scenarios)" for w, c in s.cells.items() if c.expected]
    return f"{s.name}: safe" + (f"; expected losses under {', '.join(excused)}" if excused else "")


def witness_lines(wit: Witness) -> list[str]:
    """The witness in a few lines: where it crashed, what it did to the tracker, its link."""
    r = wit.record
    where = f"crash at point {r.first_point} ({r.first_label})"
    if r.second_point is not None:
        where += f", then at point {r.second_point} of the restart ({r.second_label})"
    counts = ", ".join(f"{n} {what}" for n, what in ((r.duplicates, "dups"), (r.missing, "missing"),
                                                     (r.wrong, "wrong"), (r.denied_ran, "denied ran")) if n)
    status = "" if r.status == "done" else f", {r.status}"
    lines = [f"  witness ({wit.variant}): {where}: {counts}{status}; {len(wit.timeline)} events"]
    shown = [e for e in wit.timeline[:wit.needed] if e["kind"] in _SHOWN and not e["text"].startswith("answer ")]
    lines += [f"    {e['kind']}: {e['text']}" for e in shown[:WITNESS_LINES]]
    if len(shown) > WITNESS_LINES:
        lines.append(f"    ... {len(shown) - WITNESS_LINES} more")
    if wit.needed < len(wit.timeline):
        lines.append(f"    (then the later job runs, which lose nothing: {len(wit.timeline) - wit.needed} events)")
    lines.append(f"  {wit.link}")
    return lines


def render(result: AuditResult, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(to_dict(result), indent=2) + "\n"
    if fmt == "markdown":
        head = ["design", *(w.name for w in result.worlds)]
        lines = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
        lines += ["| " + " | ".join([s.name, *(s.cells[w.name].text if w.name in s.cells else "not swept"
                                               for w in result.worlds)]) + " |" for s in result.subjects]
        return "\n".join(lines) + "\n"
    if fmt != "text":
        raise ValueError(f"unknown format {fmt!r} (choose from {', '.join(FORMATS)})")
    lines = [f"audit of job {result.job.name}: depth {result.depth}, {RUNS} job runs in sequence",
             "variants: " + ", ".join(v.name for v in result.variants)
             + "".join(f"; {name} skipped: {why}" for name, why in result.skipped),
             "world models: " + ", ".join(w.name for w in result.worlds), KILL_NOTE + "."]
    excuses = sorted({w.excuse for w in result.worlds if w.excuse and any(
        s.cells.get(w.name, Cell()).expected for s in result.subjects)})
    lines += [f"expected losses ({', '.join(w.name for w in result.worlds if w.excuse == e)}): {EXCUSES[e]}"
              for e in excuses]
    for s in result.subjects:
        lines.append(verdict(s))
        if s.witness is not None:
            lines += witness_lines(s.witness)
    lines.append(f"{result.scenarios} scenarios; a broken design is not swept under the worlds after its first break")
    return "\n".join(lines) + "\n"


def to_dict(result: AuditResult) -> dict[str, Any]:
    def wit(w: Witness | None) -> dict[str, Any] | None:
        if w is None:
            return None
        return {"world": w.world, "variant": w.variant, "record": w.record.to_dict(), "timeline": w.timeline,
                "needed": w.needed, "link": w.link}

    return {
        "job": result.job.name, "depth": result.depth, "runs": RUNS, "kill": KILL_NOTE,
        "worlds": [{"name": w.name, "conditions": w.conditions, "excuse": EXCUSES.get(w.excuse, "")}
                   for w in result.worlds],
        "variants": [v.name for v in result.variants], "skipped_variants": [list(s) for s in result.skipped],
        "scenarios": result.scenarios,
        "verdicts": [{"name": s.name, "design": s.design.name, "tracker": s.tracker,
                      "verdict": "broken" if s.broken else "safe", "world": s.broken or None,
                      "cells": {w: {"scenarios": c.scenarios, "breaks": c.breaks, "expected": c.expected,
                                    "skipped": c.skipped} for w, c in s.cells.items()},
                      "witness": wit(s.witness)} for s in result.subjects],
    }
