"""Every write of the dashboard, by concern: launch, chunks, recovery, lifecycle, questions,
timelines, audits, users, export_files; the work queue (sweeps/workqueue/: leases, message stamps,
publishing, the watchdog's queue rules) is theirs to call. Reads are sweeps.selectors'
(and sweeps.plan's, sweeps.replay's, which write nothing).

Rules:
- Keyword-only functions taking IDs or plain values; views, tasks and commands call these and
  nothing else writes. Each is idempotent: a repeated call (a redelivered task, a double click)
  changes nothing the second time.
- Work (agentcore playing scenarios) happens outside transactions; each store is one short
  transaction opened by a conditional UPDATE (`... WHERE stored = false`, a status edge taken by
  sweeps.models.take), so two workers racing on one chunk or one question store it once: the
  loser's UPDATE touches no row and it writes nothing.
- Refusals are sweeps.errors': a BadRequest for input (a PlanTooBig for a sweep too big), an
  UnusableState for a stored value a page cannot read. The broker's and the database's errors go up
  as they are (the tasks and the watchdog retry on them; sweeps.errors.reaching says them for pages
  and commands).
- "Done" is read from the database (every chunk stored, no question left unresolved), never from
  a counter that a killed worker could leave wrong (lifecycle.sweep_finalize).
- Tasks are enqueued with `transaction.on_commit` through workqueue.publish, by name: a worker never sees
  an ID before its row exists, and the services never import sweeps.tasks. The one exception, the
  lease rule (workqueue.leases.requeue_lapsed), publishes inside its transaction, whose rows exist already:
  a worker that gets the message first waits for their locks.
- Lost messages are found by the watchdog's leader: chunks and audit units whose lease ran out with
  their worker (workqueue.leases, workqueue.watchdog's chunks_requeue_lapsed and
  audit_units_requeue_lapsed) within
  seconds, and a sweep or audit that lost messages no worker held (recovery.sweeps_resume_stalled,
  audits.audits_resume_stalled).

Import order, no cycles: the work queue's floor (sweeps.workqueue's messages, leases, publish,
watchdog) <- lifecycle <- chunks <- questions; launch, recovery, timelines; recovery <- audits;
workqueue.publish <- export_files. The queue's keeper (workqueue/keeper.py) calls recovery and audits.
"""
