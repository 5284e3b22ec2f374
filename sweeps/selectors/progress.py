"""A sweep's reads beside its table: the list of sweeps, what it holds, its state and progress,
the ETA and the measured rate."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, NamedTuple

from django.db.models import Count, F, Max, OuterRef, Q, QuerySet, Subquery, Sum
from django.utils import timezone

from sweeps import pagecache
from sweeps.limits import DEFAULT_RATE, ETA_MIN_SECONDS, ETA_MIN_SHARE, ETA_RANGE, ETA_WINDOW, RATE_SWEEPS
from sweeps.models import Chunk, Question, Scenario, Sweep


def sweep_list() -> QuerySet[Sweep]:
    """Sweeps, newest first, without the job text or cached table; with their stored chunk counts."""
    stored = Chunk.objects.filter(sweep=OuterRef("pk"), stored=True).order_by().values("sweep")
    return (
        Sweep.objects.defer("job_source", "table")
        .select_related("created_by")
        .annotate(chunks_stored=Subquery(stored.annotate(n=Count("id")).values("n")[:1]))
    )


def measured_rate(*, depth: int, runs: int) -> tuple[float, int, str]:
    """Scenarios per second that finished sweeps here achieved, for the launch form's estimate:
    (rate, how many sweeps, which ones). The latest RATE_SWEEPS done sweeps with a scripted person
    (a queue sweep's time is the people's) of this depth and job runs (a scenario of 10 job runs costs
    about 3 times one of 1), else of this depth, else any; their scenarios over their seconds, launch
    to finish (a sweep cancelled and resumed counts its pause too). DEFAULT_RATE if none."""
    done = Sweep.objects.filter(status=Sweep.Status.DONE, person=Sweep.Person.SCRIPTED, finished_at__isnull=False)
    for qs, which in (
        (done.filter(depth=depth, runs=runs), f"depth {depth}, {runs} run{'s' * (runs != 1)}"),
        (done.filter(depth=depth), f"depth {depth}"),
        (done, "any"),
    ):
        rows = list(
            qs.order_by("-finished_at")
            .annotate(n=Sum("chunks__scenarios"))
            .values_list("n", "created_at", "finished_at")[:RATE_SWEEPS]
        )
        scenarios = sum(n or 0 for n, _, _ in rows)
        seconds = sum(max((end - start).total_seconds(), 0.001) for _, start, end in rows)
        if scenarios and seconds:
            return scenarios / seconds, len(rows), which
    return DEFAULT_RATE, 0, "default"


def sweep_contents(sweep: Sweep) -> dict[str, int]:
    """What deleting the sweep removes: its chunks, scenarios and questions, counted."""
    return {
        "chunks": Chunk.objects.filter(sweep=sweep).count(),
        "scenarios": Scenario.objects.filter(sweep=sweep).count(),
        "questions": Question.objects.filter(sweep=sweep).count(),
    }


class SweepState(NamedTuple):
    status: str
    error: str
    chunks_stored: int


def sweep_state(sweep_id: int) -> SweepState:
    """A sweep's status, error and stored chunks, in two small reads (a command polls it)."""
    status, error = Sweep.objects.filter(pk=sweep_id).values_list("status", "error").get()
    return SweepState(status, error, Chunk.objects.filter(sweep_id=sweep_id, stored=True).count())


def sweep_get(sweep_id: int) -> Sweep:
    """One sweep (raises Sweep.DoesNotExist)."""
    return Sweep.objects.defer("job_source").select_related("created_by").get(pk=sweep_id)


def sweep_progress(sweep: Sweep, now: datetime | None = None) -> dict[str, Any]:
    """Chunks stored of the total, scenarios stored, rate (scenarios per second), ETA, and how long no
    chunk was stored, all read from the stored rows (their counts once per version of the rows:
    sweeps.pagecache)."""
    counts = pagecache.cached(sweep, "progress", None, lambda: _progress_counts(sweep))
    agg, scenarios, open_questions = counts["chunks"], counts["scenarios"], counts["open_questions"]
    total = max(sweep.total_chunks, agg["planned"])
    stored = agg["stored"]
    now = now or timezone.now()
    end = sweep.finished_at or (agg["last"] if stored >= total and agg["last"] else now)
    elapsed = max((end - sweep.created_at).total_seconds(), 0.0)
    rate = scenarios / elapsed if elapsed > 0 and scenarios else 0.0
    eta = _eta(sweep, elapsed, now) if 0 < stored < total and sweep.status == Sweep.Status.RUNNING else None
    idle = max((now - (agg["last"] or sweep.created_at)).total_seconds(), 0.0)
    return {
        "status": sweep.status,
        "error": sweep.error,
        "chunks_stored": stored,
        "total_chunks": total,
        "percent": round(100 * stored / total, 1) if total else 0.0,
        "scenarios": scenarios,
        "rate": round(rate, 1),
        "eta_seconds": eta and eta[1],
        "eta_range": eta and [eta[0], eta[2]],
        "elapsed_seconds": round(elapsed, 1),
        "open_questions": open_questions,
        "finished": sweep.status in (Sweep.Status.DONE, Sweep.Status.FAILED, Sweep.Status.CANCELLED),
        "idle_seconds": round(idle, 1),  # since the last chunk was stored (or the launch)
    }


def _progress_counts(sweep: Sweep) -> dict[str, Any]:
    """sweep_progress's reads: the chunks' counts and last store, the scenarios, the open questions."""
    return {
        "chunks": Chunk.objects.filter(sweep=sweep).aggregate(
            stored=Count("id", filter=Q(stored=True)), planned=Count("id"), last=Max("stored_at")
        ),
        "scenarios": Scenario.objects.filter(sweep=sweep).count(),
        "open_questions": Question.objects.filter(sweep=sweep, status=Question.Status.OPEN).count(),
    }


def _eta(sweep: Sweep, elapsed: float, now: datetime) -> tuple[float, float, float] | None:
    """(low, estimate, high) seconds left, or None while it is not stable yet: before 15 % of the work
    is stored and 3 s have passed, the workers' start and the first messages' round trips dominate
    (an early ETA said 964 s for a 399 s sweep). Shown as a range, ETA_RANGE times the estimate: on a
    3-run table (22 s, 2 workers) the estimate ran from 1.3 times the time left at 15 % to 0.7 times
    it near the end (the last messages finish one worker at a time).

    Work is weighed per chunk, not counted in chunks: at depth 2 a chunk holds one twice scenario per
    point its restart reaches, about n - f + 1 for first point f of a configuration of n points (1 per
    chunk at depth 1); at depth 3 as many thrice scenarios for each of those, about (n - f + 1)^2
    (taskqueue.chunk_cost, by which messages are dealt). Left = (weight left) / (weight stored in the
    last ETA_WINDOW seconds, or since the launch if that is shorter, per second)."""
    window = min(ETA_WINDOW, elapsed)
    recent = Q(stored=True, stored_at__gte=now - timedelta(seconds=window))
    squared = F("first_point") * F("first_point")
    # The first chunks only: a queue sweep's later chunks come with people's answers, not on a schedule.
    rows = (
        Chunk.objects.filter(sweep=sweep, second_from=0)
        .order_by()
        .values("config")
        .annotate(
            points=Max("first_point"),
            chunks=Count("id"),
            chunks_stored=Count("id", filter=Q(stored=True)),
            firsts_stored=Sum("first_point", filter=Q(stored=True)),
            chunks_recent=Count("id", filter=recent),
            firsts_recent=Sum("first_point", filter=recent),
            squares_stored=Sum(squared, filter=Q(stored=True)),
            squares_recent=Sum(squared, filter=recent),
        )
    )
    done = total = lately = 0
    for r in rows:
        n = r["points"]
        if sweep.depth == 3:  # sum of (n + 1 - f)^2 over the chunks' first points f
            total += n * (n + 1) * (2 * n + 1) // 6
            done += _squares(n, r["chunks_stored"], r["firsts_stored"], r["squares_stored"])
            lately += _squares(n, r["chunks_recent"], r["firsts_recent"], r["squares_recent"])
        elif sweep.depth == 2:
            total += n * (n + 1) // 2
            done += r["chunks_stored"] * (n + 1) - (r["firsts_stored"] or 0)
            lately += r["chunks_recent"] * (n + 1) - (r["firsts_recent"] or 0)
        else:
            total += r["chunks"]
            done += r["chunks_stored"]
            lately += r["chunks_recent"]
    if not total or not lately or done < ETA_MIN_SHARE * total or elapsed < ETA_MIN_SECONDS or done >= total:
        return None
    left = window * (total - done) / lately
    return round(left * ETA_RANGE[0], 1), round(left, 1), round(left * ETA_RANGE[1], 1)


def _squares(n: int, chunks: int, firsts: int | None, squares: int | None) -> int:
    """The sum of (n + 1 - f)^2 over `chunks` first points f whose sum is `firsts` and whose squares sum
    to `squares`."""
    return chunks * (n + 1) ** 2 - 2 * (n + 1) * (firsts or 0) + (squares or 0)
