"""agentcore: a durable agent loop, stand-ins for the world it acts on, and a crash sweep.

Pure Python, standard library only; it never imports Django. Where each concept lives:
keys.py (the idempotency key), checkpoint.py (the checkpoint store), disk.py (the simulated disks
and what a crash leaves of them: panic, power-cut), kill.py (the kill crash model), crash.py (crash points),
world.py (tracker, tool server, person), model.py (the model), jobs.py (job files), limits.py (every limit),
ladder.py (settling unknown outcomes), designs.py (the designs compared), loop.py (the loop engine),
config.py (configurations and the chapter's table), state.py (a scenario's world and its durable
state), scenario.py (playing one scenario), trackerfault.py (a tracker that can crash, in a
scenario), chunks.py (a first point's scenarios, resume, replay), sweep.py (the sweep and its worker
processes), records.py (the scenario record and table row), report.py (table formats), audit.py
(every design under every world model, with verdicts and witnesses), cli.py (the command line).
"""

from agentcore.durable.checkpoint import CheckpointError, FileCheckpoint
from agentcore.durable.designs import DESIGNS, Design
from agentcore.durable.keys import key, new_run_id
from agentcore.harness.crash import Crash, CrashPlan, Kind
from agentcore.harness.sweep import TABLE, Config, table_configs
from agentcore.jobs import Job, JobError
from agentcore.records import ScenarioRecord, TableRow

__all__ = [
    "DESIGNS", "TABLE", "CheckpointError", "Config", "Crash", "CrashPlan", "Design", "FileCheckpoint",
    "Job", "JobError", "Kind", "ScenarioRecord", "TableRow", "key", "new_run_id", "table_configs",
]
