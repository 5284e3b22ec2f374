"""The agents an operator registered to be swept from the dashboard (agentcore.port's targets), and the
work of a target's sweep: planned at its launch, played chunk by chunk in the workers.

Rules:
- A target is launched by its registered name only (settings.SWEEPSITE_TARGETS): a module path never
  comes from a form or a stored sweep, which would run code a request chose. A registration is
  `name=package.module:attribute`, optionally `@/path/to/python` (the interpreter of the target's own
  virtualenv, where its runtime is installed), `;`-separated; or a JSON object {name: {"target",
  "python", "samples"}}. Unset: the examples (the plain loop, and the LangGraph triage agent where its
  extra is installed).
- A target's sweep has the panic crash model and the chapter's world but for the model and its seed
  (its crash is the port's: the process dies at a point; its store is its own), the scripted
  person and one job run: other settings are refused, never ignored. Its model is "fresh-ids"
  unless the launch chose another (a real provider mints new call IDs on every ask).
- Its configurations: one per target and pass, design "target:<name>", tracker "keyed" (the stand-in
  honours a key the target sends), "runtime" what the planning's fork server said it ran on. A target
  whose two uninterrupted runs met their points in different orders or from more than one thread
  (agentcore.port.sweep's rules) is not deterministic: it gets
  agentcore.port.sweep.AUTO_SAMPLES passes (or its registration's `samples`), pass i on seed + i,
  each a configuration named "<name> [sampled, k=K]" (k=1 too, where the registration fixed one
  pass: a sample of one, never an exact count); the table merges them into one row.
- Its chunks: one per label of the planning's uninterrupted run (first_point its place there). A
  worker plays a chunk's scenarios (agentcore.port.sweep.play_from) on a fork server it keeps per
  (target, job, model, seed), started with the target's interpreter: the target is imported once per
  worker process, not per chunk. Each scenario is stored with its timeline (a target's scenario is
  not replayed on demand: it would run the target again).
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from importlib.util import find_spec
from typing import Any

from django.conf import settings
from django.core import checks

import agentcore as agentsweep
from agentcore import Job
from agentcore.port.labels import kind_of
from agentcore.port.sweep import (
    AUTO_SAMPLES,
    Served,
    TargetError,
    Uninterrupted,
    play_from,
    runtime_of,
    server_argv,
    timeline,
    uninterrupted,
)
from agentcore.records import ScenarioRecord
from sweeps.errors import BadRequest

DESIGN = "target:"
TRACKER = "keyed"
DEFAULT_MODEL = "fresh-ids"
# The conditions a target's sweep takes; the others must stay at their defaults (see the rules).
TAKES = ("model", "seed")
EXAMPLES = {
    "plain-naive": "examples.plain_loop:naive",
    "plain-keyed-late": "examples.plain_loop:keyed_late",
    "plain-keyed": "examples.plain_loop:keyed",
    "plain-asking": "examples.plain_loop:asking",
}
LANGGRAPH_EXAMPLES = {
    f"langgraph-{name.replace('_', '-')}": f"examples.langgraph_triage:{name}"
    for name in (
        "naive_sync",
        "keyed_sync",
        "naive_exit",
        "keyed_exit",
        "naive_async",
        "keyed_async",
        "naive_functional",
        "keyed_functional",
    )
}


@dataclass(frozen=True)
class Registered:
    name: str
    target: str  # package.module:attribute
    python: str  # the interpreter its fork server runs in
    samples: int | None = None  # passes; None: decided by its two uninterrupted runs


def parse_registry(text: str | None) -> dict[str, Registered]:
    """The registrations `text` writes (see the rules); None: the examples. Raises ValueError saying
    which registration is malformed (settings are the operator's: a bad one stops the server)."""
    if text is None:
        names = dict(EXAMPLES)
        if find_spec("langgraph") is not None:
            names |= LANGGRAPH_EXAMPLES
        return {n: Registered(n, t, sys.executable) for n, t in names.items()}
    text = text.strip()
    out: dict[str, Registered] = {}
    if text.startswith("{"):
        for name, entry in json.loads(text).items():
            if not isinstance(entry, dict) or not isinstance(entry.get("target"), str):
                raise ValueError(f'SWEEPSITE_TARGETS: {name}: needs a "target": "package.module:attribute"')
            samples = entry.get("samples")
            if samples is not None and not (isinstance(samples, int) and samples >= 1):
                raise ValueError(f"SWEEPSITE_TARGETS: {name}: samples must be a whole number from 1")
            out[name] = Registered(name, entry["target"], entry.get("python") or sys.executable, samples)
        return out
    for part in filter(None, (p.strip() for p in text.replace("\n", ";").split(";"))):
        name, sep, rest = part.partition("=")
        target, _, python = rest.strip().partition("@")
        if not (sep and name.strip() and ":" in target):
            raise ValueError(f"SWEEPSITE_TARGETS: {part!r} is not name=package.module:attribute[@python]")
        out[name.strip()] = Registered(name.strip(), target.strip(), python.strip() or sys.executable)
    return out


def registered() -> dict[str, Registered]:
    """The registered targets, by name."""
    return parse_registry(getattr(settings, "SWEEPSITE_TARGETS", None))


def check_registry(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """Django's system check of the registrations: an error saying which one is malformed."""
    try:
        registered()
    except ValueError as e:
        return [checks.Error(str(e), hint="see docs/port.md, From the dashboard", id="sweeps.E001")]
    return []


def registration(name: str) -> Registered:
    """A registered target by name; BadRequest naming the registered ones otherwise."""
    found = registered().get(name)
    if found is None:
        known = ", ".join(registered()) or "none: set SWEEPSITE_TARGETS"
        raise BadRequest(f"no target is registered as {name!r} (registered: {known})")
    return found


def is_target(config: dict[str, Any]) -> bool:
    return str(config.get("design", "")).startswith(DESIGN)


def design_column(config: dict[str, Any]) -> str:
    """What a configuration's scenario rows hold in their design column (a target's: its name)."""
    return str(config["design"]).removeprefix(DESIGN)


def _job_file(job_source: str) -> str:
    """A file holding the job's text (the fork server reads its job from a file), one per job."""
    digest = hashlib.sha256(job_source.encode()).hexdigest()[:16]
    folder = os.path.join(tempfile.gettempdir(), "sweepsite-target-jobs")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{digest}.json")
    if not os.path.exists(path):
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(job_source)
        os.replace(tmp, path)
    return path


def _serve(reg: Registered, job_source: str, model: str, seed: int) -> Served:
    argv = server_argv(
        reg.target,
        _job_file(job_source),
        python=reg.python,
        model=model,
        seed=seed,
        timeout=settings.SWEEPSITE_TARGET_TIMEOUT,
    )
    try:
        return Served(argv)
    except OSError as e:  # its interpreter cannot be started
        raise TargetError(f"target {reg.name}: cannot start {reg.python} ({e})") from None


@dataclass(frozen=True)
class Planned:
    """A registered target's planning: its labels (in its uninterrupted run's order), passes, runtime."""

    reg: Registered
    labels: tuple[str, ...]
    samples: int
    runtime: str
    ordered: bool = True  # deterministic (agentcore.port.sweep.Uninterrupted)


_plans: dict[tuple[Any, ...], Planned] = {}
_plans_lock = threading.Lock()


def plan_target(reg: Registered, job: Job, job_source: str, model: str, seed: int) -> Planned:
    """Start the target's fork server, play its two uninterrupted runs, close it (cached per
    process: the launch form asks for the planned size on every change). TargetError (a
    BadInput) for a target that cannot be swept."""
    key = (reg, job_source, model, seed)
    with _plans_lock:
        if key in _plans:
            return _plans[key]
    server = _serve(reg, job_source, model, seed)
    try:
        runs = uninterrupted(server, reg.name, job)
    finally:
        server.close()
    samples = reg.samples or (1 if runs.ordered else AUTO_SAMPLES)
    hello = server.hello
    runtime = f"{runtime_of(hello.get('versions', {}))}; Python {hello.get('python')}; network {hello.get('network')}"
    planned = Planned(reg, tuple(runs.labels), samples, runtime, runs.ordered)
    with _plans_lock:
        _plans[key] = planned
    return planned


def row_name(p: Planned) -> str:
    return p.reg.name if p.samples == 1 and p.ordered else f"{p.reg.name} [sampled, k={p.samples}]"


def plan_targets(
    names: list[str], job: Job, job_source: str, model: str, seed: int
) -> tuple[list[dict[str, str]], list[agentsweep.Chunk], list[Planned]]:
    """The configurations and chunks of a sweep of these registered targets (see the rules), their
    fork servers started side by side. BadRequest for an unknown name or a target that cannot be swept."""
    regs = [registration(n) for n in dict.fromkeys(names)]
    try:
        with ThreadPoolExecutor(max_workers=len(regs)) as pool:
            planned = list(pool.map(lambda r: plan_target(r, job, job_source, model, seed), regs))
    except TargetError as e:
        raise BadRequest(str(e)) from None
    configs: list[dict[str, str]] = []
    chunks: list[agentsweep.Chunk] = []
    for p in planned:
        for _ in range(p.samples):
            for n, label in enumerate(p.labels, 1):
                chunks.append(agentsweep.Chunk(len(configs), n, kind_of(label), label))
            configs.append(
                {"name": row_name(p), "design": DESIGN + p.reg.name, "tracker": TRACKER, "runtime": p.runtime}
            )
    return configs, chunks, planned


def check_settings(depth: int, runs: int, person: str, conditions: dict[str, Any]) -> None:
    """BadRequest for a setting a target's sweep does not take (see the rules)."""
    from agentcore import CONDITIONS

    given = [c.title for c in CONDITIONS if c.name not in TAKES and conditions.get(c.name, c.default) != c.default]
    if runs != 1:
        given.insert(0, "job runs")
    if person != "scripted":
        given.insert(0, "the question queue")
    if given:
        raise BadRequest(
            f"a target's sweep takes none of: {', '.join(given)} (it has the panic crash model, the chapter's "
            "world, the scripted person and one job run; choose the model and its seed)"
        )
    if depth not in (1, 2, 3):
        raise BadRequest(f"depth must be 1, 2 or 3, not {depth}")


# --- in a worker ----------------------------------------------------------------------------------

_servers: dict[tuple[Any, ...], tuple[Served, Uninterrupted]] = {}


def _server(reg: Registered, job: Job, job_source: str, model: str, seed: int) -> tuple[Served, Uninterrupted]:
    """This process's fork server for the target (started and its uninterrupted runs played once)."""
    key = (reg, job_source, model, seed)
    if key not in _servers:
        server = _serve(reg, job_source, model, seed)
        try:
            _servers[key] = server, uninterrupted(server, reg.name, job)
        except BaseException:
            server.close()
            raise
    return _servers[key]


@atexit.register
def close_servers() -> None:
    """End this process's fork servers (their stdin closes: each exits)."""
    while _servers:
        server, _ = _servers.popitem()[1]
        try:
            server.close()
        except Exception:  # noqa: BLE001, S110 - one already gone: nothing to end
            pass


def play_chunk(
    configs: list[dict[str, Any]],
    index: int,
    first: int,
    label: str,
    job: Job,
    job_source: str,
    depth: int,
    **world: Any,
) -> agentsweep.ChunkResult:
    """The scenarios of a target's chunk (its configuration `index`, first point `first` at `label`)
    as a chunk result, each record with its timeline and effects. `world`: the sweep's model and seed.
    TargetError for a target no longer registered, or one that fails or changes its points."""
    cfg = configs[index]
    name = cfg["design"].removeprefix(DESIGN)
    reg = registered().get(name)
    if reg is None:
        raise TargetError(f"target {name} is no longer registered here (settings.SWEEPSITE_TARGETS)")
    passes = [i for i, c in enumerate(configs) if c["design"] == cfg["design"]]
    seed = int(world["seed"]) + passes.index(index)
    server, runs = _server(reg, job, job_source, world["model"], seed)
    if label not in runs.labels:
        raise TargetError(f"target {name}: its uninterrupted run here never meets {label!r}, which the launch's did")
    try:
        played = play_from(server, name, job, runs, label, depth)
    except TargetError:
        _servers.pop((reg, job_source, world["model"], seed), None)  # it died: the next chunk starts another
        raise
    records: list[ScenarioRecord] = []
    saves = 0
    for rec, outcome in played:
        # The first point is numbered as the launch's run numbered it (this server's run may order
        # its points otherwise: its numbers are a sample's places, its labels the same).
        records.append(replace(rec, first_point=first, timeline=timeline(outcome)))
        saves += sum(kind_of(lb) in ("put", "put_writes") for labels in outcome["labels"] for lb in labels)
    return agentsweep.ChunkResult(index, first, records, saves, timelines=True)
