"""The work queue: what is queued (message stamps), who holds what (leases), publishing the tasks,
the watchdog's rules for lost work, the lease keeper and its leader election, the Celery signal
handlers of a worker, and starting worker processes.

Rules:
- The database says what is queued and who holds it; the broker only wakes workers.
- The Celery app is the current one (celery.current_app, as a reusable Django app reaches it):
  nothing here imports the project package (sweepsite), which creates and configures the app.
- Two floors, no import circle. The queue's floor, which the services import and which imports no
  service: messages <- leases; messages <- publish; leases, messages, publish <- watchdog; workers.
  The worker's floor, which calls the services' stall rules (they decide on a sweep's or an
  audit's rows, so they are services: services/recovery.py, services/audits.py): keeper (over the
  services and watchdog) <- signals (over keeper and sweeps/health.py), imported by sweeps/apps.py.
"""
