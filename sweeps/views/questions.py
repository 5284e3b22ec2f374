"""The question queue (all sweeps' or one's) and answering."""

from __future__ import annotations

import json

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, redirect, render
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.views.decorators.http import require_POST, require_safe

from sweeps import limits, replay, roles, selectors
from sweeps.forms.lists import AnswerForm, QuestionListForm
from sweeps.models import Question, Sweep
from sweeps.services import questions as question_services
from sweeps.views import errors
from sweeps.views._common import allow, bad_request, next_url, page_or_none, sweep_or_404, viewer_access


def run_name(qid: str) -> str:
    """The job run a question ID ("0:call_1": run index, call) names, as timelines name it: "run-1"."""
    head = str(qid).split(":", 1)[0]
    return f"run-{int(head) + 1}" if head.isdigit() else str(qid)


def _durable_problems(question_ids: list[int]) -> dict[int, str]:
    """Open questions whose stored durable state (checkpoint files, tracker records) is corrupt:
    answering them could not resume their scenario. question ID -> the error."""
    problems = {}
    for pk, durable in selectors.question_durables(question_ids).items():
        try:
            replay.check_durable(durable, f"question {pk}")
        except errors.STATE_ERRORS as e:
            problems[pk] = errors.state_error(e)
    return problems


def _questionpage_or_none(request: HttpRequest, sweep: Sweep | None) -> HttpResponse:
    form = QuestionListForm(request.GET)
    if not form.is_valid():
        return bad_request(request, "bad question list parameters", form)
    status, avoidable = form.cleaned_data["status"], form.cleaned_data["need"]
    paginator = Paginator(selectors.question_list(sweep, status, avoidable), limits.QUESTIONS_PER_PAGE)
    page = page_or_none(paginator, form.cleaned_data.get("page"))
    if page is None:
        return bad_request(request, f"there is no page {form.cleaned_data.get('page')}")
    problems = _durable_problems([q.pk for q in page.object_list if q.status == Question.Status.OPEN])
    for q in page.object_list:
        q.args_json = json.dumps(q.call.get("args") if isinstance(q.call, dict) else q.call, sort_keys=True)
        q.state_error = problems.get(q.pk, "")
        q.run_name = run_name(q.qid)
        q.may_answer = roles.may(request.user, "answer", q.sweep.created_by_id)
    need = "" if avoidable is None else "avoidable" if avoidable else "necessary"
    return render(
        request,
        "sweeps/question_list.html",
        {
            "sweep": sweep,
            "status": status,
            "page": page,
            "counts": selectors.question_counts(sweep, avoidable),
            "here": request.get_full_path(),
            "need": need,
            "need_query": f"&need={need}" if need else "",
            "may_answer_all": sweep is not None and roles.may(request.user, "answer", sweep.created_by_id),
        },
    )


@require_safe
@viewer_access
def question_list(request: HttpRequest) -> HttpResponse:
    return _questionpage_or_none(request, None)


@require_safe
@viewer_access
def sweep_questions(request: HttpRequest, sweep_id: int) -> HttpResponse:
    return _questionpage_or_none(request, sweep_or_404(sweep_id))


@require_POST
def question_answer(request: HttpRequest, question_id: int) -> HttpResponse:
    question = get_object_or_404(
        Question.objects.select_related("sweep").only("id", "sweep_id", "sweep__created_by_id"), pk=question_id
    )
    allow(request, "answer", question.sweep.created_by_id)
    form = AnswerForm(request.POST)
    if not form.is_valid():
        return bad_request(request, 'choose "it happened" or "it did not happen"', form)
    fallback = reverse("sweeps:sweep_questions", args=[question.sweep_id])
    ok, answered = errors.action(
        request,
        lambda: question_services.question_answer(
            question_id=question.pk, user=request.user, happened=form.cleaned_data["happened"]
        ),
        "the answer could not be stored",
    )
    if ok and answered is not None:
        q, changed = answered
        if changed:
            messages.success(
                request,
                f"answer stored: {'it happened' if q.answer else 'it did not happen'}; "
                "the scenario resumes on a worker",
            )
        else:
            who = q.answered_by.get_username() if q.answered_by else "someone"
            messages.warning(request, f"this question was already answered by {who}; the first answer was kept")
    return HttpResponseRedirect(next_url(request, form.cleaned_data.get("next"), fallback))


@require_POST
def questions_answer_all(request: HttpRequest, sweep_id: int) -> HttpResponse:
    sweep = sweep_or_404(sweep_id)
    allow(request, "answer", sweep.created_by_id)
    ok, n = errors.action(
        request,
        lambda: question_services.questions_answer_truthfully(sweep_id=sweep.pk, user=request.user),
        "the answers could not be stored",
    )
    if ok:
        messages.success(request, f"{n} open question{pluralize(n)} answered from the tracker's records")
    return redirect("sweeps:sweep_questions", sweep_id=sweep.pk)
