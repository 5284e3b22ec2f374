"""agentcore's own errors: one base class a caller can catch for anything agentcore refuses.

Rules:
- Pure stdlib, importing nothing of agentcore: every module may import it.
- Each kind of error is defined beside the code that raises it, on these bases (agentcore.jobs.
  JobError, agentcore.durable.checkpoint.CheckpointError, agentcore.harness.disk.OverBudget); a bad
  input is a ValueError too, so `except ValueError` keeps catching it.
- Input agentcore refuses raises BadInput (a value out of range, a chunk its configuration never
  reaches); a name it does not know (a design, a bug, a tracker mode or fault, a world model, a
  format, a condition's value) raises ConfigError. A plain ValueError, TypeError or KeyError out of
  agentcore is a programming error, never one of these.
"""

from __future__ import annotations


class AgentcoreError(Exception):
    """Anything agentcore refuses or cannot do; the message says what and where."""


class BadInput(AgentcoreError, ValueError):
    """Input agentcore cannot use (a job, a configuration): a ValueError as well."""


class ConfigError(BadInput):
    """A configuration (a design, a tracker mode, a condition) agentcore does not know."""
