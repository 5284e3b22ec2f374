"""Sweeping a target through the port: plans from labels, outcomes from fork servers, records
counted as for agentcore's own designs.

Rules:
- The fork server runs in the target's interpreter (`python`, default this one): `python -m
  agentcore.port serve ...` (agentcore.port.server). This module starts `workers` of them, sends
  each plan to the next free one and reads the outcomes; it imports nothing of the target.
- Two uninterrupted runs first: they must meet the same set of labels (else TargetError, with the
  difference), and the first is the truth the effects are checked against (`wrong`).
- Depth 1 crashes the first process at every label of the uninterrupted run; depth d crashes the
  last restart of each depth d-1 plan at every label that restart met (agentcore.port.labels.plans).
- A record is a ScenarioRecord: the design column is the target's name, the tracker column the
  tracker stand-in's mode (keyed: it honours a key the target sends); duplicates and missing are
  counted against the job script, model calls against the job's replies, as for any sweep.
- `samples` > 1 (a runtime that is not deterministic): the whole sweep above runs that many passes,
  pass i on the same servers with its worlds seeded seed + i (each request names its seed: the
  target is imported once per sweep, not once per pass), its own uninterrupted runs and restarts, and the
  records of all passes are kept; agentcore.port.sampled turns them into rates with intervals.
  Left unsaid (None), a target is not deterministic, and gets AUTO_SAMPLES passes (its counts are
  never shown as exact), when its two uninterrupted runs met their points in different orders or
  from more than one thread: threads (ToolNode's tools, a saver's background writes) order points as
  the scheduler does, and two runs that happened to agree prove nothing (measured: a LangGraph
  ToolNode graph met its points in its usual order in 25 to 28 of 30 runs).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from queue import Queue
from typing import Any

from agentcore.checker.effects import Truth
from agentcore.errors import BadInput
from agentcore.jobs import Job
from agentcore.port.labels import kind_of, label_set_difference, plans
from agentcore.records import ScenarioRecord
from agentcore.standins.tracker import Tracker

TRACKER = "keyed"
AUTO_SAMPLES = 5


# The agent runtimes a row names with their versions (distribution names' beginnings); the rest of
# what a target imports (pydantic, orjson...) stays in the hello.
RUNTIMES = ("langgraph", "langchain", "dbos", "pydantic-ai", "pydantic_ai", "crewai", "openai-agents", "google-adk")


def runtime_of(versions: dict[str, str]) -> str:
    """The runtime a target's rows were measured on, as a row's note says it."""
    named = [f"{d} {v}" for d, v in versions.items() if d.lower().startswith(RUNTIMES)]
    return ", ".join(named) or "plain Python (no agent runtime imported)"


class TargetError(BadInput):
    """A target that cannot be swept (it cannot be imported, fails uncrashed, or is not deterministic
    in its points); the message says which and how."""


class Served:
    """One fork server process, talked to one request at a time."""

    def __init__(self, argv: list[str]) -> None:
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1
        )
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        if not line:
            err = self.proc.stderr.read() if self.proc.stderr else ""
            self.proc.wait()
            last = err.strip().splitlines()[-1] if err.strip() else "the fork server did not start"
            raise TargetError(last.removeprefix("error: "))
        self.hello: dict[str, Any] = json.loads(line)

    def play(self, plan: Sequence[str], seed: int | None = None) -> dict[str, Any]:
        assert self.proc.stdin and self.proc.stdout
        request: dict[str, Any] = {"plan": list(plan)}
        if seed is not None:
            request["seed"] = seed
        self.proc.stdin.write(json.dumps(request) + "\n")
        line = self.proc.stdout.readline()
        if not line:
            raise TargetError(f"the fork server died playing {list(plan)}")
        return json.loads(line)

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


def server_argv(
    target: str,
    job: str,
    *,
    python: str | None = None,
    model: str = "fresh-ids",
    seed: int = 0,
    timeout: float = 30.0,
    tracker_fault: str = "none",
    person_faults: str = "truthful",
) -> list[str]:
    return [
        python or sys.executable,
        "-m",
        "agentcore.port",
        "serve",
        "--target",
        target,
        "--job",
        job,
        "--model",
        model,
        "--seed",
        str(seed),
        "--timeout",
        str(timeout),
        "--tracker-fault",
        tracker_fault,
        "--person-faults",
        person_faults,
    ]


@dataclass
class TargetSweep:
    target: str
    job: Job
    model: str
    depth: int
    hello: dict[str, Any]
    labels: list[str]  # the uninterrupted run's, in order
    records: list[ScenarioRecord] = field(default_factory=list)
    samples: int = 1  # passes played; above 1 the records are a sample, not an exact count
    ordered: bool = True  # deterministic: the two uninterrupted runs met their points in one order, from one thread


def play_all(
    servers: list[Served],
    todo: list[tuple[str, ...]],
    progress: Callable[[int, int], None] | None = None,
    seed: int | None = None,
) -> dict[tuple[str, ...], dict[str, Any]]:
    """Each plan's outcome, the plans spread over the servers (a thread per server)."""
    queue: Queue[tuple[str, ...] | None] = Queue()
    for plan in todo:
        queue.put(plan)
    out: dict[tuple[str, ...], dict[str, Any]] = {}
    errors: list[BaseException] = []
    lock = threading.Lock()

    def work(server: Served) -> None:
        while (plan := queue.get()) is not None and not errors:
            try:
                outcome = server.play(plan, seed)
            except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
                errors.append(e)
                return
            with lock:
                out[plan] = outcome
                if progress:
                    progress(len(out), len(todo))

    threads = [threading.Thread(target=work, args=(s,), daemon=True) for s in servers]
    for _ in threads:
        queue.put(None)
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return out


def record(target: str, job: Job, truth: Truth, outcome: dict[str, Any], points: list[list[str]]) -> ScenarioRecord:
    """The scenario record of one outcome; `points` are the labels each crashed process met, in order
    (a point's number is its label's place there, 1-based)."""
    plan = outcome["plan"]
    tracker = Tracker.restore(outcome["tracker"])
    dups, missing = tracker.tally([(0, c.id) for c in job.changing_calls()])
    where: list[Any] = []
    for i in range(3):
        if i < len(plan):
            where += [points[i].index(plan[i]) + 1, kind_of(plan[i]), plan[i]]
        else:
            where += [None, None, None]
    calls = outcome["model_calls"]
    status = outcome["status"] if outcome["status"] != "done" else "done"
    return ScenarioRecord(
        job.name,
        target,
        TRACKER,
        1,
        *where[:6],
        dups,
        missing,
        truth.wrong(tracker.effects),
        0,
        0,
        outcome.get("asks", 0),
        0,
        0,
        calls,
        calls - (len(job.turns) + 1),
        status,
        None,
        tracker.effects,
        *where[6:],
    )


def sweep_target(
    target: str,
    job: Job,
    job_path: str,
    *,
    depth: int = 1,
    workers: int = 1,
    python: str | None = None,
    model: str = "fresh-ids",
    seed: int = 0,
    timeout: float = 30.0,
    samples: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    tracker_fault: str = "none",
    person_faults: str = "truthful",
) -> TargetSweep:
    """Sweep `target` on `job` (read from `job_path` by the server too) to `depth`; see the rules."""
    if depth not in (1, 2, 3):
        raise BadInput(f"depth must be 1, 2 or 3, not {depth}")
    if samples is not None and samples < 1:
        raise BadInput(f"samples must be 1 or more, not {samples}")

    argv = server_argv(
        target,
        job_path,
        python=python,
        model=model,
        seed=seed,
        timeout=timeout,
        tracker_fault=tracker_fault,
        person_faults=person_faults,
    )
    servers: list[Served] = []
    try:
        servers += [Served(argv) for _ in range(max(1, workers))]
        result = _pass(target, job, depth, servers, model, progress, seed)
        passes = samples if samples is not None else 1 if result.ordered else AUTO_SAMPLES
        for i in range(1, passes):
            more = _pass(target, job, depth, servers, model, progress, seed + i)
            result.records += more.records
            result.ordered = result.ordered and more.ordered
    finally:
        for s in servers:
            s.close()
    result.samples = passes
    return result


@dataclass(frozen=True)
class Uninterrupted:
    """What a server's two uninterrupted runs of a target gave: the first run's labels in order (the
    points a plan names), whether both met them from one thread and the second in the same order (a
    deterministic target), and the truth its effects are checked against."""

    labels: list[str]
    ordered: bool
    truth: Truth


def uninterrupted(server: Served, target: str, job: Job, seed: int | None = None) -> Uninterrupted:
    """Play the target twice uncrashed on `server` (its worlds seeded with `seed`, else the server's);
    TargetError if a run does not finish or the two meet different sets of points (see the rules)."""
    first, again = server.play((), seed), server.play((), seed)
    for o in (first, again):
        if o["status"] != "done":
            raise TargetError(f"target {target}: its uninterrupted run ended {o['status']}: {o['error']}")
    if diff := label_set_difference(first["labels"][0], again["labels"][0]):
        raise TargetError(
            f"target {target}: two uninterrupted runs met different points ({diff}); "
            "name points by a stable detail, not by position"
        )
    labels = first["labels"][0]
    alone = first["threads"] == again["threads"] == 1
    return Uninterrupted(
        labels, alone and labels == again["labels"][0], Truth.of(job, Tracker.restore(first["tracker"]).effects)
    )


def play_from(
    server: Served, target: str, job: Job, runs: Uninterrupted, first: str, depth: int
) -> list[tuple[ScenarioRecord, dict[str, Any]]]:
    """Every scenario whose first process crashes at the label `first`, to `depth`, played in turn on
    one server (a dashboard chunk): each with its outcome, in the CLI's order (the once scenario,
    then each twice one followed by its thrice ones)."""
    out: list[tuple[ScenarioRecord, dict[str, Any]]] = []
    met: dict[tuple[str, ...], list[str]] = {}  # a plan -> the labels its last process met

    def play(plan: tuple[str, ...]) -> None:
        o = server.play(plan)
        points = [runs.labels] + [met[plan[:i]] for i in range(1, len(plan))]
        out.append((record(target, job, runs.truth, o, points), o))
        if len(plan) < depth and not o["missed"]:
            met[plan] = o["labels"][-1]
            for label in met[plan]:
                play(plan + (label,))

    play((first,))
    return out


# How a target's points show in a scenario's timeline: the event kinds agentcore's own loop logs (a
# saver's write is a save, in the checkpoint lane; a reply the model's; an effect the tracker's).
TIMELINE_KINDS = {"put": "save", "put_writes": "save", "reply": "model", "effect": "tracker"}


def timeline(outcome: dict[str, Any]) -> list[dict[str, str]]:
    """A scenario's timeline from its outcome: each process's points in order, the crash at the last
    point of each crashed process, a restart before each later process."""
    events: list[dict[str, str]] = []
    plan, processes = outcome["plan"], outcome["labels"]
    for i, labels in enumerate(processes):
        events.append({"kind": "restart" if i else "start", "text": f"process {i + 1}"})
        for label in labels:
            events.append({"kind": TIMELINE_KINDS.get(kind_of(label), "other"), "text": label})
        if i < len(processes) - 1:  # a later process: this one died at its plan's label
            events.append({"kind": "crash", "text": plan[i]})
    if outcome["status"] != "done":
        events.append({"kind": "failed", "text": f"{outcome['status']}: {outcome['error']}"})
    return events


def _pass(
    target: str,
    job: Job,
    depth: int,
    servers: list[Served],
    model: str,
    progress: Callable[[int, int], None] | None,
    seed: int,
) -> TargetSweep:
    """One pass of the sweep on `servers`, its worlds seeded with `seed`."""
    runs = uninterrupted(servers[0], target, job, seed)
    labels = runs.labels
    result = TargetSweep(target, job, model, depth, servers[0].hello, labels)
    result.ordered = runs.ordered
    outcomes: dict[tuple[str, ...], dict[str, Any]] = {}
    for d in range(1, depth + 1):
        restarts = {p: o["labels"][-1] for p, o in outcomes.items() if not o["missed"]}
        todo = [p for p in plans(labels, restarts, d) if len(p) == d]
        outcomes |= play_all(servers, todo, progress, seed)
    for plan, o in outcomes.items():
        met = [labels] + [outcomes[plan[:i]]["labels"][-1] for i in range(1, len(plan))]
        result.records.append(record(target, job, runs.truth, o, met))
    return result
