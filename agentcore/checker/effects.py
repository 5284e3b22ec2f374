"""Effects checked against the truth: the `wrong` column.

Rules:
- The truth of a configuration is the tracker's effects after its uninterrupted run in the
  fault-free world: the same job, tracker mode and job runs, the design without its planted bugs
  (a bug that shows in the uninterrupted run too must not be what it is checked against), the
  scripted person, and every condition at agentcore.config.CONDITIONS (panic, fsync on, no tracker
  fault, a flaky tool failing as the design's default, a truthful person, the fixed model):
  `fault_free`. The runner plays it and hands its effects over (`Truth.of`; agentcore.harness.scenario
  keeps one per process and configuration): this module plays nothing, and checking a scenario is a
  dict lookup per effect.
- Each effect is compared with the truth's effect of the same origin (job run, call ID): its op
  and its arguments. An argument the job fills from an earlier result ({"$result": ...}) is
  compared by what it names, not by its raw value: an issue number by the origin of the
  create_issue that made that issue, a comment number by the origin of that comment (a duplicate
  issue made first shifts every later number, legitimately). A value that names nothing the
  tracker made (None: a result recorded without the call's answer) is compared as it is, and so
  differs. Any other argument is compared as it is.
- wrong: the effects that exist, have an origin in the truth, and differ from it. Each effect is
  judged on its own: a duplicate that also differs counts in `dups` (it is one too many) and in
  `wrong` (it is not what the truth made), so both columns stay per effect. An effect whose origin
  the truth has not (another job run's call, a call the job never makes) is a duplicate only
  (agentcore.standins.tracker.Tracker.tally) and is not checked.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from agentcore.config import CONDITIONS
from agentcore.durable import designs

if TYPE_CHECKING:
    from agentcore.config import Config
    from agentcore.jobs import Job

Origin = tuple[int, str]
Path = tuple[str | int, ...]
Effect = dict[str, Any]
# What a field of an op's answer names on the tracker: an issue or a comment, by its number.
_NAMES = {
    ("create_issue", "number"): "issue",
    ("comment", "issue"): "issue",
    ("label", "issue"): "issue",
    ("comment", "comment"): "comment",
}
# The field of an op's answer that numbers what the op made.
_MADE = {"create_issue": ("issue", "number"), "comment": ("comment", "comment")}


@dataclass(frozen=True, slots=True)
class Truth:
    """The truth's effects by origin, as (op, arguments named), and per call ID the paths of its
    arguments filled from earlier results, with what each names ("issue" or "comment")."""

    effects: dict[Origin, tuple[str, Any]]
    refs: dict[str, tuple[tuple[Path, str], ...]]

    @classmethod
    def of(cls, job: Job, effects: list[Effect]) -> Truth:
        """The truth made of `effects`, the tracker's after an uninterrupted run of `job`."""
        truth = cls({}, references(job))
        names = _names(effects)
        for e in effects:
            truth.effects.setdefault(_origin(e), truth._named(e, names))
        return truth

    def wrong(self, effects: list[Effect]) -> int:
        """How many of a tracker's `effects` exist but differ from the truth (the module's rules)."""
        names = None  # made when an effect with a reference needs it (the sweep checks every scenario)
        n = 0
        for e in effects:
            o = e["origin"]
            want = self.effects.get((o[0], o[1]))
            if want is None:
                continue
            if o[1] not in self.refs:
                n += e["op"] != want[0] or e["args"] != want[1]
                continue
            if names is None:
                names = _names(effects)
            n += self._named(e, names) != want
        return n

    def _named(self, e: Effect, names: dict[tuple[str, Any], Origin]) -> tuple[str, Any]:
        args = e["args"]
        for path, kind in self.refs.get(e["origin"][1], ()):
            args = _named(args, path, kind, names)
        return e["op"], args


def fault_free(cfg: Config) -> Config:
    """The configuration whose uninterrupted run is `cfg`'s truth (the module's rules)."""
    return replace(cfg, design=designs.sound(cfg.design), person="scripted", name="", **CONDITIONS)


def references(job: Job) -> dict[str, tuple[tuple[Path, str], ...]]:
    """Per call ID of `job`: the paths of its arguments filled from an earlier result that names an
    issue or a comment, with which (calls without one are left out)."""
    ops = {c.id: job.tools[c.tool].op for t in job.turns for c in t}
    out = {}
    for t in job.turns:
        for c in t:
            found = [
                (path, kind)
                for path, ref, field in _refs(c.args, ())
                if (kind := _NAMES.get((ops.get(ref, ""), field))) is not None
            ]
            if found:
                out[c.id] = tuple(found)
    return out


def _refs(value: Any, path: Path) -> list[tuple[Path, str, str]]:
    """(path, call ID, field) of each {"$result": CALL_ID, "field": FIELD} in a call's arguments."""
    if isinstance(value, dict):
        if "$result" in value:
            return [(path, value["$result"], value["field"])]
        return [r for k, v in value.items() for r in _refs(v, (*path, k))]
    if isinstance(value, list):
        return [r for i, v in enumerate(value) for r in _refs(v, (*path, i))]
    return []


def _names(effects: list[Effect]) -> dict[tuple[str, Any], Origin]:
    """(kind, number) -> the origin of the effect that made that issue or comment."""
    names: dict[tuple[str, Any], Origin] = {}
    for e in effects:
        made = _MADE.get(e["op"])
        if made is not None:
            o = e["origin"]
            names.setdefault((made[0], e["answer"][made[1]]), (o[0], o[1]))
    return names


def _named(value: Any, path: Path, kind: str, names: dict[tuple[str, Any], Origin]) -> Any:
    """`value` with the number at `path` replaced by its name (copied along the path, the rest
    shared); a name is a tuple, which no JSON value is, so it never equals a raw value."""
    if not path:
        if isinstance(value, int) and not isinstance(value, bool) and (origin := names.get((kind, value))):
            return (kind, *origin)
        return value
    head, rest = path[0], path[1:]
    if isinstance(value, dict) and head in value:
        return {**value, head: _named(value[head], rest, kind, names)}
    if isinstance(value, list) and isinstance(head, int) and head < len(value):
        return [*value[:head], _named(value[head], rest, kind, names), *value[head + 1 :]]
    return value


def _origin(e: Effect) -> Origin:
    o = e["origin"]
    return (o[0], o[1])
