"""Playing one scenario: processes one after another, each crashed by its plan, until one finishes.

Rules:
- A scenario plays processes one after another. Each process gets a crash plan (crash at its Nth
  point, or never); on a crash everything the process held is dropped and the next process starts
  from the checkpoint files and the surviving world (agentcore.harness.state). Job runs already finished
  are not run again (the scheduler knows them). Each process is a new identity: it proposes a run
  ID of its own (`proposed_run_id`), which only a fresh job run takes, and its timeline says its
  number (1: the scenario's first; a durable state carries the number of the process it is for).
- No replays: a crash keeps only the durable state (checkpoint files, world), so with
  `Options.notes` a once scenario's restart (its second process, and those after a give-up in it)
  notes that state at each of its points (the files as a crash there leaves them, the world a few
  small lists); a twice scenario starts its last process from one of those notes.
- Checkpoint files live on the configuration's crash model's disk (agentcore.harness.disk): in memory
  under panic (what a killed process wrote outlives it, as the page cache would) or in real files
  in `workdir` (the same records); a power-cut disk in memory; under kill, real files written by a
  child process (agentcore.harness.kill). Every point passes through `point`, which asks the disk what a
  crash there may leave: each state is a point of its own (the label says how the state differs,
  e.g. "[power cut: run-1.json empty]"), and a crash at it resets the disk to that state. Notes and
  pauses take the files from the disk, never from the store's memory of what it wrote.
- A process that gives up on a call (the loop's ToolGaveUp: its tries failed) is no crash: the
  scenario counts the give-up (`Played.gave_up`, from the tool server's count, which outlives
  crashes) and starts a new process, as after a crash, from the checkpoint files and the surviving
  world, so that the job still finishes once the tool recovers. A give-up restart is no crash point
  and takes no entry of the crash plan: the new process goes on with the plan of the one that gave
  up, counting its points on, so the uninterrupted run's points (the ones a sweep crashes) and a once
  scenario's restart run through their give-ups, and a plan's Nth point is the same point in a
  scenario played from the start and in one played from a state noted before it. It is a new
  process all the same: its number (run IDs, the timeline) counts it. A call given up on more than
  MAX_GIVE_UP_RESTARTS times (agentcore.limits) ends the scenario: its status is "failed".
- A restart that cannot read its checkpoint (a torn or empty file a power cut left) stops: the
  scenario's status is "corrupt", and the effects the job had not made yet count as missing.
- A tracker that can crash (agentcore.harness.trackerfault) crashes at its own points: the process goes on,
  and the scenario's next crash plan counts the rest of that process as a segment of its own. For
  the plan, the notes and `Played.processes` a segment is a process; process numbers count processes.
- The tracker's effects at a scenario's end are checked against the configuration's truth
  (agentcore.checker.effects: its uninterrupted, fault-free run): `Played.wrong`. A paused scenario's are the
  effects made so far.
- A question for a queue person pauses the scenario. A paused process cannot wait, so what it
  returns is the durable state the paused process started from (checkpoint files, world, its crash
  plan; after a give-up, the state the process that gave up started from, whose plan it goes on
  with) with the answers given so far; played again from there with an answer (deterministic: the
  same state and answers give the same steps), it goes on as if the answer had come at once.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from agentcore.checker.effects import Truth, fault_free
from agentcore.crash import AS_IS, FILE_KINDS, TRACKER_KINDS, Crash, CrashPlan, State
from agentcore.crashmodels import CRASH_MODELS
from agentcore.durable.checkpoint import CheckpointError, FileCheckpoint, OsFiles
from agentcore.durable.loop import Loop, ToolGaveUp
from agentcore.errors import BadInput
from agentcore.harness import kill
from agentcore.harness.disk import WorkBudget
from agentcore.harness.files import Folder, lay_out, scenario_disk
from agentcore.harness.played import Options, Played
from agentcore.harness.state import RESTART_TEXT, Durable, World, checkpoint_name
from agentcore.harness.trackerfault import Relay
from agentcore.limits import MAX_GIVE_UP_RESTARTS
from agentcore.standins.person import QueuePerson, Suspended

if TYPE_CHECKING:
    from agentcore.config import Config
    from agentcore.durable.designs import Design
    from agentcore.jobs import Job

_KEPT = 64  # truths kept per process (the dashboard's workers live long and see many jobs)
# The truths kept, oldest first: (job, design, tracker mode, runs, truth). A job is found by identity
# (the entry holds it, so no other job can take its place); a job object is parsed once and shared.
_TRUTHS: list[tuple[Job, Design, str, int, Truth]] = []
_LAST: list[Any] = []  # the configuration last checked, and its truth


def play(
    cfg: Config,
    plan: tuple[int, ...] | list[int],
    options: Options = Options(),
    workdir: str | None = None,
    start: Durable | None = None,
    answers: dict[str, bool] | None = None,
) -> Played:
    """Play one scenario: crash process i at its plan[i]th point, restart, until a process finishes.

    The checkpoint files are in memory, or in `workdir` when one is given. `start` continues from
    a durable state (a paused scenario's, or a noted restart state) with more `answers`."""
    folder = Folder(cfg, workdir)
    try:
        return _Scenario(cfg, plan, options, folder.path, start, answers).run()
    finally:
        folder.close()


def uninterrupted_effects(cfg: Config) -> list[dict[str, Any]]:
    """The tracker's effects after `cfg`'s uninterrupted run, unchecked (agentcore.checker.effects makes
    the truth of them); BadInput if the run does not finish."""
    scenario = _Scenario(cfg, (), Options(), None, None, None, check=False)
    played = scenario.run()
    if played.status != "done":
        raise BadInput(f"{cfg.label}: the uninterrupted run did not finish ({played.status})")
    return scenario.world.tracker.effects


def truth(cfg: Config) -> Truth:
    """The truth `cfg`'s scenarios are checked against (agentcore.checker.effects): the effects of
    its fault-free uninterrupted run, played once per process and kept per (job, design, tracker
    mode, job runs); a sweep checks scenario after scenario of one configuration."""
    if _LAST and _LAST[0] is cfg:
        return _LAST[1]
    made = next(
        (
            t
            for job, design, tracker, runs, t in _TRUTHS
            if job is cfg.job and design == cfg.design and tracker == cfg.tracker and runs == cfg.runs
        ),
        None,
    )
    if made is None:
        made = Truth.of(cfg.job, uninterrupted_effects(fault_free(cfg)))
        if len(_TRUTHS) >= _KEPT:
            del _TRUTHS[0]
        _TRUTHS.append((cfg.job, cfg.design, cfg.tracker, cfg.runs, made))
    _LAST[:] = [cfg, made]
    return made


def wrong(cfg: Config, effects: list[dict[str, Any]]) -> int:
    """How many of `effects` (a scenario's tracker's) exist but differ from `cfg`'s truth."""
    return truth(cfg).wrong(effects)


def run_steps(cfg: Config, bound: int | None = None) -> tuple[int, int]:
    """The steps of `cfg`'s uninterrupted run (agentcore.harness.disk), counted by a dry WorkBudget (no
    power-cut state listed but the first two) with its effects unchecked, and its crash points as
    that count passes them: what a play of the run costs, found for about what the panic model's
    run costs. The points are `points(cfg)`'s but under a power cut without fsync, where a point
    offers up to agentcore.harness.disk.MAX_STATES states and the count at most two. OverBudget past
    `bound`. Under kill the process's work is counted as under panic (the same operations, here in
    one process)."""
    budget = WorkBudget(bound, dry=True)
    model = CRASH_MODELS[cfg.crash_model]
    counted = replace(cfg, crash_model=model.costs_as) if model.costs_as else cfg
    played = _Scenario(counted, (), Options(budget=budget), None, None, None, check=False).run()
    return budget.spent, played.processes[0].count


def proposed_run_id(cfg: Config, seq: int, process: int) -> str:
    """The run ID process `process` (1: the scenario's first) proposes for job run `seq` (0-based).

    Every process proposes its own, as a real new process would; only a fresh run takes it (a run
    ID read from the checkpoint continues its run). The first process's is `run-{seq + 1}`, so an
    uninterrupted run sends the same keys as ever; a restart's is `run-{seq + 1}.p{process}`. The
    planted bug `reuse_run_id` proposes `run-1` for every job run of every process."""
    if cfg.design.reuse_run_id:
        return "run-1"
    return f"run-{seq + 1}" if process == 1 else f"run-{seq + 1}.p{process}"


class _Scenario:
    """One play of one scenario; `run` plays its processes (see `play`)."""

    __slots__ = (
        "cfg",
        "options",
        "disk",
        "paths",
        "world",
        "base",
        "plan",
        "restarts",
        "hook",
        "at",
        "restart_hook",
        "processes",
        "crashes",
        "saves",
        "status",
        "suspended",
        "pausable",
        "start",
        "remote",
        "faults",
        "check",
        "regiven",
        "store",
        "saved",
    )

    def __init__(
        self,
        cfg: Config,
        plan: tuple[int, ...] | list[int],
        options: Options,
        workdir: str | None,
        start: Durable | None,
        answers: dict[str, bool] | None,
        check: bool = True,
    ) -> None:
        self.cfg, self.options = cfg, options
        self.check = check  # the effects against the truth (not the truth's own run: it is the truth)
        self.paths = [os.path.join(workdir or "", checkpoint_name(i)) for i in range(cfg.runs)]
        self.disk = scenario_disk(cfg, workdir, self.paths, options.budget)
        files = start.files if start is not None else {}
        lay_out(self.disk, self.paths, files)
        log: list[tuple[str, str]] | None = [] if options.timeline else None
        if start is None:
            self.world, self.base = World.fresh(cfg, answers, log), 0
        else:
            self.world, self.base = World.restore(cfg, start, answers, log), start.process
        self.plan = list(plan)
        self.hook: CrashPlan | Relay = CrashPlan()  # the current process's (under a tracker fault, relayed)
        self.at: State | None = None  # the disk a crash at the current point leaves (None: as it is)
        self.remote: Any = None  # under kill, in the child: the pipe to the parent
        self.restarts: list[Durable] | None = None
        self.restart_hook = CrashPlan()
        self.processes: list[CrashPlan] = []
        self.crashes: list[Crash] = []
        self.saves = 0
        self.status = "done"
        self.suspended: Suspended | None = None
        self.pausable = isinstance(self.world.person, QueuePerson)
        self.start: Durable | None = None  # what the current process started from (a pause resumes there)
        self.faults = 0  # tracker crashes so far: each began a segment of `processes` that is no new process
        self.regiven = 0  # restarts after a give-up so far: each a new process within a segment of `processes`
        self.store: FileCheckpoint | None = None  # the running job run's
        self.saved: list[int] | None = None

    def run(self) -> Played:
        log = self.world.log
        fresh = True
        while True:
            if fresh:  # a restart after a give-up goes on with the hook it had
                plan = self._next_process()
                relayed = self.cfg.tracker_fault == "crash"
                self.hook = Relay(plan, self.world, self._tracker_crashed) if relayed else plan
            fresh = True
            try:
                if CRASH_MODELS[self.cfg.crash_model].forks:
                    kill.run_process(self)
                else:
                    self.run_jobs()
                break
            except Crash as c:
                self.crashes.append(c)
                if self.at is not None:
                    self.disk.reset(self.at)
                    self.at = None
                if log is not None:
                    log.append(("crash", f"crash at point {c.index} of this process: {c.label}"))
                    log.append(("restart", RESTART_TEXT))
            except ToolGaveUp as e:
                if log is not None:
                    log.append(("failed", f"gave up: {e}"))
                if max(self.world.server.given_up.values()) > MAX_GIVE_UP_RESTARTS:
                    self.status = "failed"
                    break
                self.regiven += 1
                fresh = False
                if log is not None:
                    log.append(("restart", RESTART_TEXT))
            except Suspended as s:  # the person logged the question
                self.status = "waiting"
                self.suspended = s
                break
            except CheckpointError as e:
                self.status = "corrupt"
                if log is not None:
                    log.append(("corrupt", f"the restart cannot read its checkpoint: {e}"))
                break
        return self._played()

    def _next_process(self, fresh: bool = True) -> CrashPlan:
        """The next process's crash plan, or with `fresh` false the next segment's of this process
        (after a tracker crash); with notes, the second segment notes the state at each point."""
        crash_at = self.plan.pop(0) if self.plan else None
        hook = CrashPlan(crash_at, self.options.points)
        # Notes are for a once scenario's restart: the segment that starts with its plan spent, after
        # the first (here, or before the durable state a paused restart resumes from: a later
        # process's). Not a process number: restarts after a give-up count as processes.
        if self.options.notes and crash_at is None and (self.processes or self.base or self.options.root):
            self.restarts, self.restart_hook = [], hook
            hook.on_point = self._note
            if self.options.root:
                self.saved = []
        if self.pausable and fresh:
            rest = ([crash_at] if crash_at is not None else []) + self.plan
            self.start = self.world.snapshot(self._files(), self._number(), rest)
        self.processes.append(hook)
        return hook

    def _tracker_crashed(self, crash: Crash) -> CrashPlan:
        """The tracker crashed (agentcore.harness.trackerfault): this process goes on in a new segment."""
        self.crashes.append(crash)
        self.faults += 1
        return self._next_process(fresh=False)

    def _number(self) -> int:
        """Processes started so far (segments less tracker crashes, plus restarts after a give-up):
        the running process's number, 1-based, and so the next one's, 0-based."""
        return self.base + len(self.processes) - self.faults + self.regiven

    def run_jobs(self) -> None:
        """One process: the job runs not finished yet, in sequence."""
        cfg, w = self.cfg, self.world
        number = self._number()  # this process's, 1-based (the hook is appended)
        while w.seq < cfg.runs:
            point = self.point
            store = self.store = FileCheckpoint(self.paths[w.seq], cfg.fsync, point, self.disk, cfg.design)
            run_id = proposed_run_id(cfg, w.seq, number)
            try:
                Loop(cfg.design, cfg.job, store, w.server, w.model, w.person, point, run_id, w.seq, w.log, number).run()
            finally:
                self.saves += store.saves
                self.store = None
            w.seq += 1
            if self.remote is not None:
                self.remote.send(("run-finished",))

    def point(self, kind: str, detail: str) -> None:
        """A crash point: one for each state a crash here may leave (agentcore.harness.disk); a tracker's
        point is one: its crash is the tracker's, which leaves the agent's disk alone."""
        if self.options.budget is not None:
            self.options.budget.charge(1)
        if kind in TRACKER_KINDS:
            self.hook(kind, detail)
            return
        states = self.disk.crash_states(kind in FILE_KINDS)
        if states is AS_IS:  # the panic model's every point: no copy, no description
            self.hook(kind, detail)
            return
        for variant, files in states:
            self.at = files
            self.hook(kind, detail + variant)
        self.at = None

    def _files(self) -> dict[str, str]:
        """The checkpoint files (and temp files) a crash now leaves, by name."""
        files = self.at if self.at is not None else self._on_disk()
        return {os.path.basename(p): raw.decode() for p, raw in files.items()}

    def _on_disk(self) -> State:
        if isinstance(self.disk, OsFiles):
            return {f: raw for p in self.paths for f in (p, p + ".tmp") if (raw := self.disk.read(f)) is not None}
        return self.disk.files()

    def _note(self) -> None:
        """The durable state at this point of process 2, as a crash here would leave it."""
        hook = self.restart_hook
        assert self.restarts is not None
        state = self.world.snapshot(self._files(), self._number(), [])
        text = hook.points[-1][1] if hook.points else ""
        state.crash = f"crash at point {hook.count} of this process: {text}"
        self.restarts.append(state)
        if self.saved is not None:
            self.saved.append(self.saves + (self.store.saves if self.store is not None else 0))

    def _played(self) -> Played:
        w = self.world
        dups, missing, denied_ran = w.tally(self.cfg)
        played = Played(
            self.processes,
            self.crashes,
            dups,
            missing,
            w.person.asks,
            w.person.prompts,
            w.model.calls,
            self.saves,
            self.status,
            gave_up=sum(w.server.given_up.values()) + len(w.tracker.refused),
            denied_ran=denied_ran,
            avoidable=w.person.avoidable,
        )
        played.restarts = self.restarts
        played.saved = self.saved
        played.answers = w.person.given()
        if self.check:
            played.wrong = wrong(self.cfg, w.tracker.effects)
        if w.log is not None:
            played.timeline = w.events()
            played.effects = list(w.tracker.effects)
        if self.suspended is not None and self.start is not None:
            played.question = self.suspended.question
            # "swept": the points of the second process noted before the pause, whose twice scenarios
            # exist; the resume notes them again and hands on only those past them.
            swept = len(self.restarts) if self.restarts is not None else 0
            played.durable = replace(self.start, answers=w.person.given(), swept=swept).to_dict()
        return played
