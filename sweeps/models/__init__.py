"""What the dashboard stores: sweeps, their first crash points (the chunks), scenarios, questions; audits
(sweeps.models.audits).

Rules:
- A scenario row is one agentcore ScenarioRecord. Its identity (sweep, config, first point, second point, third point)
  is unique, so storing a chunk twice is a no-op: a killed worker loses and doubles nothing. `second_point` is 0 for a
  once scenario, `third_point` for all but a depth-3 sweep's thrice scenarios (NULLs would not collide in a unique
  constraint). A waiting scenario's outcome columns (duplicates to calls_plus) are 0 until its resume stores its
  outcome: its tallies so far are none; pages show "—".
- A chunk is a (sweep, config, first point) crash point. `stored` is set in the same transaction that stores its
  scenario rows, so "sweep done" is a fact read from the database: every chunk stored and no question open. In a queue
  sweep, an answer can take a once scenario's restart to points it had not reached: their twice scenarios are a later
  chunk of the same first point (`second_from` > 0), made once (in the transaction that stores the resume).
- A sweep's configurations are a JSON list of {"name", "design", "tracker"} (`config` columns index into it); its job is
  stored as its JSON text (a sweep can always be re-run or resumed), its conditions one column per agentcore.conditions
  declaration (a fault as written, "ttl:5"; sweeps.configs checks it): every configuration of it is swept under them.
- A question holds what the person needs (the call, its key, what the ladder tried) and the scenario's durable state.
- Status transitions are data, as in h11's `_state.py`: each model with a status has EDGES, the table of allowed edges
  (source -> targets), next to its Status; `take` is the one way a status is written, a conditional UPDATE (`... WHERE
  pk = %s AND status IN (allowed sources)`) that says whether the edge was taken, so two racing writers take it once.
  An edge not in the table raises IllegalTransition (a bug, never a user error). A chunk has no status: its `stored`
  flag goes from false to true once, by the conditional UPDATE of services/chunks.py.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.db import models

from agentcore import CONDITIONS, Condition
from agentcore import conditions_words as agent_conditions
from sweeps.limits import CONDITION_CHARS, EXPORT_QUERY_CHARS, LEASE_HOLDER_CHARS, MAX_NAME, MAX_NOTES
from sweeps.models.audits import Audit, AuditUnit

__all__ = [
    "Audit",
    "AuditUnit",
    "Chunk",
    "Export",
    "IllegalTransition",
    "Lease",
    "Question",
    "Scenario",
    "Sweep",
    "take",
]


def condition_column(c: Condition) -> models.Field:
    """A condition's column, from its declaration (an open spelling has no choices: "ttl:N" takes any N)."""
    if c.type is bool:
        return models.BooleanField(default=c.default, help_text=c.help)
    if c.type is int:
        return models.PositiveIntegerField(default=c.default, help_text=c.help)
    choices = [(v, v) for v in c.values] if c.choices else None
    return models.CharField(max_length=CONDITION_CHARS, choices=choices, default=c.default, help_text=c.help)


class IllegalTransition(RuntimeError):
    """A status write along an edge its model's EDGES table does not have."""


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

    # source -> the statuses it may go to. running/waiting: chunks stored, questions open or not; failed -> failed: a
    # later failure replaces the message; done is final.
    EDGES = {
        Status.RUNNING: frozenset({Status.WAITING, Status.DONE, Status.FAILED, Status.CANCELLED}),
        Status.WAITING: frozenset({Status.RUNNING, Status.DONE, Status.FAILED, Status.CANCELLED}),
        Status.FAILED: frozenset({Status.RUNNING, Status.DONE, Status.FAILED}),  # resume; finalize
        Status.CANCELLED: frozenset({Status.RUNNING, Status.DONE, Status.FAILED}),  # resume; finalize
        Status.DONE: frozenset(),
    }

    job_name = models.CharField(max_length=200)
    name = models.CharField(max_length=MAX_NAME, blank=True, help_text="the person's name for this sweep")
    notes = models.TextField(blank=True, max_length=MAX_NOTES)
    job_source = models.TextField(help_text="the job file's JSON text")
    configs = models.JSONField(help_text='[{"name", "design", "tracker"}, ...]')
    depth = models.PositiveSmallIntegerField(default=2)
    runs = models.PositiveSmallIntegerField(default=1)
    person = models.CharField(max_length=10, choices=Person.choices, default=Person.SCRIPTED)
    # One column per condition (agentcore.conditions), where its declaration puts it in the field order.
    locals().update({c.name: condition_column(c) for c in CONDITIONS})
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

    @property
    def conditions(self) -> str:
        """The conditions in agentcore's words: "power-cut, fsync off, tracker fault: ttl:5"."""
        return agent_conditions(**{c.name: getattr(self, c.name) for c in CONDITIONS})

    @property
    def fsync_option(self) -> str:
        """fsync as the command line's option says it: "on" or "off"."""
        return "on" if self.fsync else "off"


class Chunk(models.Model):
    """A first crash point of one configuration: the unit of work a task runs."""

    sweep = models.ForeignKey(Sweep, on_delete=models.CASCADE, related_name="chunks")
    config = models.PositiveSmallIntegerField()
    first_point = models.PositiveIntegerField()
    kind = models.CharField(max_length=40)
    label = models.CharField(max_length=300)
    # A later chunk (made after an answer): the twice scenarios at restart points second_from to second_to, which the
    # once scenario's restart reaches with `answers`. 0: the first chunk.
    second_from = models.PositiveIntegerField(default=0)
    second_to = models.PositiveIntegerField(default=0)
    answers = models.JSONField(default=dict, blank=True, help_text="question ID -> it happened")
    stored = models.BooleanField(default=False)
    scenarios = models.PositiveIntegerField(default=0)
    saves = models.PositiveIntegerField(default=0)
    attempts = models.PositiveSmallIntegerField(default=0)
    stored_at = models.DateTimeField(null=True, blank=True)
    # Its lease (services/leases.py): the worker whose hands its message is in, and until when; NULL while it waits in
    # the queue and once it is stored.
    holder = models.CharField(max_length=LEASE_HOLDER_CHARS, blank=True)
    lease_until = models.DateTimeField(null=True, blank=True)
    # Its current message (services/messages.py): when it was published (microseconds of the wall clock, plus its
    # place among the messages published together), at what priority, and when a worker received it (NULL: in the
    # queue still, or lost with a worker or a broker).
    queued = models.BigIntegerField(null=True, blank=True)
    priority = models.PositiveSmallIntegerField(default=0)
    received = models.BigIntegerField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["sweep", "config", "first_point", "second_from"], name="chunk_identity")
        ]
        indexes = [
            models.Index(fields=["sweep", "stored"]),
            # Only the chunks under a lease (those in workers' hands): the leader's every round.
            models.Index(fields=["lease_until"], condition=models.Q(lease_until__isnull=False), name="chunk_leased"),
        ]
        ordering = ["sweep", "config", "first_point"]


class Scenario(models.Model):
    class Status(models.TextChoices):
        DONE = "done"
        WAITING = "waiting"
        FAILED = "failed"
        CORRUPT = "corrupt"  # a restart found a checkpoint it could not read

    # A scenario is stored done, waiting, failed or corrupt; only a waiting one changes, when its question's answer
    # resumes it (it may ask again: waiting -> waiting).
    EDGES = {
        Status.WAITING: frozenset({Status.WAITING, Status.DONE, Status.FAILED, Status.CORRUPT}),
        Status.DONE: frozenset(),
        Status.FAILED: frozenset(),
        Status.CORRUPT: frozenset(),
    }

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
    third_point = models.PositiveIntegerField(default=0)
    third_kind = models.CharField(max_length=40, blank=True)
    third_label = models.CharField(max_length=300, blank=True)
    duplicates = models.PositiveIntegerField(default=0)
    missing = models.PositiveIntegerField(default=0)
    wrong = models.PositiveIntegerField(default=0)
    gave_up = models.PositiveIntegerField(default=0)
    denied_ran = models.PositiveIntegerField(default=0)
    asks = models.PositiveIntegerField(default=0)
    avoidable = models.PositiveIntegerField(default=0)
    approvals = models.PositiveIntegerField(default=0)
    model_calls = models.PositiveIntegerField(default=0)
    calls_plus = models.IntegerField(default=0)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.DONE)
    # Sweeps are deterministic: a timeline is replayed and cached here when first asked for.
    timeline = models.JSONField(null=True, blank=True)
    effects = models.JSONField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["sweep", "config", "first_point", "second_point", "third_point"], name="scenario_identity"
            )
        ]
        # Two indexes only: each one costs every one of a sweep's inserted rows (docs/benchmarks.md). The list's
        # filters walk this one in the list's order (a design or tracker filter says which configs); test_perf holds
        # them to their budget.
        indexes = [
            # Covers the table's and the heatmap's GROUP BYs (index-only scans): every outcome the table sums (without
            # wrong..avoidable in it the pages took longer: docs/benchmarks.md). The third point (0 but in a depth-3
            # sweep's thrice scenarios) counts them apart from the twice ones.
            models.Index(
                fields=[
                    "sweep",
                    "config",
                    "first_point",
                    "second_point",
                    "third_point",
                    "duplicates",
                    "missing",
                    "wrong",
                    "gave_up",
                    "denied_ran",
                    "asks",
                    "avoidable",
                    "calls_plus",
                ],
                name="scenario_metrics",
            )
        ]
        ordering = ["sweep", "config", "first_point", "second_point", "third_point"]


class Question(models.Model):
    class Status(models.TextChoices):
        OPEN = "open"
        ANSWERED = "answered"
        RESUMED = "resumed"

    # The first answer is kept (open -> answered once); its resume is stored once (answered -> resumed).
    EDGES = {
        Status.OPEN: frozenset({Status.ANSWERED}),
        Status.ANSWERED: frozenset({Status.RESUMED}),
        Status.RESUMED: frozenset(),
    }

    sweep = models.ForeignKey(Sweep, on_delete=models.CASCADE, related_name="questions")
    scenario = models.ForeignKey(Scenario, on_delete=models.CASCADE, related_name="questions")
    qid = models.CharField(
        max_length=200, help_text="agentcore question ID: job run, call ID, the scenario's ask number"
    )
    call = models.JSONField()
    key = models.CharField(max_length=64, blank=True)
    tried = models.TextField(blank=True)
    durable = models.JSONField(help_text="the scenario's checkpoint files, tracker records and crash plan")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN, db_index=True)
    answer = models.BooleanField(null=True, blank=True, help_text="True: it happened")
    # agentcore's word: a key or a lookup would have settled it (else the question was necessary).
    avoidable = models.BooleanField(default=False, help_text="a key or a lookup would have settled it")
    truth = models.BooleanField(null=True, blank=True, help_text="what the tracker's records say")
    answered_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    answered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["scenario", "qid"], name="question_identity")]
        indexes = [models.Index(fields=["sweep", "status"])]
        ordering = ["created_at", "id"]


class Lease(models.Model):
    """A lease one holder at a time has until it runs out (`watchdog`: the watchdog's leader, services/leases.py),
    taken and renewed by a conditional UPDATE (`... WHERE holder = me OR expires_at < now`): of two, one gets it."""

    name = models.CharField(max_length=40, primary_key=True)
    holder = models.CharField(max_length=LEASE_HOLDER_CHARS)
    expires_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"lease {self.name} ({self.holder} until {self.expires_at})"


class Export(models.Model):
    """A file of a sweep's scenario rows, made by a worker (services/export_files.py) and served once ready. Its
    identity (sweep, what, format, filters, rows' version) is unique: a repeated request finds the row it made.
    `beat_at` moves with its progress; not ready and still for long, it is lost."""

    class Status(models.TextChoices):
        PENDING = "pending"  # its message is queued
        RUNNING = "running"  # a worker writes its file
        READY = "ready"
        FAILED = "failed"

    # pending -> pending and running -> pending: queued again once lost; running -> running: a worker takes it over
    # from a lost one; failed -> pending: asked for again. Ready is final.
    EDGES = {
        Status.PENDING: frozenset({Status.PENDING, Status.RUNNING, Status.FAILED}),
        Status.RUNNING: frozenset({Status.PENDING, Status.RUNNING, Status.READY, Status.FAILED}),
        Status.FAILED: frozenset({Status.PENDING}),
        Status.READY: frozenset(),
    }

    sweep = models.ForeignKey(Sweep, on_delete=models.CASCADE, related_name="exports")
    what = models.CharField(max_length=20, default="scenarios")
    fmt = models.CharField(max_length=10)
    # The filters as canonical JSON (sorted keys): part of the identity, and what the worker applies.
    query = models.CharField(max_length=EXPORT_QUERY_CHARS, blank=True)
    # The sweep's rows when it was asked for: stored chunks and resumed questions (services/export_files.py).
    version = models.CharField(max_length=40)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    rows_written = models.PositiveIntegerField(default=0)
    rows_total = models.PositiveIntegerField(null=True, blank=True)
    size = models.PositiveBigIntegerField(null=True, blank=True)
    path = models.CharField(max_length=300, blank=True, help_text="the file, under settings.VAR_DIR")
    error = models.TextField(blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    # The build writing it now (a token per claim): a build whose claim another took over stops.
    holder = models.CharField(max_length=LEASE_HOLDER_CHARS, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    beat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["sweep", "what", "fmt", "query", "version"], name="export_identity")
        ]
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"export {self.pk} (sweep {self.sweep_id} {self.what}.{self.fmt}, {self.status})"


def take(
    model: type[Sweep | Scenario | Question | Audit | Export],
    pk: int | list[int],
    to: str,
    *,
    sources: Iterable[str] | None = None,
    where: models.Q | None = None,
    **fields: Any,
) -> bool:
    """Move row `pk` (or each row of a list of pks) of `model` to status `to` (and set `fields` with it) if its status
    is one of `sources` (default: every source the model's EDGES lets reach `to`) and it matches `where` (other
    columns' conditions, in the same UPDATE); whether any moved. See the rules: one conditional UPDATE."""
    edges: dict[str, frozenset[str]] = model.EDGES  # type: ignore[attr-defined]
    froms = [s for s, targets in edges.items() if to in targets] if sources is None else list(sources)
    illegal = [s for s in froms if to not in edges.get(s, frozenset())]
    if illegal or not froms:
        raise IllegalTransition(f"{model.__name__}.status: no edge {', '.join(illegal) or '(nothing)'} -> {to}")
    rows = model.objects.filter(pk__in=pk) if isinstance(pk, list) else model.objects.filter(pk=pk)
    if where is not None:
        rows = rows.filter(where)
    return bool(rows.filter(status__in=froms).update(status=to, **fields))
