"""Crash models: how a process dies and what its death leaves of the checkpoint files, as data.

Rules:
- Every crash model is one `CrashModel` in `CRASH_MODELS` (name -> model, in the order the options
  list them); nothing else in agentcore tests a crash model's name: the harness reads the fields.
- `disk`: where a scenario's checkpoint files live, "memory" (what the process wrote outlives it,
  as the page cache would; real files when the sweep is given a folder) or "power-cut" (only what
  was synced survives: agentcore.harness.disk.PowerCutDisk).
- `forks`: each process of a scenario runs in a child that is really SIGKILLed
  (agentcore.harness.kill), which needs real files (a folder of the scenario's own when none is
  given), cannot share merged states (agentcore.harness.merge) and costs its work as `costs_as`'s.
- `title`: the words the dashboard shows for it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CrashModel:
    name: str
    title: str
    disk: str  # "memory" or "power-cut"
    forks: bool = False
    costs_as: str = ""  # the model whose uninterrupted run's work this one's is counted as ("": its own)


CRASH_MODELS: dict[str, CrashModel] = {
    m.name: m
    for m in (
        CrashModel("panic", "panic: an exception; all the process wrote survives", "memory"),
        CrashModel("power-cut", "power-cut: only what was synced survives", "power-cut"),
        CrashModel("kill", "kill: SIGKILL; all the process wrote survives", "memory", forks=True, costs_as="panic"),
    )
}
NAMES = tuple(CRASH_MODELS)  # agentcore.config's CRASH_MODELS: the names a Config takes
