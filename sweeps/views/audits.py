"""The audits: the list with its launch form, and one audit's page (progress, table, verdicts)."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.defaultfilters import pluralize
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from sweeps import roles, selectors
from sweeps.forms.launch import AuditForm
from sweeps.models import Audit
from sweeps.services import audits
from sweeps.views import errors
from sweeps.views._common import allow, read_access


@require_http_methods(["GET", "POST"])
@read_access
def audit_list(request: HttpRequest) -> HttpResponse:
    form = AuditForm() if roles.may(request.user, "launch_audit") else None
    if request.method == "POST":
        allow(request, "launch_audit")
        form = AuditForm(request.POST, request.FILES)
        if form.is_valid():
            d = form.cleaned_data
            try:
                a = audits.audit_create(
                    user=request.user,
                    job_source=d["job_source"],
                    designs=d["designs"],
                    trackers=d["trackers"],
                    worlds=d["worlds"],
                    source_name=d["source_name"],
                )
            except ValidationError as e:
                form.add_error(None, e)
            else:
                return redirect("sweeps:audit", audit_id=a.pk)
    status = 400 if form is not None and form.is_bound and form.errors else 200
    return render(
        request, "sweeps/audit_list.html", {"form": form, "audits": selectors.audit_list()[:100]}, status=status
    )


@require_safe
@read_access
def audit_detail(request: HttpRequest, audit_id: int) -> HttpResponse:
    try:
        report = selectors.audit_report(audit_id)
    except Audit.DoesNotExist:
        raise Http404("no such audit") from None
    may_resume = roles.may(request.user, "resume_audit", report["audit"].created_by_id)
    return render(request, "sweeps/audit_detail.html", {**report, "may_resume": may_resume})


@require_POST
def audit_resume(request: HttpRequest, audit_id: int) -> HttpResponse:
    """Queue a failed or stalled audit's units not stored yet again (a done audit has none)."""
    owner = Audit.objects.filter(pk=audit_id).values_list("created_by_id", flat=True)
    if not owner:
        raise Http404("no such audit")
    allow(request, "resume_audit", owner[0])
    ok, n = errors.action(request, lambda: audits.audit_resume(audit_id=audit_id), "could not resume")
    if ok:
        messages.success(request, f"{n} unit{pluralize(n)} not stored yet queued again" if n else "nothing to resume")
    return redirect("sweeps:audit", audit_id=audit_id)
