"""The tool server stand-in: runs a call against the tracker, failing as a flaky server does.

Rules:
- The flaky tool server (the "tool fails after accept" situation; only a design with `flaky` has
  one, agentcore.durable.designs) fails the first N attempts of each changing call (`Config.tool_faults`:
  agentcore.standins.faults.tool_failures, 1 for `first`, None for `always`: every attempt). A call's failing
  attempts all die the same way: odd-numbered changing calls after the tracker accepted (the effect
  exists), even-numbered ones before the request reached it (nothing happened): every other call's
  failures die after accept, as under `first`, and a call given up on may have left its effect or
  none (were a call's attempts to alternate, any two failures would leave its effect). The loop cannot tell
  which. Attempts are counted per origin in the world: they outlive crashes.
- The loop tells the tool server when it gives up on a call (`give_up`): bookkeeping of the stand-in
  like the origin, invisible to the loop's decisions, so that a scenario counts give-ups exactly
  and bounds the restarts after them (agentcore.harness.scenario).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from agentcore.crash import Hook
from agentcore.jobs import Job, Tool
from agentcore.standins.model import job_origin
from agentcore.standins.tracker import Origin, Tracker


class ToolFailed(Exception):
    """The tool server died mid-call: the loop cannot know whether the request took effect."""


class ToolServer:
    """Runs a call against the tracker; with `failures` (None: always), the first attempts of each
    changing call die mid-call as the module says."""

    __slots__ = ("tracker", "failures", "flaky_after", "attempts", "given_up")

    def __init__(self, tracker: Tracker, job: Job, failures: int | None = 0) -> None:
        self.tracker = tracker
        self.failures = failures
        # call id -> True if its failing attempts die after the tracker accepted
        self.flaky_after = {c.id: i % 2 == 0 for i, c in enumerate(job.changing_calls())}
        self.attempts: Counter[Origin] = Counter()
        self.given_up: Counter[Origin] = Counter()  # the times the loop gave up on each call

    def call(
        self, tool: Tool, args: dict[str, Any], key: str | None, origin: Origin, hook: Hook, detail: str
    ) -> dict[str, Any]:
        if tool.read_only:
            return self.tracker.search(args)
        origin = job_origin(origin)
        if self.failures != 0:
            self.attempts[origin] += 1
            if self.failures is None or self.attempts[origin] <= self.failures:
                if self.flaky_after.get(origin[1], False):
                    self.tracker.request(tool.op, args, key, origin, hook, detail)
                raise ToolFailed(f"{tool.name} {origin[1]}: server died mid-call")
        return self.tracker.request(tool.op, args, key, origin, hook, detail)

    def give_up(self, origin: Origin) -> None:
        """The loop gave up on this call (stopped, or moved on without its result); counted by the
        job call it stands for, as its attempts are (a fresh provider ID is the same call)."""
        self.given_up[job_origin(origin)] += 1
