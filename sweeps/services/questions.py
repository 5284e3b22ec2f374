"""Questions of a queue sweep: answering them, and resuming a scenario with its answer."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

import agentcore as agentsweep
from agentcore import CheckpointError
from sweeps.configs import agent_config
from sweeps.limits import ERROR_CHARS
from sweeps.models import Question, Scenario, Sweep, take
from sweeps.replay import check_durable
from sweeps.schema import outcome
from sweeps.services import chunks, lifecycle
from sweeps.workqueue import publish


def question_answer(*, question_id: int, user: Any, happened: bool) -> tuple[Question, bool]:
    """Answer an open question; (question, True) the first time, (question, False) after that
    (the first answer is kept). The first answer enqueues the scenario's resume on commit."""
    with transaction.atomic():
        question = Question.objects.select_for_update().get(pk=question_id)
        won = take(
            Question,
            question_id,
            Question.Status.ANSWERED,
            answer=bool(happened),
            answered_by=user if getattr(user, "pk", None) else None,
            answered_at=timezone.now(),
        )
        question.refresh_from_db()
        if won:
            sweep = Sweep(pk=question.sweep_id)  # enqueue needs its ID only, not the job's text
            transaction.on_commit(lambda: publish.enqueue(sweep, question_ids=[question_id]))
    return question, won


def questions_answer_truthfully(*, sweep_id: int, user: Any) -> int:
    """Answer every open question of the sweep with what the tracker's records say, in one
    transaction (two UPDATEs: the "it happened" ones and the others) and one publish; how many."""
    with transaction.atomic():
        rows = list(
            Question.objects.select_for_update()
            .filter(sweep_id=sweep_id, status=Question.Status.OPEN)
            .values_list("pk", "truth")
        )
        now, who = timezone.now(), user if getattr(user, "pk", None) else None
        for happened in (True, False):
            pks = [pk for pk, truth in rows if bool(truth) == happened]
            if pks:
                take(Question, pks, Question.Status.ANSWERED, answer=happened, answered_by=who, answered_at=now)
        if rows:
            ids = [pk for pk, _ in rows]  # locked while open: every one of them moved
            transaction.on_commit(lambda: publish.enqueue(Sweep(pk=sweep_id), question_ids=ids))
    return len(rows)


def _points(sc: Scenario) -> tuple[tuple[int, str, str], tuple[int, str, str] | None]:
    first = (sc.first_point, sc.first_kind, sc.first_label)
    second = (sc.second_point, sc.second_kind, sc.second_label) if sc.second_point else None
    return first, second


def _resumed(q: Question) -> agentsweep.Resumed:
    """The question's scenario played on from its durable state with the answer; a corrupt durable
    state raises CheckpointError (and is noted on the sweep)."""
    sc, sweep = q.scenario, q.sweep
    name = f"question {q.pk} (scenario {sc.pk})"
    try:
        durable = check_durable(q.durable, name)
        return agentsweep.resume(
            agent_config(sweep, sc.config), durable, {q.qid: bool(q.answer)}, *_points(sc), depth=sweep.depth
        )
    except (CheckpointError, KeyError, TypeError, ValueError, AttributeError) as e:
        err = (
            e
            if isinstance(e, CheckpointError)
            else CheckpointError(f"{name}: stored durable state is unusable ({type(e).__name__}: {e})")
        )
        Sweep.objects.filter(pk=sweep.pk).update(error=str(err)[:ERROR_CHARS])
        raise err from None


def question_resume(*, question_id: int) -> bool:
    """Resume an answered question's scenario from its durable state and store the outcome.

    Idempotent: only an ANSWERED question resumes, and it becomes RESUMED in the same transaction
    that updates the scenario. A corrupt durable state raises CheckpointError (and is noted on
    the sweep)."""
    q = Question.objects.select_related("scenario", "sweep").filter(pk=question_id).first()
    if q is None or q.status != Question.Status.ANSWERED:
        return False
    if q.sweep.status == Sweep.Status.CANCELLED:
        return False  # stays answered: the sweep's resume button queues it again
    sc, sweep = q.scenario, q.sweep
    resumed = _resumed(q)
    record, played = resumed.record, resumed.played
    with transaction.atomic():
        if not take(Question, q.pk, Question.Status.RESUMED):
            transaction.set_rollback(True)
            return False
        take(
            Scenario,
            sc.pk,
            record.status,
            sources=[Scenario.Status.WAITING],
            **outcome(record),
            timeline=record.timeline,
            effects=record.effects,
        )
        if record.status == "waiting" and played.question is not None and played.durable is not None:
            Question.objects.bulk_create(
                [chunks.new_question(sweep.pk, sc.pk, played.question, played.durable)], ignore_conflicts=True
            )
        later = resumed.chunk(sc.config)
        if later is not None:
            chunks.add_later_chunk(sweep, later)
    lifecycle.sweep_finalize(sweep_id=sweep.pk)
    return True
