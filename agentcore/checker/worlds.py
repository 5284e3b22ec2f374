"""The audit's world models: the chapter's world with one factor changed, and the losses each excuses.

Rules:
- A world model (`WORLDS`) is the chapter's world with one factor changed, as Config's condition
  fields (agentcore.config.CONDITIONS): panic (the chapter), power-cut, power-cut without fsync, a
  tracker that crashes, a tracker that forgets keys (ttl:TTL), a strict tracker, tool faults past
  the loop's attempts (k:MAX_ATTEMPTS+1) and for good (always), a person who denies (deny:0.5),
  errs (wrong:0.3) or lies (adversarial), a model that renames its calls (fresh-ids) or changes
  its mind (fickle, seed 0). The kill crash model is left out: tests/agentcore/harness/test_crash_models.py
  proves its records equal panic's, and it costs about 20 times as much.
- TTL is DEFAULT_SWEEP_DEPTH + 1 (3): the shortest time a tracker may keep keys under the chapter's
  advice at depth 2. The loop repeats a key only in the retries right after its crashes (at most
  one per crash) and, with a flaky tool, after the failed first attempt: a shorter TTL is a tracker
  that forgets a key inside the retry window, which no loop can survive and the advice rules out.
- Tool-fault worlds act only on a design with a flaky tool server (agentcore.standins.faults): for the
  others they are the chapter's world again, so they are not swept ("n/a").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentcore.config import CONDITIONS
from agentcore.errors import ConfigError
from agentcore.limits import DEFAULT_SWEEP_DEPTH, MAX_ATTEMPTS

RUNS = 2  # job runs in sequence: a daily job's second run must not collide with its first
TTL = DEFAULT_SWEEP_DEPTH + 1
KILL_NOTE = (
    "kill is left out: tests/agentcore/harness/test_crash_models.py proves its records equal panic's, "
    "at about 20 times the cost"
)


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
EXCUSES = {
    "tool": "the tool did not recover within the loop's attempts: the loop gave up and said so",
    "person": "the person was wrong where no key or lookup could check the answer",
    "fsync": "the store did not sync: a power cut took its checkpoint (the chapter's advice is to sync)",
}


def world(name: str) -> World:
    for w in WORLDS:
        if w.name == name:
            return w
    raise ConfigError(f"unknown world model {name!r} (choose from {', '.join(w.name for w in WORLDS)})")
