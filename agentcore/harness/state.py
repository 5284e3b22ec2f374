"""A scenario's world and its durable state: what outlives a crash, and what a paused one stores.

Rules:
- The world of a scenario is what a crash leaves standing: the tracker (with its write-ahead log
  when it can crash: its records are the log's; with its request count and the keys' ages when it
  forgets; with each key's arguments and the refused calls when it compares them), the tool
  server's attempt counts and give-ups (how often the loop gave up on each call), the model's call
  count and how many times it was asked about each turn, the person (asks and how many were
  avoidable, prompts, decisions, answers given; its faults and seed are the configuration's), the
  number of job runs finished, and the timeline so far. A process holds references to it; a crash
  drops the process and keeps the world. `World.fresh` builds it for a scenario's start,
  `World.restore` from a durable state, `World.snapshot` takes one.
- A durable state (`Durable`) is that world plus the checkpoint files (name -> text, temp files
  included), the process number it is for (0: the scenario's first), that process's crash plan,
  and, when a crash made it, the crash's text. A paused scenario's also says how many restart
  points were swept before the pause (`swept`). Give-ups are stored only when there are some
  (`gave_up`, rows [job run, call ID, count] as the attempts'), the avoidable asks when there are
  any, and the model's asks per turn (`model_asks`, [[job run, turn, n], ...]) only for a model
  that is not `fixed` (one that repeats itself has no use for them), so the states of the
  chapter's world keep their stored shape.
- The dashboard stores durable states as JSON objects: `to_dict` gives the stored shape, key for
  key and in order; `from_dict` checks a stored one (each key's type, the tracker's mode and
  effects, the log of a tracker that can crash replays, the request count and keys of one that
  forgets or compares arguments load, every checkpoint file parses) and a corrupt
  one raises CheckpointError naming its source. A tracker stored without fault and log (older
  states) is one that never crashes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentcore.durable.checkpoint import CheckpointError
from agentcore.durable.checkpoint import parse as parse_checkpoint
from agentcore.standins.faults import tool_failures
from agentcore.standins.model import ScriptedModel
from agentcore.standins.person import QueuePerson, ScriptedPerson
from agentcore.standins.tools import ToolServer
from agentcore.standins.tracker import MODES, Tracker

if TYPE_CHECKING:
    from agentcore.config import Config

# The stored keys every durable state has, with their types (in the stored order).
_REQUIRED: dict[str, type] = {
    "tracker": dict,
    "attempts": list,
    "model_calls": int,
    "answers": dict,
    "asks": int,
    "prompts": int,
    "decisions": dict,
    "files": dict,
    "seq": int,
}
_AFTER: dict[str, type] = {"plan": list, "timeline": list}  # after "process", which may be missing
_OPTIONAL: dict[str, type] = {
    "process": int,
    "crash": str,
    "swept": int,
    "gave_up": list,
    "avoidable": int,
    "model_asks": list,
}

RESTART_TEXT = "a new process starts from the checkpoint"


def checkpoint_name(seq: int) -> str:
    """The checkpoint file of job run `seq` (0-based); its temp file adds ".tmp"."""
    return f"run-{seq + 1}.json"


@dataclass(slots=True)
class Durable:
    """What a process starts from: the world and the checkpoint files, as the module says."""

    tracker: dict[str, Any]
    attempts: list[list[Any]]
    model_calls: int
    answers: dict[str, bool]
    asks: int
    prompts: int
    decisions: dict[str, bool]
    files: dict[str, str]
    seq: int
    process: int
    plan: list[int]
    timeline: list[dict[str, Any]]
    crash: str | None = None  # set when a crash at a noted point made this state
    swept: int | None = None  # set in a paused scenario's state
    gave_up: list[list[Any]] | None = None  # [job run, call ID, give-ups], when the loop gave up on any
    avoidable: int = 0  # of `asks`
    model_asks: list[list[int]] | None = None  # set for a model that is not fixed

    @classmethod
    def from_dict(cls, data: Any, name: str) -> Durable:
        """A stored durable state, checked: a corrupt one raises CheckpointError naming `name`."""
        if not isinstance(data, dict):
            raise CheckpointError(f"{name}: stored durable state is not an object")
        for key, kind in (_REQUIRED | _AFTER).items():
            if not isinstance(data.get(key), kind):
                raise CheckpointError(f"{name}: stored durable state: {key} is missing or of the wrong type")
        for key, kind in _OPTIONAL.items():
            if data.get(key) is not None and not isinstance(data[key], kind):
                raise CheckpointError(f"{name}: stored durable state: {key} is of the wrong type")
        tracker = data["tracker"]
        if tracker.get("mode") not in MODES or not isinstance(tracker.get("effects"), list):
            raise CheckpointError(f"{name}: stored durable state: the tracker records are corrupt")
        if "fault" in tracker and not _replays(tracker):
            what = "log" if tracker["fault"] == "crash" else "fault state"
            raise CheckpointError(f"{name}: stored durable state: the tracker's {what} is corrupt")
        asks = data.get("model_asks")
        if asks is not None and not all(
            isinstance(a, list) and len(a) == 3 and all(type(x) is int and x >= 0 for x in a) for a in asks
        ):
            raise CheckpointError(f"{name}: stored durable state: the model's asks are corrupt")
        loaded = checkpoint_name(data["seq"])
        for fname, text in data["files"].items():
            if not isinstance(text, str):
                raise CheckpointError(f"{name}: checkpoint {fname}: not text")
            if fname == loaded:  # the one a restart reads: the others (temp files, finished job
                # runs' checkpoints) may be as torn as a power cut left them, and nobody reads them
                # surrogatepass: a lone surrogate reaches the parser as bytes that are not UTF-8 (corrupt)
                parse_checkpoint(text.encode("utf-8", "surrogatepass"), f"{name}: checkpoint {fname}")
        return cls(
            **{k: data[k] for k in _REQUIRED},
            process=data.get("process") or 0,
            **{k: data[k] for k in _AFTER},
            crash=data.get("crash"),
            swept=data.get("swept"),
            gave_up=data.get("gave_up"),
            avoidable=data.get("avoidable") or 0,
            model_asks=asks,
        )

    def to_dict(self) -> dict[str, Any]:
        """The stored shape: the keys in the order the dashboard has always stored them."""
        out = {
            "tracker": self.tracker,
            "attempts": self.attempts,
            "model_calls": self.model_calls,
            "answers": self.answers,
            "asks": self.asks,
            "prompts": self.prompts,
            "decisions": self.decisions,
            "files": self.files,
            "seq": self.seq,
            "process": self.process,
            "plan": self.plan,
            "timeline": self.timeline,
        }
        if self.crash is not None:
            out["crash"] = self.crash
        if self.swept is not None:
            out["swept"] = self.swept
        if self.gave_up:
            out["gave_up"] = self.gave_up
        if self.avoidable:
            out["avoidable"] = self.avoidable
        if self.model_asks is not None:
            out["model_asks"] = self.model_asks
        return out


def _replays(tracker: dict[str, Any]) -> bool:
    """Whether a stored tracker's fault is known and its records load (a restore replays a log)."""
    try:
        Tracker.restore(tracker)
    except (ValueError, KeyError, TypeError, IndexError, AttributeError):  # a field missing or mistyped
        return False
    return True


class World:
    """The world of one scenario (the module says what it holds). `log` is the timeline being
    written, (kind, text) pairs, or None when the scenario keeps no timeline."""

    __slots__ = ("tracker", "server", "model", "person", "seq", "timeline", "log")

    def __init__(
        self, cfg: Config, tracker: Tracker, answers: dict[str, bool] | None, log: list[tuple[str, str]] | None
    ) -> None:
        self.tracker = tracker
        self.server = ToolServer(tracker, cfg.job, tool_failures(cfg.tool_faults) if cfg.design.flaky else 0)
        self.model = ScriptedModel(cfg.job, cfg.model, cfg.seed, tracker.find)
        self.person: ScriptedPerson | QueuePerson = (
            ScriptedPerson(tracker, cfg.person_faults, cfg.seed)
            if cfg.person == "scripted"
            else QueuePerson(tracker, answers, log)
        )
        self.seq = 0  # job runs finished
        self.timeline: list[dict[str, Any]] = []  # the events before this scenario's first process
        self.log = log

    @classmethod
    def fresh(
        cls, cfg: Config, answers: dict[str, bool] | None = None, log: list[tuple[str, str]] | None = None
    ) -> World:
        return cls(cfg, Tracker(cfg.tracker, cfg.tracker_fault), answers, log)

    @classmethod
    def restore(
        cls,
        cfg: Config,
        state: Durable,
        answers: dict[str, bool] | None = None,
        log: list[tuple[str, str]] | None = None,
    ) -> World:
        """The world as `state` holds it, the person knowing `state.answers` and then `answers`."""
        given = {**state.answers, **(answers or {})} if cfg.person != "scripted" else None
        w = cls(cfg, Tracker.restore(state.tracker), given, log)
        w.server.attempts.update({(int(s), c): n for s, c, n in state.attempts})
        w.server.given_up.update({(int(s), c): n for s, c, n in state.gave_up or []})
        w.model.calls = state.model_calls
        w.model.remember(state.model_asks or [])
        w.person.asks, w.person.avoidable, w.person.prompts = state.asks, state.avoidable, state.prompts
        w.person.decisions = dict(state.decisions)
        w.seq = state.seq
        if log is not None:
            w.timeline = list(state.timeline)
            if state.crash:
                w.timeline += [{"kind": "crash", "text": state.crash}, {"kind": "restart", "text": RESTART_TEXT}]
        return w

    def events(self) -> list[dict[str, Any]]:
        """The timeline so far ([] when none is kept)."""
        if self.log is None:
            return []
        return self.timeline + [{"kind": k, "text": t} for k, t in self.log]

    def snapshot(self, files: dict[str, str], process: int, plan: list[int]) -> Durable:
        """The durable state now, with checkpoint `files`, for process number `process` (0: the
        scenario's first) to start from with crash plan `plan`."""
        person = self.person
        return Durable(
            self.tracker.snapshot(),
            [[s, c, n] for (s, c), n in self.server.attempts.items()],
            self.model.calls,
            person.given(),
            person.asks,
            person.prompts,
            dict(person.decisions),
            files,
            self.seq,
            process,
            plan,
            self.events(),
            gave_up=[[s, c, n] for (s, c), n in self.server.given_up.items()] or None,
            avoidable=person.avoidable,
            model_asks=self.model.asks() if self.model.mode != "fixed" else None,
        )

    def tally(self, cfg: Config) -> tuple[int, int, int]:
        """(duplicates, missing, denied_ran) as agentcore.records defines them: the gated calls the
        person denies should make no effect, so they are never missing, and each one that made an
        effect ran although denied."""
        denied = frozenset(o for o in cfg.expected if self.person.denies(o)) if cfg.design.approval else frozenset()
        dups, missing = self.tracker.tally(cfg.expected, denied)
        return dups, missing, self.tracker.made(denied)
