"""An audit's rows: the audit and its units (the rules of sweeps.models hold: status edges as data,
`take` the one way a status is written)."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from sweeps.limits import LEASE_HOLDER_CHARS


class Audit(models.Model):
    """An audit (agentcore.harness.audit) of a job: each selected design x tracker mode under each selected
    world, at depth 2 with agentcore.checker.worlds.RUNS job runs, on the job and its variants. Its units hold
    only counts and witness candidates; "done" is a fact of the database (every unit stored), and the
    verdicts (with each broken subject's witness, replayed once) are cached by its finish."""

    class Status(models.TextChoices):
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    EDGES = {
        Status.RUNNING: frozenset({Status.DONE, Status.FAILED}),
        Status.FAILED: frozenset({Status.RUNNING, Status.FAILED}),  # resume; a later failure's message
        Status.DONE: frozenset(),
    }

    job_name = models.CharField(max_length=200)
    job_source = models.TextField(help_text="the job file's JSON text")
    designs = models.JSONField(help_text="design names, in the order of the verdicts")
    trackers = models.JSONField(help_text="tracker modes")
    worlds = models.JSONField(help_text="world model names, in agentcore.checker.worlds.WORLDS' order")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.RUNNING, db_index=True)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Cached by the finish: {subject name: {"world", "variant", "record", "events", "needed", "link", "lines"}}
    witnesses = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"audit {self.pk} ({self.job_name}, {self.status})"


class AuditUnit(models.Model):
    """One (world, design, tracker mode) of an audit over every variant:
    agentcore.harness.audit.sweep_unit's Cell, stored once (`stored` false -> true by a conditional
    UPDATE), never its scenarios."""

    audit = models.ForeignKey(Audit, on_delete=models.CASCADE, related_name="units")
    world = models.CharField(max_length=40)
    design = models.CharField(max_length=100)
    tracker = models.CharField(max_length=10)
    stored = models.BooleanField(default=False)
    attempts = models.PositiveSmallIntegerField(default=0)
    scenarios = models.PositiveIntegerField(default=0)
    ok = models.PositiveIntegerField(default=0)
    expected = models.PositiveIntegerField(default=0)
    breaks = models.PositiveIntegerField(default=0)
    skipped = models.CharField(max_length=200, blank=True, help_text="why it was not swept")
    # At most agentcore.checker.judge.CANDIDATES: [{"promise", "seen", "variant", "record"}] (record: to_dict()).
    candidates = models.JSONField(default=list, blank=True)
    stored_at = models.DateTimeField(null=True, blank=True)
    # Its lease and its current message, as a chunk's (services/leases.py, services/messages.py).
    holder = models.CharField(max_length=LEASE_HOLDER_CHARS, blank=True)
    lease_until = models.DateTimeField(null=True, blank=True)
    queued = models.BigIntegerField(null=True, blank=True)
    priority = models.PositiveSmallIntegerField(default=0)
    received = models.BigIntegerField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["audit", "world", "design", "tracker"], name="audit_unit_identity")
        ]
        indexes = [
            models.Index(fields=["audit", "stored"]),
            models.Index(
                fields=["lease_until"], condition=models.Q(lease_until__isnull=False), name="audit_unit_leased"
            ),
        ]
        ordering = ["audit", "id"]
