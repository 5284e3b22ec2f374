"""What the dashboard stores: sweeps, their first crash points (the chunks), scenarios, questions.

Rules:
- A scenario row is one agentcore ScenarioRecord. Its identity (sweep, config, first point, second
  point) is unique, so storing a chunk twice is a no-op: a killed worker loses and doubles nothing.
  `second_point` is 0 for a once scenario (NULLs would not collide in a unique constraint).
  A waiting scenario's outcome columns (duplicates to calls_plus) are 0 until its resume stores
  its outcome: its tallies so far are none (it has not made its calls yet); pages show "—".
- A chunk is a (sweep, config, first point) crash point. `stored` is set in the same transaction
  that stores its scenario rows, so "sweep done" is a fact read from the database: every chunk
  stored and no question open. In a queue sweep, an answer can take a once scenario's restart to
  points it had not reached: their twice scenarios are a later chunk of the same first point
  (`second_from` > 0), made in the transaction that stores the resume, so it is made once.
- A sweep's configurations are a JSON list of {"name", "design", "tracker"}; `config` columns
  index into it. The job is stored as its JSON text, so a sweep can always be re-run or resumed.
- A question holds what the person needs (the call, its key, what the ladder tried) and the
  scenario's durable state while it waits (checkpoint files and tracker records).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Sweep(models.Model):
    class Status(models.TextChoices):
        RUNNING = "running"
        WAITING = "waiting"  # every chunk stored, questions open
        DONE = "done"
        FAILED = "failed"
        CANCELLED = "cancelled"  # queued chunks are skipped; stored rows stay; resume goes on

    class Person(models.TextChoices):
        SCRIPTED = "scripted"
        QUEUE = "queue"

    job_name = models.CharField(max_length=200)
    name = models.CharField(max_length=200, blank=True, help_text="the person's name for this sweep")
    notes = models.TextField(blank=True, max_length=10_000)
    job_source = models.TextField(help_text="the job file's JSON text")
    configs = models.JSONField(help_text='[{"name", "design", "tracker"}, ...]')
    depth = models.PositiveSmallIntegerField(default=2)
    runs = models.PositiveSmallIntegerField(default=1)
    person = models.CharField(max_length=10, choices=Person.choices, default=Person.SCRIPTED)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.RUNNING, db_index=True)
    error = models.TextField(blank=True)
    total_chunks = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # A token from the launch form: submitting the same form twice makes one sweep.
    request_token = models.CharField(max_length=64, null=True, blank=True, unique=True)
    # Cached by the idempotent finalize step: the table rows as agentcore TableRow dicts.
    table = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"sweep {self.pk} ({self.job_name}, {self.status})"


class Chunk(models.Model):
    """A first crash point of one configuration: the unit of work a task runs."""

    sweep = models.ForeignKey(Sweep, on_delete=models.CASCADE, related_name="chunks")
    config = models.PositiveSmallIntegerField()
    first_point = models.PositiveIntegerField()
    kind = models.CharField(max_length=40)
    label = models.CharField(max_length=300)
    # A later chunk (made after an answer): the twice scenarios at restart points second_from to
    # second_to, which the once scenario's restart reaches with `answers`. 0: the first chunk.
    second_from = models.PositiveIntegerField(default=0)
    second_to = models.PositiveIntegerField(default=0)
    answers = models.JSONField(default=dict, blank=True, help_text="question ID -> it happened")
    stored = models.BooleanField(default=False)
    scenarios = models.PositiveIntegerField(default=0)
    saves = models.PositiveIntegerField(default=0)
    attempts = models.PositiveSmallIntegerField(default=0)
    stored_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["sweep", "config", "first_point", "second_from"],
                                               name="chunk_identity")]
        indexes = [models.Index(fields=["sweep", "stored"])]
        ordering = ["sweep", "config", "first_point"]


class Scenario(models.Model):
    class Status(models.TextChoices):
        DONE = "done"
        WAITING = "waiting"
        FAILED = "failed"

    # No index of its own: every index below starts with the sweep.
    sweep = models.ForeignKey(Sweep, on_delete=models.CASCADE, related_name="scenarios", db_index=False)
    config = models.PositiveSmallIntegerField()
    design = models.CharField(max_length=100)
    tracker = models.CharField(max_length=10)
    job = models.CharField(max_length=200)
    runs = models.PositiveSmallIntegerField(default=1)
    first_point = models.PositiveIntegerField()
    first_kind = models.CharField(max_length=40)
    first_label = models.CharField(max_length=300)
    second_point = models.PositiveIntegerField(default=0)
    second_kind = models.CharField(max_length=40, blank=True)
    second_label = models.CharField(max_length=300, blank=True)
    duplicates = models.PositiveIntegerField(default=0)
    missing = models.PositiveIntegerField(default=0)
    asks = models.PositiveIntegerField(default=0)
    approvals = models.PositiveIntegerField(default=0)
    model_calls = models.PositiveIntegerField(default=0)
    calls_plus = models.IntegerField(default=0)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.DONE)
    # Sweeps are deterministic: a timeline is replayed and cached here when first asked for.
    timeline = models.JSONField(null=True, blank=True)
    effects = models.JSONField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["sweep", "config", "first_point", "second_point"],
                                    name="scenario_identity")
        ]
        # Two indexes only: each one costs every one of a sweep's ~10,000 inserted rows (five more, one
        # per list filter, took storing the whole table from 0.27 s to 0.39 s, measured). The list's
        # filters walk this one in the list's order (a design or tracker filter says which configs);
        # test_perf holds them to 150 ms.
        indexes = [
            # Covers the table's and the heatmap's GROUP BYs (index-only scans over 100,000 rows).
            models.Index(fields=["sweep", "config", "first_point", "second_point", "duplicates", "missing", "asks",
                                 "calls_plus"], name="scenario_metrics"),
        ]
        ordering = ["sweep", "config", "first_point", "second_point"]


class Question(models.Model):
    class Status(models.TextChoices):
        OPEN = "open"
        ANSWERED = "answered"
        RESUMED = "resumed"

    sweep = models.ForeignKey(Sweep, on_delete=models.CASCADE, related_name="questions")
    scenario = models.ForeignKey(Scenario, on_delete=models.CASCADE, related_name="questions")
    qid = models.CharField(max_length=200,
                           help_text="agentcore question ID: job run, call ID, the scenario's ask number")
    call = models.JSONField()
    key = models.CharField(max_length=64, blank=True)
    tried = models.TextField(blank=True)
    durable = models.JSONField(help_text="the scenario's checkpoint files, tracker records and crash plan")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN, db_index=True)
    answer = models.BooleanField(null=True, blank=True, help_text="True: it happened")
    truth = models.BooleanField(null=True, blank=True, help_text="what the tracker's records say")
    answered_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    answered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["scenario", "qid"], name="question_identity")]
        indexes = [models.Index(fields=["sweep", "status"])]
        ordering = ["created_at", "id"]
