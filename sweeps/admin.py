"""The Django admin for sweeps, chunks, scenarios, questions and audits.

Big JSON columns (job text, timelines, durable state) are read-only and kept out of the lists;
foreign keys are raw IDs so that a change page never loads 100,000 rows into a select.
"""

from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from agentcore import CONDITIONS
from sweeps.models import Audit, AuditUnit, Chunk, Question, Scenario, Sweep

CONDITION_NAMES = tuple(c.name for c in CONDITIONS)


@admin.register(Sweep)
class SweepAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "job_name",
        "status",
        "depth",
        "runs",
        "person",
        *CONDITION_NAMES,
        "total_chunks",
        "created_by",
        "created_at",
        "finished_at",
    )
    # Every condition but a number (a seed has too many values to filter by).
    list_filter = ("status", "person", "depth", *(c.name for c in CONDITIONS if c.type is not int))
    search_fields = ("job_name", "error")
    raw_id_fields = ("created_by",)
    # What the sweep was swept under: its stored rows (and any resume) depend on it.
    readonly_fields = ("job_source", "configs", *CONDITION_NAMES, "table", "created_at", "finished_at", "request_token")
    date_hierarchy = "created_at"


@admin.register(Chunk)
class ChunkAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "sweep",
        "config",
        "first_point",
        "second_from",
        "second_to",
        "kind",
        "stored",
        "scenarios",
        "attempts",
        "stored_at",
    )
    list_filter = ("stored", "kind")
    raw_id_fields = ("sweep",)
    list_select_related = ("sweep",)


@admin.register(Scenario)
class ScenarioAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "sweep_id",
        "config",
        "design",
        "tracker",
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
        "status",
    )
    list_filter = ("status", "tracker", "design", "first_kind")
    search_fields = ("first_label", "second_label", "third_label")
    raw_id_fields = ("sweep",)
    readonly_fields = ("timeline", "effects")
    show_full_result_count = False  # no COUNT(*) over every row on each page

    def get_queryset(self, request: HttpRequest) -> QuerySet[Scenario]:
        qs = super().get_queryset(request)
        match = request.resolver_match
        return qs.defer("timeline", "effects") if match and match.url_name.endswith("changelist") else qs


@admin.register(Question)
class QuestionAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "sweep_id",
        "scenario_id",
        "qid",
        "key",
        "status",
        "avoidable",
        "answer",
        "truth",
        "answered_by",
        "answered_at",
    )
    list_filter = ("status", "avoidable", "answer", "truth")
    search_fields = ("qid", "key")
    raw_id_fields = ("sweep", "scenario", "answered_by")
    readonly_fields = ("call", "durable", "created_at")


@admin.register(Audit)
class AuditAdmin(admin.ModelAdmin):
    list_display = ("id", "job_name", "status", "created_by", "created_at", "finished_at")
    list_filter = ("status",)
    raw_id_fields = ("created_by",)
    readonly_fields = ("job_source", "designs", "trackers", "worlds", "witnesses", "created_at", "finished_at")


@admin.register(AuditUnit)
class AuditUnitAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "audit",
        "world",
        "design",
        "tracker",
        "stored",
        "scenarios",
        "ok",
        "expected",
        "breaks",
        "attempts",
        "stored_at",
    )
    list_filter = ("stored", "world")
    raw_id_fields = ("audit",)
    readonly_fields = ("candidates",)
