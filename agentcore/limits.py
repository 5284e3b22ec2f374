"""Every limit agentcore enforces, in one place (the dashboard imports the ones it shares).

Rules:
- A limit is named for what it bounds: a job file's size, its JSON nesting and its calls; a
  sweep's depth (crash once, or once and again) and its job runs in sequence; a call's tries in one
  process, and the restarts after giving up on it.
- Checks read these names; no module retypes a number that is here.
"""

from __future__ import annotations

# Job files (agentcore.jobs): a hostile file costs little.
MAX_JOB_BYTES = 1_000_000  # a job file's size in bytes
MAX_NESTING = 20  # levels of JSON nesting in a job file
MAX_CALLS = 100  # calls in one job

# Sweeps (agentcore.harness.sweep): how deep a sweep crashes, and how many job runs go in sequence.
# 1: crash once; 2: crash once and again in the restart; 3: and in the second restart too (merged
# equal states make it affordable: agentcore.harness.merge). 2 is the chapter's, the default.
SWEEP_DEPTHS = (1, 2, 3)
MIN_SWEEP_DEPTH, MAX_SWEEP_DEPTH = SWEEP_DEPTHS[0], SWEEP_DEPTHS[-1]
DEFAULT_SWEEP_DEPTH = 2
MIN_RUNS, MAX_RUNS = 1, 100  # job runs in sequence against one tracker

# The loop (agentcore.durable.loop): tries of one call in one process (the fresh one and those settling it
# on the resolution ladder) before the process gives up on it.
MAX_ATTEMPTS = 3
# A scenario (agentcore.harness.scenario): restarts after the loop gave up on one call; giving up on it once
# more ends the scenario "failed" (a tool that never recovers).
MAX_GIVE_UP_RESTARTS = 2
