"""agentcore: a durable agent loop, stand-ins for the world it acts on, a crash sweep and its checker.

Pure Python, standard library only; it never imports Django. This module is the public face: the
dashboard (sweeps/, sweepsite/), the command line and the benchmarks take every name they use from
here (the vocabulary modules `jobs`, `limits`, `records`, `report`, `designs` and `faults` whole, the
rest by name); tests of agentcore may reach inside. Where each concept lives:

- shared vocabulary (top level): jobs.py (job files), limits.py (every limit), conditions.py (each
  sweep condition declared once), crashmodels.py (the crash models, as data), config.py
  (configurations and the chapter's table), errors.py (agentcore's exceptions), records.py (the
  scenario record and table row), report.py (table formats), cli.py (the command line).
- durable/, the durable loop: loop.py (the loop engine), checkpoint.py (the checkpoint store),
  keys.py (the idempotency key), ladder.py (settling unknown outcomes), designs.py (the designs compared).
- standins/, the world's stand-ins: tracker.py (the tracker, its modes and faults), tools.py (the
  tool server, flaky or not), person.py (the scripted and the queue person), model.py (the model),
  faults.py (the spellings of the world's faults).
- harness/, the runner: crash.py (crash points and plans), disk.py (the simulated disks and what a
  crash leaves of them), files.py (a scenario's folder and disk), kill.py (the kill crash model's
  child processes), state.py (a scenario's world and durable state), scenario.py (playing one
  scenario; the truth it is checked against), trackerfault.py (a tracker that can crash), chunks.py
  (a first point's scenarios, resume, replay), merge.py (merging equal states), sweep.py (the
  sweep), pool.py (its worker processes), audit.py (the audit's sweeps and witness search).
- checker/, judging what the runner played (it imports nothing of the runner): effects.py (effects
  against the truth: `wrong`), worlds.py (the audit's world models), variants.py (a job's variants),
  judge.py (a scenario's outcome, the cells and verdicts), witness.py (a witness and its link),
  render.py (the audit's reports).
"""

from agentcore import jobs, limits, records, report
from agentcore.checker.judge import BREAK, CANDIDATES, EXPECTED, OK, AuditResult, Cell, Subject, judge, tally
from agentcore.checker.render import FORMATS as AUDIT_FORMATS
from agentcore.checker.render import render as render_audit
from agentcore.checker.render import to_dict as audit_dict
from agentcore.checker.render import verdict, witness_lines
from agentcore.checker.variants import VARIANTS, Variant, variants
from agentcore.checker.witness import Witness, link, needed
from agentcore.checker.worlds import EXCUSES, KILL_NOTE, RUNS, TTL, WORLDS, World, world
from agentcore.conditions import CONDITIONS, Condition
from agentcore.conditions import DEFAULTS as CONDITION_DEFAULTS
from agentcore.conditions import NAMED as CONDITIONS_BY_NAME
from agentcore.config import PERSONS, TABLE, Config, config_name, table_configs
from agentcore.config import conditions as conditions_words
from agentcore.crash import Crash, CrashPlan, Kind
from agentcore.crashmodels import CRASH_MODELS, CrashModel
from agentcore.durable import designs
from agentcore.durable.checkpoint import CheckpointError, FileCheckpoint
from agentcore.durable.designs import DESIGNS, Design
from agentcore.durable.keys import key, new_run_id
from agentcore.errors import AgentcoreError, BadInput, ConfigError
from agentcore.harness.audit import AUDIT_DEPTHS, audit, shortest, sweep_unit, unit_configs
from agentcore.harness.chunks import Chunk, ChunkResult, Resumed, play_from_note, points, replay, resume, run_chunk
from agentcore.harness.disk import OverBudget, WorkBudget
from agentcore.harness.scenario import Options, Played, play, run_steps
from agentcore.harness.state import Durable
from agentcore.harness.sweep import DISKS, SweepResult, each_record, plan_chunks, run_chunks, sweep
from agentcore.jobs import BUILTIN, Job, JobError, carried_bytes
from agentcore.jobs import parse as parse_job
from agentcore.limits import MAX_ATTEMPTS
from agentcore.records import COLUMNS, DEPTH_COLUMNS, ScenarioRecord, TableRow
from agentcore.records import columns as table_columns
from agentcore.report import TITLES as TABLE_TITLES
from agentcore.report import render as render_table
from agentcore.standins import faults
from agentcore.standins.faults import MODELS
from agentcore.standins.tracker import MODES

__all__ = [
    "AUDIT_DEPTHS",
    "AUDIT_FORMATS",
    "BREAK",
    "BUILTIN",
    "CANDIDATES",
    "COLUMNS",
    "CONDITIONS",
    "CONDITIONS_BY_NAME",
    "CONDITION_DEFAULTS",
    "CRASH_MODELS",
    "DEPTH_COLUMNS",
    "DESIGNS",
    "DISKS",
    "EXCUSES",
    "EXPECTED",
    "KILL_NOTE",
    "MAX_ATTEMPTS",
    "MODELS",
    "MODES",
    "OK",
    "PERSONS",
    "RUNS",
    "TABLE",
    "TABLE_TITLES",
    "TTL",
    "VARIANTS",
    "WORLDS",
    "AgentcoreError",
    "AuditResult",
    "BadInput",
    "Cell",
    "CheckpointError",
    "Chunk",
    "ChunkResult",
    "Condition",
    "Config",
    "ConfigError",
    "Crash",
    "CrashModel",
    "CrashPlan",
    "Design",
    "Durable",
    "FileCheckpoint",
    "Job",
    "JobError",
    "Kind",
    "Options",
    "OverBudget",
    "Played",
    "Resumed",
    "ScenarioRecord",
    "Subject",
    "SweepResult",
    "TableRow",
    "Variant",
    "Witness",
    "WorkBudget",
    "World",
    "audit",
    "audit_dict",
    "carried_bytes",
    "conditions_words",
    "config_name",
    "designs",
    "each_record",
    "faults",
    "jobs",
    "judge",
    "key",
    "limits",
    "link",
    "needed",
    "new_run_id",
    "parse_job",
    "plan_chunks",
    "play",
    "play_from_note",
    "points",
    "records",
    "render_audit",
    "render_table",
    "replay",
    "report",
    "resume",
    "run_chunk",
    "run_chunks",
    "run_steps",
    "shortest",
    "sweep",
    "sweep_unit",
    "table_columns",
    "table_configs",
    "tally",
    "unit_configs",
    "variants",
    "verdict",
    "witness_lines",
    "world",
]
