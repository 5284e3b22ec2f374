"""The port: how any Python agent loop is swept as agentcore's own designs are.

A target is a callable named `package.module:attribute` that runs one job run to its end,
resuming from whatever it saved, and takes a `Handle` (agentcore.port.handle): the scripted model,
the job's tools on the tracker stand-in, a store, `point(kind, detail)`, its thread ID and process
number. A fork server in the target's own interpreter (agentcore.port.server) imports it once and
forks a child per process of each scenario; the driver (agentcore.port.sweep) plans the scenarios
from the points' labels (agentcore.port.labels) and counts what they did.

Rules: stdlib only (a runtime's adapter is an optional extra that imports it); nothing here is
imported by `import agentcore`.
"""

from __future__ import annotations

from agentcore.port.handle import Handle, ToolError, instrument
from agentcore.port.sweep import TargetError, TargetSweep, sweep_target

__all__ = ["Handle", "TargetError", "TargetSweep", "ToolError", "instrument", "sweep_target"]
