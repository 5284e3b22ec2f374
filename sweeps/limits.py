"""Every limit and threshold of the dashboard, in one place (standard library only: settings.py reads it).

Rules:
- A number that bounds input, work or waiting lives here, named for what it bounds; the modules that
  use it import it. Nothing else writes a bound as a literal.
- agentcore's own bounds stay in agentcore.limits (job size, JSON nesting, calls, sweep depths, runs);
  the dashboard takes them from there, or narrows them here (runs) saying why.
"""

from __future__ import annotations

from agentcore import limits as agentlimits

# --- what a launch may ask for -----------------------------------------------------------------

# Crash depth (1: crash once; 2: and again in the restart; 3: and in the second restart too), as
# agentcore's. Depth 3 needs the scripted person (agentcore: a queue person pauses depth 2 at most).
DEPTHS = agentlimits.SWEEP_DEPTHS
# Job runs in sequence. agentcore's CLI takes up to 100; the dashboard stops at 10: a 10-run table is
# about 814,000 scenario rows already (the planned size shows it before launching).
MAX_RUNS = 10
MAX_CONFIGS = 64
# A sweep's size grows with (crash points)^2 per configuration: past this many first points in all,
# launching is refused with a message instead of planning for minutes (the 11-row table has 412).
MAX_CHUNKS = 5000
# A depth-3 sweep grows as (crash points)^3 per configuration, which MAX_CHUNKS does not bound: past
# this many planned scenarios (sweeps.plan's count or estimate) it is refused before anything is
# stored. The triage table at depth 3 is 167,971; the largest depth-2 sweep (a 10-run table) 814,560.
MAX_DEPTH3_SCENARIOS = 1_000_000
# What a sweep carries: its planned scenarios times the bytes of the job each scenario's states carry
# (agentcore.jobs.carried_bytes: the calls' arguments and the final text, copied into every
# checkpoint, tracker record and model history). A worker's memory and time grow with it, not with
# the scenarios alone (docs/benchmarks.md: "A sweep's job bytes"). Past this many bytes a launch is
# refused before anything is stored; it admits every sweep of the triage job (a 10-run table, depth
# 3 at its bound) and the table with up to about 100 KB of calls.
MAX_SWEEP_JOB_BYTES = 1_000_000_000
# A sweep's name and notes (the person's words), and a configuration's name.
MAX_NAME = 200
MAX_NOTES = 10_000
# Job file uploads larger than this are refused by the form, as agentcore's parser refuses them.
MAX_JOB_BYTES = agentlimits.MAX_JOB_BYTES
# A request body (Content-Length) longer than this is answered 413 before it is read: the launch
# form's job file at its limit, plus the rest of the form (notes of MAX_NOTES characters, up to 4
# UTF-8 bytes each and percent-encoded 3 times that, the configurations, multipart headers).
MAX_FORM_OVERHEAD_BYTES = 256 * 1024
MAX_REQUEST_BYTES = MAX_JOB_BYTES + MAX_FORM_OVERHEAD_BYTES
# Truncation of stored strings to their columns' sizes (models.py declares the same sizes).
KIND_CHARS = 40
LABEL_CHARS = 300
JOB_NAME_CHARS = 200
QID_CHARS = 200
KEY_CHARS = 64
ERROR_CHARS = 2000
REQUEST_TOKEN_CHARS = 64
# A lease holder's name: the worker's host name and process ID (workqueue/leases.py).
LEASE_HOLDER_CHARS = 200
# A sweep's crash model and each of the world's faults as spelled (agentcore.standins.faults: "ttl:10000",
# "deny:0.125"; a longer spelling is refused, not cut).
CONDITION_CHARS = 20
MAX_SEED = 2**31 - 1  # what every database's integer column takes

# --- URL and form parameters -------------------------------------------------------------------

MAX_POINT = 1_000_000  # far beyond any sweep; keeps integers inside what every database takes
MAX_PAGE = 1_000_000
SWEEPS_PER_PAGE = 20
SCENARIOS_PER_PAGE = 50
QUESTIONS_PER_PAGE = 25
MAX_URL_CHARS = 2000  # a `back` or `next` parameter (a path of this site)
COMPARE_CHOICES = 200  # the latest sweeps offered in the compare page's selects

# --- the page cache (sweeps/pagecache.py) ------------------------------------------------------

# An entry is one part of one page of one version of a sweep's rows; a done sweep's never changes, an
# older version's is never asked for again: a day keeps what people come back to. The file cache
# drops a third of its entries, at random, past PAGE_CACHE_ENTRIES (the biggest entry, a 3-run
# table's second heatmap, is about 1 MB before the cache's compression).
PAGE_CACHE_SECONDS = 24 * 3600
PAGE_CACHE_ENTRIES = 5000

# --- dealing work to task messages -------------------------------------------------------------

# A chunk started this many times without being stored (killed workers, a chunk that kills its
# process) fails its sweep with a message instead of being redelivered forever.
MAX_CHUNK_ATTEMPTS = 5
# Chunks per task message: a chunk takes a few ms to play; up to 8 per message keep the broker's
# round trip, the worker's per-task database connection and the store's transaction a small share
# of the work. A message's chunks are stored together (one transaction).
MAX_CHUNKS_PER_TASK = 8
# Messages shrink toward the end of a sweep (workqueue.publish.deal): each takes about 1/32 of the
# estimated work not dealt yet, and none less than 1/128 of all of it (unless chunks run out). With
# 4 workers the last messages are about 3% of a worker's share, so workers finish within that of
# each other (messages of equal size leave them further apart). No message is bigger than 1/32: a
# dead worker's chunks, queued again ahead of the queue, wait at most for the live workers' current
# messages, well inside the 5 s goal (a bigger first message would not be).
MESSAGE_SHARE = 32
TAIL_SHARE = 1 / 128
# Message priorities, 0 (first) to PRIORITIES - 1 (workqueue/publish.py): as many lists as Redis is
# told to keep (settings), one digit in the filesystem broker's sorted names.
PRIORITIES = 10
# A fair share of the workers per owner (workqueue.publish.priority_for): a message's priority rises one
# level each time the owner's work already queued ahead of it (estimated rows) doubles past
# SHARE_ROWS, so another owner's small sweep goes ahead of the tail of a big one instead of waiting
# for all of it. A unit of an audit weighs as AUDIT_UNIT_ROWS rows (a unit plays for about as long
# as a worker stores that many rows).
SHARE_ROWS = 2_000
AUDIT_UNIT_ROWS = 2_000

# --- the planned size, before launching --------------------------------------------------------

# Counting a sweep's scenarios exactly plays every first crash point once, up to the end of its
# restart (a depth-2 chunk has one twice scenario per point the restart reaches): about n^2 steps
# for a configuration of n points. Up to PLAN_BUDGET steps in all, every point is played and the
# count is exact (the chapter's table fits in it); past it, each configuration plays
# evenly spaced first points (at least PLAN_MIN_SAMPLES) and the others are interpolated: "about".
PLAN_BUDGET = 40_000
# A step's time grows with the bytes of the job it carries (see MAX_SWEEP_JOB_BYTES): a job carrying
# more than this many gets the budget in proportion, so that planning a job to refuse it costs
# seconds, not minutes (docs/benchmarks.md: "Planning a big job").
PLAN_STEP_BYTES = 10_000
PLAN_MIN_SAMPLES = 8
# The launch form's time estimate when no sweep has finished on this install yet: scenarios per
# second, a low figure of those measured on a 2-core machine (docs/benchmarks.md: "Sweep rates");
# else the latest RATE_SWEEPS finished sweeps.
DEFAULT_RATE = 2000.0
RATE_SWEEPS = 20

# --- work one request may do ---------------------------------------------------------------------

# A request that plays scenarios (a witness, a stored scenario's timeline, the planned size, a
# launch's planning) counts its work in agentcore's steps before it starts (sweeps.cost: a crash
# point, a block written, a power-cut disk state looked at; one uninterrupted run counted without
# listing the states), refuses past its bound, and stops there if the count was wrong. At the
# slowest step rate seen (a power cut without fsync, whose states multiply with each job run) a
# bound of 400,000 holds a web worker 3 s at most, a tenth of gunicorn's timeout; the audit's witness
# links (2 job runs) are a few thousand steps (docs/benchmarks.md: "Work one request may do").
WITNESS_STEPS = 400_000
# A stored scenario's timeline is played again as a witness is (sweeps.replay.scenario_replay).
TIMELINE_STEPS = WITNESS_STEPS
# The planned size plays each configuration's run and some of its restarts (PLAN_BUDGET); only
# people who may launch ask for it, and each answer is cached, so it may take twice a witness's
# time (docs/benchmarks.md: "Work one request may do" gives the steps of the chapter's table and its
# bigger variants).
PLAN_STEPS = 1_000_000
# A launch plays each configuration's run once to list its chunks (and at depth 3 the planned size).
LAUNCH_STEPS = PLAN_STEPS

# --- progress and stalls -----------------------------------------------------------------------

# Leases (workqueue/leases.py): a worker takes a chunk's lease for LEASE_SECONDS when it receives
# the chunk's message and when it claims the chunk, and the process playing it renews it every
# LEASE_RENEW_SECONDS until its task ends; each worker's main process renews a lease of its own, and
# the watchdog's leader lease, on the same rounds. A whole worker SIGKILLed stops renewing: its
# chunks' leases and its own run out LEASE_SECONDS later at most, and the leader (the one worker
# holding the leader lease) queues them again ahead of the queue on its next round; a worker takes
# them when its current message is done. Kill to re-run: LEASE_SECONDS + LEASE_RENEW_SECONDS + a
# message's time (the goal is 5 s, tests/sweeps/test_faults.py; docs/benchmarks.md: "Kill to
# re-run"); the leader's own death costs no more, its lease runs out as fast. Six renewals per
# lease: a round delayed by a loaded machine or a database lock for up to 1.25 s costs nothing, a
# longer one only runs a chunk twice (keyed writes store it once).
# Each round is two small UPDATEs per worker (its lease, the leader's; a worker that does not lead
# also reads whether the leader's row exists) and, per process while it plays a chunk or an audit
# unit, one UPDATE (on PostgreSQL its subquery locks the rows, skipping any another transaction
# holds); the leader also reads the lapsed chunks and units (two indexed SELECTs).
LEASE_SECONDS = 1.5
LEASE_RENEW_SECONDS = 0.25
# A message lost before any lease named it (workqueue/messages.py): a worker that took it from the
# broker died before its receipt, or the broker came back empty. The leader counts it lost once a
# message queued after it (at its priority or a later one) was received this long ago, or once the
# queue has read empty this long. Longer than a receipt takes after a worker takes a message (ms)
# and than one publisher's batch takes to leave, with room for a loaded machine; short enough that
# with a message's time and a round it stays well inside the 5 s goal.
LOST_MESSAGE_SECONDS = 1.0
# The stall watchdog's default (settings.SWEEPSITE_STALL_SECONDS, env SWEEPSITE_STALL_SECONDS), for
# messages no worker held a lease for: a running sweep that stored no chunk and had no chunk under a
# lease for this many seconds while the task queue is empty has lost messages (a broker restarted empty); its
# missing chunks are queued again by the leader. Killed workers are the leases' business (above),
# not this period's. `manage.py sweep` uses it when the setting is 0.
STALL_SECONDS = 30.0
# The sweep page offers its resume button to a running sweep that stored nothing for this long:
# two watchdog periods, so that the watchdog (where it runs) has had its turn before a person is
# asked to act.
RESUME_OFFER_SECONDS = 2 * STALL_SECONDS
# The ETA is shown once this share of the work is stored and this many seconds have passed (before,
# the workers' start and the first messages' round trips dominate), as a range around the estimate.
ETA_MIN_SHARE = 0.15
ETA_MIN_SECONDS = 3.0
ETA_RANGE = (0.7, 1.4)
# The rate is read over the last this many seconds (a sweep resumed after a pause, or one that has
# slowed, is not judged by its start).
ETA_WINDOW = 60.0
# `manage.py sweep` without --workers: how long each of its 3 rounds of asking (Celery's remote
# control) for a worker on the queue waits for answers; and how often it reads the progress.
WORKER_PING_SECONDS = 1.0
WORKER_PING_ROUNDS = 3
POLL_SECONDS = 0.05
# `/healthz` (sweeps.health): how long it waits for the broker's connection and for the workers'
# answers; and a PostgreSQL connection's timeout (settings: an unreachable host fails in seconds).
HEALTH_PING_SECONDS = 1.0
DATABASE_CONNECT_SECONDS = 5
# Workers `manage.py sweep --workers N` started get this long to finish their task when stopped.
WORKER_STOP_SECONDS = 30

# --- logins and users --------------------------------------------------------------------------

# django-axes: this many failed logins for one username from one address lock that pair out, for
# LOCKOUT_MINUTES (0: until staff unlock it): 5 keeps a person's typos well clear and a guesser at
# 5 tries per quarter hour.
LOGIN_FAILURES = 5
LOCKOUT_MINUTES = 15
# And this many failed logins from one address, whatever the usernames, within LOCKOUT_MINUTES lock
# out that address for every username (sweepsite/lockout.py): a guesser trying 4 passwords at each of
# many usernames stayed under the pair's bound for ever. An office behind one address does not reach
# it by typos: a successful login clears that person's own failures, so only failures nobody followed
# with the right password count, and 30 of those in a quarter hour is 6 people locked out of their own
# username at once. Behind a proxy every client has its address: then one guesser locks everyone out
# for LOCKOUT_MINUTES, the price of bounding the guesses.
ADDRESS_LOGIN_FAILURES = 30
# Unfinished sweeps (running, or waiting for answers) one user may have at once: a launch or a
# resume beyond it is refused with a message (settings.SWEEPSITE_MAX_RUNNING; 0: no limit). The
# workers are shared; a few sweeps each already keep both cores of the machine busy.
MAX_RUNNING_PER_USER = 3

# --- exports -----------------------------------------------------------------------------------

# The table's and the comparison's exports are made in the request: one row per configuration
# (MAX_CONFIGS at most; a comparison has at most both sweeps' configurations), a few kilobytes. A
# table with more rows than this is refused rather than made in a web process.
MAX_SYNC_EXPORT_ROWS = 2 * MAX_CONFIGS
# Scenario rows are exported into a file by a worker (services/export_files.py), read in pages of
# this many rows (each page its own short query: no read held open across the whole export).
EXPORT_PAGE_ROWS = 2000
# The export's progress (rows written) is stored every this many rows, and with it the time its
# stall is judged by: about twice a second at the rate a 2-core machine writes them
# (docs/benchmarks.md: "Exports").
EXPORT_PROGRESS_ROWS = 20_000
# An export not ready whose progress has not moved for this long is taken for lost (its worker or
# its message gone): the next request for it queues it again. Far above a progress step's time on a
# loaded machine.
EXPORT_STALL_SECONDS = 60.0
# The export's page reloads itself this often while the file is being made.
EXPORT_REFRESH_SECONDS = 2
# The canonical text of an export's filters (sweeps.forms.lists.ScenarioFilterForm: 18 short fields).
EXPORT_QUERY_CHARS = 1000
