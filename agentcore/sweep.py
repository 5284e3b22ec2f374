"""The crash sweep: crash a configuration at every point it can be crashed, and restart.

Rules:
- A configuration is a job, a design, a tracker mode, and how many job runs go in sequence against
  one tracker (a daily job: a fresh run ID each run).
- A scenario plays processes one after another. Each process gets a crash plan (crash at its Nth
  point, or never); on a crash everything the process held is dropped and the next process starts
  from the checkpoint files and the surviving world (tracker, tool server, model, person). Job runs
  already finished are not run again (the scheduler knows them).
- The uninterrupted run lists the first points. For each first point p: the once scenario crashes
  at p and runs the restart to the end, listing the restart's points; at depth 2, for each of those
  points q, a twice scenario crashes at p, then at q of the restart, then runs to the end.
- No replays: a crash keeps only the durable state (checkpoint files, world), so the once
  scenario's restart notes that state at each of its points (the files' bytes are mirrored by the
  store, the world is a few small lists); the twice scenario for q starts its last process from the
  note for q. A test checks this against crashing a full replay at (p, q), scenario by scenario.
- Scenarios are independent, so the work splits into chunks, one per first point (the once
  scenario and its twice scenarios), which worker processes run in parallel; results are put back
  in order, so a sweep gives the same records with any number of workers, every time.
- Checkpoint files live in memory (checkpoint.MemoryFiles: a crash here is a killed process, and
  what it wrote outlives it, as the page cache would), or with `disk="files"` in real files in a
  RAM-backed temp dir when there is one, without fsync. Both give the same records.
- A question for a queue person pauses a scenario; the answer continues it as if it had come at
  once, so that a queue sweep answered truthfully gives the scripted sweep's records, every one.
  A paused process cannot wait in a worker, so what is returned is the durable state the paused
  process started from (checkpoint files, world, its crash plan) with the answers given so far; the
  resume plays that process again from there (deterministic: the same state and answers give the
  same steps) up to the question and on with its answer. The points the once scenario's restart
  reaches after an answer are crashed too: the resume says which (`Resumed.chunk`), and a chunk of
  those twice scenarios plays the once scenario again with its answers to note their states.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, fields
from typing import Any

from agentcore import designs
from agentcore.checkpoint import FileCheckpoint, Files, MemoryFiles, OsFiles
from agentcore.crash import Crash, CrashPlan
from agentcore.designs import Design
from agentcore.jobs import Job
from agentcore.loop import Loop, ToolGaveUp
from agentcore.records import ScenarioRecord, TableRow, table_row
from agentcore.world import QueuePerson, ScriptedModel, ScriptedPerson, Suspended, ToolServer, Tracker

PERSONS = ("scripted", "queue")
DISKS = ("memory", "files")

TABLE: tuple[tuple[str, str, str], ...] = (
    ("save once per turn", "once-per-turn", "keyed"),
    ("save after the reply", "after-reply", "keyed"),
    ("+ idempotency keys", "keys", "keyed"),
    ("+ attempt markers, no keys", "markers", "keyed"),
    ("keys and markers", "keys-and-markers", "keyed"),
    ("real loop, keyed tracker", "loop", "keyed"),
    ("real loop, keyless tracker", "loop", "keyless"),
    ("tool fails after accept, keyed tracker", "tool-fails", "keyed"),
    ("tool fails after accept, keyless tracker", "tool-fails", "keyless"),
    ("approval gate, keyed tracker", "approval-gate", "keyed"),
    ("approval gate, keyless tracker", "approval-gate", "keyless"),
)
_TABLE_NAMES = {(d, t): name for name, d, t in TABLE}


def config_name(design: str, tracker: str) -> str:
    """A design with a tracker mode, named as the table names it ("real loop, keyless tracker"), or
    "DESIGN, MODE tracker" for a pair the table has not (a design with planted bugs, a lookup tracker)."""
    return _TABLE_NAMES.get((design, tracker), f"{design}, {tracker} tracker")


@dataclass(frozen=True, slots=True)
class Config:
    job: Job
    design: Design
    tracker: str
    runs: int = 1
    person: str = "scripted"
    name: str = ""

    @property
    def expected(self) -> list[tuple[int, str]]:
        """The effects the job should make: each changing call of each job run, once."""
        return [(r, c.id) for r in range(self.runs) for c in self.job.changing_calls()]

    def __post_init__(self) -> None:
        Tracker(self.tracker)  # validates the mode
        if not 1 <= self.runs <= 100:
            raise ValueError(f"runs must be between 1 and 100, not {self.runs}")
        if self.person not in PERSONS:
            raise ValueError(f"unknown person {self.person!r} (choose from {', '.join(PERSONS)})")

    @property
    def label(self) -> str:
        return self.name or config_name(self.design.name, self.tracker)


def table_configs(job: Job) -> list[Config]:
    return [Config(job, designs.get(d), t, name=name) for name, d, t in TABLE]


@dataclass(slots=True)
class Played:
    """What one scenario did: the points of each process (when recorded) and the tallies."""

    processes: list[CrashPlan]
    crashes: list[Crash]
    duplicates: int
    missing: int
    asks: int
    approvals: int
    model_calls: int
    saves: int
    status: str
    timeline: list[dict[str, Any]] | None = None
    effects: list[dict[str, Any]] | None = None
    durable: dict[str, Any] | None = None  # set when a question suspended the scenario
    question: dict[str, Any] | None = None
    restarts: list[dict[str, Any]] | None = None  # the durable state at each point of process 2
    answers: dict[str, bool] | None = None  # a queue person's answers to the asks made


def _files(files: Files, paths: list[str]) -> dict[str, str]:
    out = {}
    for p in paths:
        for f in (p, p + ".tmp"):
            raw = files.read(f)
            if raw is not None:
                out[os.path.basename(f)] = raw.decode()
    return out


def play(cfg: Config, plan: tuple[int, ...], workdir: str | None = None, record: bool = False,
         collect: bool = False, resume: dict[str, Any] | None = None, answers: dict[str, bool] | None = None,
         capture: bool = False) -> Played:
    """Play one scenario: crash process i at its plan[i]th point, restart, until a process finishes.

    The checkpoint files are in memory, or in `workdir` when one is given. `resume` continues from
    a durable state (a paused scenario's, or a noted restart state) with more `answers`; with
    `capture`, the scenario's second process notes the durable state at each of its points in
    `Played.restarts`, from which the twice scenarios start their last process.
    """
    disk: Files = MemoryFiles() if workdir is None else OsFiles(fsync=False)
    paths = [os.path.join(workdir or "", f"run-{i + 1}.json") for i in range(cfg.runs)]
    files = resume["files"] if resume is not None else {}
    for p in paths:  # the files a crash would have left, and no others
        name = os.path.basename(p)
        for f, text in ((p, files.get(name)), (p + ".tmp", files.get(name + ".tmp"))):
            if text is not None:
                disk.write(f, text.encode())
            else:
                disk.remove(f)
    log: list[tuple[str, str]] | None = [] if collect else None
    timeline: list[dict[str, Any]] = []
    if resume is None:
        tracker = Tracker(cfg.tracker)
        server = ToolServer(tracker, cfg.job, cfg.design.flaky)
        model = ScriptedModel(cfg.job)
        person: ScriptedPerson | QueuePerson = (ScriptedPerson(tracker) if cfg.person == "scripted"
                                                else QueuePerson(tracker, answers, log))
        seq, base, plan_rest = 0, 0, list(plan)
    else:
        tracker = Tracker.restore(resume["tracker"])
        server = ToolServer(tracker, cfg.job, cfg.design.flaky)
        server.attempts.update({(int(s), c): n for s, c, n in resume["attempts"]})
        model = ScriptedModel(cfg.job)
        model.calls = resume["model_calls"]
        if cfg.person == "scripted":
            person = ScriptedPerson(tracker)
        else:
            person = QueuePerson(tracker, {**resume["answers"], **(answers or {})}, log)
        person.asks, person.prompts = resume["asks"], resume["prompts"]
        person.decisions = dict(resume["decisions"])
        seq, base, plan_rest = resume["seq"], resume.get("process", 0), list(plan)
        if collect:
            timeline = list(resume["timeline"])
            if resume.get("crash"):
                timeline += [{"kind": "crash", "text": resume["crash"]},
                             {"kind": "restart", "text": "a new process starts from the checkpoint"}]

    def durable(process: int, rest: list[int], files: dict[str, str] | None = None) -> dict[str, Any]:
        """The durable state now, for process number `process` (0: the scenario's first) to start
        from with crash plan `rest`."""
        return {
            "tracker": tracker.snapshot(), "attempts": [[s, c, n] for (s, c), n in server.attempts.items()],
            "model_calls": model.calls, "answers": person.given(), "asks": person.asks,
            "prompts": person.prompts, "decisions": dict(person.decisions),
            "files": _files(disk, paths) if files is None else files,
            "seq": seq, "process": process, "plan": rest,
            "timeline": timeline + [{"kind": k, "text": t} for k, t in log] if log is not None else [],
        }

    # checkpoint files of job runs that are over (they change no more)
    finished = {n: files[n] for n in (os.path.basename(p) for p in paths[:seq]) if n in files}
    store: FileCheckpoint | None = None
    restarts: list[dict[str, Any]] | None = None

    def note() -> None:
        """The durable state at this point of process 2, as a crash here would leave it."""
        assert restarts is not None and store is not None
        files = dict(finished)
        name = os.path.basename(store.path)
        if store.disk is not None:
            files[name] = store.disk.decode()
        if store.pending is not None:
            files[name + ".tmp"] = store.pending.decode()
        state = durable(base + len(processes), [], files)
        text = restart_hook.points[-1][1] if restart_hook.points else ""
        state["crash"] = f"crash at point {restart_hook.count} of this process: {text}"
        restarts.append(state)

    processes: list[CrashPlan] = []
    crashes: list[Crash] = []
    saves = 0
    status = "done"
    suspended: Suspended | None = None
    pausable = isinstance(person, QueuePerson)
    start: dict[str, Any] | None = None  # what the current process started from (a pause resumes there)
    hook = restart_hook = CrashPlan()
    while True:
        crash_at = plan_rest.pop(0) if plan_rest else None
        hook = CrashPlan(crash_at, record)
        if capture and base + len(processes) == 1:
            restarts, restart_hook = [], hook
            hook.on_point = note
        if pausable:
            start = durable(base + len(processes), ([crash_at] if crash_at is not None else []) + plan_rest)
        processes.append(hook)
        try:
            while seq < cfg.runs:
                store = FileCheckpoint(paths[seq], hook=hook, files=disk)
                run_id = "run-1" if cfg.design.reuse_run_id else f"run-{seq + 1}"
                try:
                    Loop(cfg.design, cfg.job, store, server, model, person, hook, run_id, seq, log).run()
                finally:
                    saves += store.saves
                if store.disk is not None:
                    finished[os.path.basename(store.path)] = store.disk.decode()
                seq += 1
            break
        except Crash as c:
            crashes.append(c)
            if log is not None:
                log.append(("crash", f"crash at point {c.index} of this process: {c.label}"))
                log.append(("restart", "a new process starts from the checkpoint"))
        except ToolGaveUp as e:
            status = "failed"
            if log is not None:
                log.append(("failed", str(e)))
            break
        except Suspended as s:  # the person logged the question
            status = "waiting"
            suspended = s
            break
    dups, missing = tracker.tally(cfg.expected)
    played = Played(processes, crashes, dups, missing, person.asks, person.prompts, model.calls, saves, status)
    played.restarts = restarts
    played.answers = person.given()
    if log is not None:
        played.timeline = timeline + [{"kind": k, "text": t} for k, t in log]
        played.effects = list(tracker.effects)
    if suspended is not None and start is not None:
        played.question = suspended.question
        # "swept": the points of the second process noted before the pause, whose twice scenarios
        # exist; the resume notes them again and hands on only those past them.
        played.durable = {**start, "answers": person.given(), "swept": len(restarts) if restarts is not None else 0}
    return played


def _record(cfg: Config, p: Played, first: tuple[int, str, str], second: tuple[int, str, str] | None) -> ScenarioRecord:
    return ScenarioRecord(
        job=cfg.job.name, design=cfg.design.name, tracker=cfg.tracker, runs=cfg.runs,
        first_point=first[0], first_kind=first[1], first_label=first[2],
        second_point=second[0] if second else None, second_kind=second[1] if second else None,
        second_label=second[2] if second else None,
        duplicates=p.duplicates, missing=p.missing, asks=p.asks, approvals=p.approvals,
        model_calls=p.model_calls, calls_plus=p.model_calls - (len(cfg.job.turns) + 1) * cfg.runs,
        status=p.status, timeline=p.timeline, effects=p.effects,
    )


def points(cfg: Config, workdir: str | None = None) -> list[tuple[str, str]]:
    """The crash points of the uninterrupted run, in order, as (kind, label)."""
    p = play(cfg, (), workdir, record=True)
    if p.status != "done":
        raise ValueError(f"{cfg.label}: the uninterrupted run did not finish ({p.status})")
    pts = p.processes[0].points
    assert pts is not None
    return pts


@dataclass(slots=True)
class Chunk:
    """One first crash point of one configuration: its once scenario and its twice scenarios.

    With `second_from`, a chunk made after an answer: only the twice scenarios at the points
    second_from..second_to of the once scenario's restart, which it reaches with `answers`.
    """

    config: int  # index into the sweep's configurations
    first: int
    kind: str
    label: str
    second_from: int = 0
    second_to: int = 0
    answers: dict[str, bool] = field(default_factory=dict)


@dataclass(slots=True)
class ChunkResult:
    config: int
    first: int
    records: list[ScenarioRecord]
    saves: int
    # per waiting scenario (in records order): its question and durable state
    waiting: list[tuple[int, dict[str, Any], dict[str, Any]]] = field(default_factory=list)


def run_chunk(cfg: Config, chunk: Chunk, depth: int, workdir: str | None = None, collect: bool = False) -> ChunkResult:
    first = (chunk.first, chunk.kind, chunk.label)
    later = chunk.second_from > 0
    if later and depth != 2:
        raise ValueError(f"a chunk of twice scenarios (from point {chunk.second_from}) needs depth 2")
    # A later chunk plays its once scenario again (its record is stored already) only to note the
    # states of its restart's points (with the timeline so far, when collecting).
    once = play(cfg, (chunk.first,), workdir, record=depth == 2, collect=collect, capture=depth == 2,
                answers=chunk.answers)
    out = ChunkResult(chunk.config, chunk.first, [], 0)
    if not later:
        out.records.append(_record(cfg, once, first, None))
        out.saves = once.saves
        _keep_waiting(out, once)
    if depth == 2 and once.restarts is not None:
        restart = once.processes[1].points
        assert restart is not None
        lo, hi = (chunk.second_from, chunk.second_to) if later else (1, len(restart))
        if hi > len(restart):
            raise ValueError(f"{cfg.label}, first point {chunk.first}: the restart reaches {len(restart)} points "
                             f"with these answers, not {hi}")
        for q in range(lo, hi + 1):
            (kind, label), state = restart[q - 1], once.restarts[q - 1]
            twice = play(cfg, (), workdir, collect=collect, resume=state)
            out.records.append(_record(cfg, twice, first, (q, kind, label)))
            out.saves += twice.saves
            _keep_waiting(out, twice)
    return out


def _keep_waiting(out: ChunkResult, p: Played) -> None:
    if p.durable is not None and p.question is not None:
        out.waiting.append((len(out.records) - 1, p.question, p.durable))


@dataclass(slots=True)
class Resumed:
    record: ScenarioRecord  # the scenario after the answer: done, failed, or waiting again
    played: Played
    twice: tuple[int, int] | None  # restart points reached for the first time: (from, to), 1-based

    def chunk(self, config: int) -> Chunk | None:
        """The twice scenarios at the restart points this resume reached, as a chunk to run."""
        if self.twice is None:
            return None
        r = self.record
        return Chunk(config, r.first_point, r.first_kind, r.first_label, *self.twice, dict(self.played.answers or {}))


def resume(cfg: Config, durable: dict[str, Any], answers: dict[str, bool], first: tuple[int, str, str],
           second: tuple[int, str, str] | None, workdir: str | None = None, depth: int = 1) -> Resumed:
    """Continue a paused scenario from its durable state with the person's answers.

    At depth 2 a once scenario's restart may reach points it had not reached before the pause;
    `Resumed.twice` says which, for their twice scenarios to be crashed as a chunk of their own."""
    capture = depth == 2 and second is None
    p = play(cfg, tuple(durable["plan"]), workdir, record=capture, collect=True, resume=durable, answers=answers,
             capture=capture)
    swept = durable.get("swept", 0)
    reached = len(p.restarts) if p.restarts is not None else 0
    return Resumed(_record(cfg, p, first, second), p, (swept + 1, reached) if reached > swept else None)


def replay(cfg: Config, first: int, second: int | None = None, answers: dict[str, bool] | None = None,
           once_answers: dict[str, bool] | None = None) -> Played:
    """Play a scenario again, with its timeline and effects (sweeps are deterministic): crashed at
    `first`, and in a twice scenario at `second` of the restart, with the answers its questions got.

    A twice scenario starts its last process from the state noted at `second` of the once
    scenario's restart, as the sweep started it: with a queue person that restart reaches
    `second` with the once scenario's answers (`once_answers`), which are not the twice
    scenario's own (an ask number can be both scenarios' with a different truth)."""
    if second is None:
        return play(cfg, (first,), collect=True, answers=answers)
    once = play(cfg, (first,), record=True, collect=True, capture=True, answers=once_answers)
    notes = once.restarts or []
    if second > len(notes):
        raise ValueError(f"{cfg.label}: the restart after point {first} reaches {len(notes)} points with these "
                         f"answers, not {second}")
    return play(cfg, (), collect=True, resume=notes[second - 1], answers=answers)


def ram_dir() -> str | None:
    d = "/dev/shm"
    return d if os.path.isdir(d) and os.access(d, os.W_OK) else None


class Workdir:
    """For disk="files": a temp dir for checkpoint files (RAM-backed when possible), removed on
    exit. For "memory", no dir (None)."""

    def __init__(self, disk: str) -> None:
        if disk not in DISKS:
            raise ValueError(f"unknown disk {disk!r} (choose from {', '.join(DISKS)})")
        self.path = tempfile.mkdtemp(prefix="agentcore-", dir=ram_dir()) if disk == "files" else None

    def __enter__(self) -> str | None:
        return self.path

    def __exit__(self, *exc: object) -> None:
        if self.path is not None:
            shutil.rmtree(self.path, ignore_errors=True)


_CONFIGS: list[Config] = []
_OPTIONS: dict[str, Any] = {}


_FIELDS = tuple(f.name for f in fields(ScenarioRecord))  # ScenarioRecord(*row) takes them in this order


def _worker(item: tuple[int, Chunk]) -> tuple[int, ChunkResult, list[tuple[Any, ...]]]:
    """A pool process runs chunk number item[0]. Records travel back as plain tuples: pickling ten
    thousand dataclass instances field by field cost more than a tenth of a second on each side."""
    chunk, base = item[1], _OPTIONS["base"]
    d = None
    if base is not None:
        d = os.path.join(base, f"w{os.getpid()}")
        os.makedirs(d, exist_ok=True)
    res = run_chunk(_CONFIGS[chunk.config], chunk, _OPTIONS["depth"], d, _OPTIONS["collect"])
    rows = [tuple(getattr(r, f) for f in _FIELDS) for r in res.records]
    res.records = []
    return item[0], res, rows


def plan_chunks(configs: list[Config], workdir: str | None = None) -> list[Chunk]:
    chunks = []
    for i, cfg in enumerate(configs):
        for n, (kind, label) in enumerate(points(cfg, workdir), 1):
            chunks.append(Chunk(i, n, kind, label))
    return chunks


def run_chunks(configs: list[Config], chunks: list[Chunk], depth: int = 2, workers: int = 1,
               collect: bool = False, disk: str = "memory") -> Iterator[ChunkResult]:
    """Run chunks (in parallel with workers > 1), yielding results in the chunks' order."""
    if depth not in (1, 2):
        raise ValueError(f"depth must be 1 or 2, not {depth}")
    if workers < 1:
        raise ValueError(f"workers must be at least 1, not {workers}")
    with Workdir(disk) as base:
        if workers == 1 or len(chunks) < 2:
            for c in chunks:
                yield run_chunk(configs[c.config], c, depth, base, collect)
            return
        _CONFIGS[:] = configs
        _OPTIONS.update(base=base, depth=depth, collect=collect)
        # Early first points have the longest restarts: hand those out first, so that no worker
        # is left with a big chunk at the end; results are put back in the chunks' order.
        order = sorted(range(len(chunks)), key=lambda i: chunks[i].first)
        done: dict[int, ChunkResult] = {}
        following = 0
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(workers) as pool:
            for i, res, rows in pool.imap_unordered(_worker, [(i, chunks[i]) for i in order], chunksize=1):
                res.records = [ScenarioRecord(*row) for row in rows]
                done[i] = res
                while following in done:
                    yield done.pop(following)
                    following += 1


@dataclass(slots=True)
class SweepResult:
    rows: list[TableRow]
    records: list[list[ScenarioRecord]]  # per configuration
    saves: int
    scenarios: int


def sweep(configs: list[Config], depth: int = 2, workers: int = 1, collect: bool = False,
          progress: Callable[[int, int], None] | None = None, disk: str = "memory") -> SweepResult:
    """Sweep configurations; one table row per configuration. `disk`: where checkpoint files
    live, "memory" or (real) "files"."""
    with Workdir(disk) as d:
        chunks = plan_chunks(configs, d)
    records: list[list[ScenarioRecord]] = [[] for _ in configs]
    saves = 0
    for n, res in enumerate(run_chunks(configs, chunks, depth, workers, collect, disk), 1):
        records[res.config].extend(res.records)
        saves += res.saves
        if progress is not None:
            progress(n, len(chunks))
    rows = [table_row(cfg.label, recs) for cfg, recs in zip(configs, records, strict=True)]
    return SweepResult(rows, records, saves, sum(len(r) for r in records))


def each_record(result: SweepResult) -> Iterable[ScenarioRecord]:
    for recs in result.records:
        yield from recs


__all__ = ["Config", "TABLE", "Resumed", "config_name", "play", "points", "replay", "sweep", "run_chunk", "resume",
           "table_configs"]
