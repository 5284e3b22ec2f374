"""Every limit agentcore enforces, in one place (the dashboard imports the ones it shares).

Rules:
- A limit is named for what it bounds: a job file's size, its JSON nesting and its calls; a
  sweep's depth (crash once, or once and again) and its job runs in sequence.
- Checks read these names; no module retypes a number that is here.
"""

from __future__ import annotations

# Job files (agentcore.jobs): a hostile file costs little.
MAX_JOB_BYTES = 1_000_000  # a job file's size in bytes
MAX_NESTING = 20  # levels of JSON nesting in a job file
MAX_CALLS = 100  # calls in one job

# Sweeps (agentcore.sweep): how deep a sweep crashes, and how many job runs go in sequence.
SWEEP_DEPTHS = (1, 2)  # 1: crash once; 2: crash once and again in the restart
MIN_SWEEP_DEPTH, MAX_SWEEP_DEPTH = SWEEP_DEPTHS[0], SWEEP_DEPTHS[-1]
MIN_RUNS, MAX_RUNS = 1, 100  # job runs in sequence against one tracker

# The loop (agentcore.loop): attempts at settling one call on the resolution ladder.
MAX_ATTEMPTS = 3
