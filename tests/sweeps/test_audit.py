"""The dashboard's audit: its counts and verdicts are agentcore.harness.audit's (real Celery workers on
PostgreSQL and Redis), a unit is stored once, and bad input stores nothing."""

from __future__ import annotations

import html
import io
import json
from datetime import timedelta
from urllib.parse import parse_qsl, urlsplit

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.urls import reverse
from django.utils import timezone

import agentcore as agentaudit
from agentcore import designs, jobs
from sweeps import configs as sweep_configs
from sweeps import limits, selectors, tasks
from sweeps.models import Audit, AuditUnit
from sweeps.services import audits
from sweeps.workqueue import keeper, leases, publish, watchdog
from tests.sweeps._web import member, record_enqueued

TRIAGE = sweep_configs.builtin_job_source("triage")
DESIGNS, TRACKERS = ["loop", "keys"], ["keyed"]
WORLDS = ["panic", f"ttl:{agentaudit.TTL}", f"tool-faults-k:{agentaudit.MAX_ATTEMPTS + 1}"]


def create(**kw):
    args = {"user": None, "job_source": TRIAGE, "designs": DESIGNS, "trackers": TRACKERS, "worlds": WORLDS}
    args.update(kw)
    return audits.audit_create(**args)


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_the_dashboards_counts_verdicts_and_witnesses_equal_the_clis(celery_workers, wait_until):
    a = create()
    wait_until(lambda: Audit.objects.get(pk=a.pk).status == Audit.Status.DONE, timeout=300, what="the audit done")
    cli = agentaudit.audit(
        jobs.load("triage"),
        [designs.get(d) for d in DESIGNS],
        TRACKERS,
        [agentaudit.world(w) for w in WORLDS],
        every=True,
        site="",
    )
    a.refresh_from_db()
    mine = selectors.audit_subjects(a, list(a.units.all()))
    assert [agentaudit.verdict(s) for s in mine] == [agentaudit.verdict(s) for s in cli.subjects]
    assert [{w: (c.scenarios, c.breaks, c.expected, c.skipped) for w, c in s.cells.items()} for s in mine] == [
        {w: (c.scenarios, c.breaks, c.expected, c.skipped) for w, c in s.cells.items()} for s in cli.subjects
    ]
    # the CLI's links name the built-in job, the dashboard's its audit: the rest is the same
    assert {s.name: s.witness.link.replace("job=triage", f"audit={a.pk}") for s in cli.subjects if s.witness} == {
        name: w["link"] for name, w in a.witnesses.items()
    }
    assert {
        s.name: [line.replace("job=triage", f"audit={a.pk}") for line in agentaudit.witness_lines(s.witness)]
        for s in cli.subjects
        if s.witness
    } == {name: w["lines"] for name, w in a.witnesses.items()}


@pytest.mark.django_db
def test_a_unit_run_twice_is_stored_once(monkeypatch):
    record_enqueued(monkeypatch)
    a = create(designs=["loop"], worlds=["panic"])
    unit = a.units.get()
    assert audits.audit_unit_run(unit_id=unit.pk) is True
    first = AuditUnit.objects.get(pk=unit.pk)
    assert audits.audit_unit_run(unit_id=unit.pk) is False
    again = AuditUnit.objects.get(pk=unit.pk)
    assert (again.scenarios, again.attempts, again.stored_at) == (first.scenarios, first.attempts, first.stored_at)
    assert Audit.objects.get(pk=a.pk).status == Audit.Status.DONE


@pytest.mark.django_db
def test_the_unstored_units_are_queued_on_launch_and_again_by_resume(monkeypatch, django_capture_on_commit_callbacks):
    sent = record_enqueued(monkeypatch)
    with django_capture_on_commit_callbacks(execute=True):
        a = create()
    ids = sorted(a.units.values_list("pk", flat=True))
    with django_capture_on_commit_callbacks(execute=True):
        assert audits.audit_resume(audit_id=a.pk) == len(ids) == len(DESIGNS) * len(TRACKERS) * len(WORLDS)
    assert sent == [("sweeps.tasks.audit_unit_run", (pk,)) for pk in ids * 2]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "kw, message",
    [
        ({"designs": ["nope"]}, "unknown design"),
        ({"trackers": ["nope"]}, "unknown tracker mode"),
        ({"worlds": ["nope"]}, "unknown world model"),
        ({"designs": []}, "at least one design"),
        ({"job_source": "{"}, "not valid JSON"),
    ],
)
def test_bad_input_raises_a_clear_error_and_stores_nothing(monkeypatch, kw, message):
    record_enqueued(monkeypatch)
    with pytest.raises(ValidationError, match=message):
        create(**kw)
    assert not Audit.objects.exists() and not AuditUnit.objects.exists()


@pytest.mark.django_db
def test_the_launch_form_shows_a_bad_choice_as_a_form_error_and_stores_nothing(client, django_user_model):
    client.force_login(member("ann", "staff"))
    r = client.post(
        reverse("sweeps:audits"), {"job": "triage", "designs": ["nope"], "trackers": ["keyed"], "worlds": ["panic"]}
    )
    assert r.status_code == 400 and b"nope" in r.content
    assert not Audit.objects.exists()


@pytest.mark.django_db
def test_the_launch_form_stores_an_audit_and_its_page_shows_progress(client, django_user_model, monkeypatch):
    record_enqueued(monkeypatch)
    client.force_login(member("ann", "staff"))
    r = client.post(
        reverse("sweeps:audits"), {"job": "triage", "designs": DESIGNS, "trackers": TRACKERS, "worlds": WORLDS}
    )
    a = Audit.objects.get()
    assert r.status_code == 302 and r["Location"] == reverse("sweeps:audit", args=[a.pk])
    page = client.get(r["Location"])
    assert page.status_code == 200 and b"0 of 6 units stored" in page.content


@pytest.mark.django_db
def test_the_report_of_a_done_audit_has_one_verdict_per_design_and_tracker(monkeypatch, client):
    record_enqueued(monkeypatch)
    a = create(worlds=["panic"])
    for u in a.units.all():
        audits.audit_unit_run(unit_id=u.pk)
    report = selectors.audit_report(a.pk)
    assert [r["verdict"] for r in report["rows"]] == [
        "real loop, keyed tracker: safe",
        "+ idempotency keys: broken by panic (798 of 12521 scenarios)",
    ]
    assert report["rows"][1]["witness"]["link"].startswith(f"/witness/?audit={a.pk}&variant=")
    # The page shows the witness's timeline, a line each (once, the template's own source instead).
    client.force_login(member("ann", "viewer"))
    page = client.get(reverse("sweeps:audit", args=[a.pk])).content.decode()
    lines = report["rows"][1]["witness"]["lines"]
    assert len(lines) > 3 and "{{" not in page
    assert html.escape(lines[0]) + "\n" + html.escape(lines[1]) + "\n" in page


@pytest.mark.django_db
def test_the_command_says_a_bad_design_in_one_line_and_stores_nothing():
    with pytest.raises(CommandError, match="unknown design 'nope'"):
        call_command("audit", "--design", "nope")
    assert not Audit.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_the_command_waits_and_prints_the_clis_verdicts(celery_workers):
    out = io.StringIO()
    call_command(
        "audit",
        "--design",
        "loop",
        "--design",
        "keys",
        "--tracker",
        "keyed",
        "--world",
        "panic",
        "--wait",
        "--timeout",
        "300",
        stdout=out,
        stderr=io.StringIO(),
    )
    lines = out.getvalue().splitlines()
    assert lines[0] == "real loop, keyed tracker: safe"
    assert lines[1] == "+ idempotency keys: broken by panic (798 of 12521 scenarios)"


@pytest.mark.django_db
def test_a_failed_unit_fails_its_audit_with_its_message_and_resume_runs_it_again(monkeypatch):
    record_enqueued(monkeypatch)
    a = create(designs=["loop"], worlds=["panic"])
    unit = a.units.get()
    assert audits.audit_unit_failed(unit_id=unit.pk, error="OperationalError: gone") is True
    a.refresh_from_db()
    assert a.status == Audit.Status.FAILED and a.error == "unit panic, loop, keyed: OperationalError: gone"
    assert audits.audit_resume(audit_id=a.pk) == 1
    assert Audit.objects.get(pk=a.pk).status == Audit.Status.RUNNING


@pytest.mark.django_db
def test_the_witness_of_an_uploaded_job_plays_the_audit_s_stored_job(client, monkeypatch):
    record_enqueued(monkeypatch)
    job = json.loads(TRIAGE) | {"name": "mine"}
    a = create(job_source=json.dumps(job), designs=["keys"], worlds=["panic"])
    for u in a.units.all():
        audits.audit_unit_run(unit_id=u.pk)
    link = Audit.objects.get(pk=a.pk).witnesses["+ idempotency keys"]["link"]
    parts = urlsplit(link)
    client.force_login(member("vic", "viewer"))
    r = client.get(parts.path, dict(parse_qsl(parts.query)))
    assert r.status_code == 200 and b"mine" in r.content


@pytest.mark.django_db
def test_a_witness_link_to_an_audit_that_is_gone_is_a_404(client):
    client.force_login(member("vic", "viewer"))
    r = client.get("/witness/", {"audit": 999, "design": "loop", "tracker": "keyed", "first": 3})
    assert r.status_code == 404


@pytest.mark.django_db
def test_a_failed_audit_s_page_offers_resume_and_the_button_queues_its_units(
    client, django_user_model, monkeypatch, django_capture_on_commit_callbacks
):
    sent = record_enqueued(monkeypatch)
    a = create(designs=["loop"], worlds=["panic"])
    audits.audit_unit_failed(unit_id=a.units.get().pk, error="OperationalError: gone")
    client.force_login(member("ann", "staff"))
    assert b'id="resume"' in client.get(reverse("sweeps:audit", args=[a.pk])).content
    with django_capture_on_commit_callbacks(execute=True):
        r = client.post(reverse("sweeps:audit_resume", args=[a.pk]), follow=True)
    assert b"1 unit not stored yet queued again" in r.content
    assert Audit.objects.get(pk=a.pk).status == Audit.Status.RUNNING
    assert sent[-1] == ("sweeps.tasks.audit_unit_run", (a.units.get().pk,))


@pytest.mark.django_db
def test_a_running_audit_that_is_not_stalled_offers_no_resume(client, django_user_model, monkeypatch):
    record_enqueued(monkeypatch)
    a = create(designs=["loop"], worlds=["panic"])
    client.force_login(member("ann", "staff"))
    page = client.get(reverse("sweeps:audit", args=[a.pk])).content
    assert b'id="resume"' not in page and b'http-equiv="refresh"' in page


@pytest.mark.django_db
def test_resume_by_an_anonymous_user_is_refused_and_queues_nothing(
    client, monkeypatch, django_capture_on_commit_callbacks
):
    sent = record_enqueued(monkeypatch)
    a = create(designs=["loop"], worlds=["panic"])
    audits.audit_unit_failed(unit_id=a.units.get().pk, error="OperationalError: gone")
    with django_capture_on_commit_callbacks(execute=True):
        r = client.post(reverse("sweeps:audit_resume", args=[a.pk]))
    assert r.status_code == 403 and sent == []
    assert Audit.objects.get(pk=a.pk).status == Audit.Status.FAILED


def lapse(ids, holder="gone:1"):
    """These units' worker died: their leases ran out a second ago."""
    AuditUnit.objects.filter(pk__in=ids).update(
        holder=holder, attempts=1, lease_until=timezone.now() - timedelta(seconds=1)
    )


def priorities(monkeypatch):
    """What the services publish, with each message's priority: [(task name, args, priority), ...]."""
    sent = []
    monkeypatch.setattr(
        publish,
        "send",
        lambda name, args, producer, priority=publish.NORMAL: sent.append((name, tuple(args), priority)),
    )
    return sent


@pytest.mark.django_db
def test_a_unit_is_leased_while_it_plays_and_its_store_ends_the_lease(monkeypatch):
    record_enqueued(monkeypatch)
    unit = create(designs=["loop"], worlds=["panic"]).units.get()
    real, seen = agentaudit.sweep_unit, []

    def play(*args, **kw):
        seen.append(AuditUnit.objects.filter(pk=unit.pk).values_list("holder", "lease_until").get())
        return real(*args, **kw)

    monkeypatch.setattr(agentaudit, "sweep_unit", play)
    t0 = timezone.now()
    assert audits.audit_unit_run(unit_id=unit.pk)
    ((holder, until),) = seen
    assert holder == leases.HOLDER and until >= t0 + timedelta(seconds=limits.LEASE_SECONDS)
    assert AuditUnit.objects.filter(pk=unit.pk).values_list("stored", "holder", "lease_until").get() == (True, "", None)


@pytest.mark.django_db
def test_the_lease_rule_queues_a_dead_workers_units_once_ahead_of_the_queue(monkeypatch):
    sent = priorities(monkeypatch)
    ids = sorted(create().units.values_list("pk", flat=True))
    lapse(ids[:2])
    leases.leases_renew(unit_ids=[ids[2]], holder="alive:2")  # a live worker plays this one
    lapse(ids[3:4], holder="prefork:3")  # its pool process died: its worker gives the message back itself
    leases.alive(holder="prefork:3")
    failed = create()
    lapse(list(failed.units.values_list("pk", flat=True)))
    audits.audit_failed(audit_id=failed.pk, error="boom")  # its resume button is for people
    assert watchdog.audit_units_requeue_lapsed() == 2
    assert sent == [(tasks.audit_unit_run.name, (pk,), publish.FIRST) for pk in ids[:2]]
    assert not AuditUnit.objects.filter(pk__in=ids[:2], lease_until__isnull=False).exists()
    assert AuditUnit.objects.get(pk=ids[2]).holder == "alive:2"
    assert watchdog.audit_units_requeue_lapsed() == 0  # queued once: their leases ended with it
    assert len(sent) == 2


@pytest.mark.django_db
def test_the_lease_rule_keeps_a_unit_s_lapsed_lease_while_the_broker_is_away(monkeypatch):
    from kombu.exceptions import OperationalError as BrokerError

    def down(*args, **kw):
        raise BrokerError("Error 111 connecting to 127.0.0.1:6390. Connection refused.")

    ids = sorted(create(designs=["loop"]).units.values_list("pk", flat=True))
    lapse(ids)
    monkeypatch.setattr(publish, "send", down)
    assert watchdog.audit_units_requeue_lapsed() == 0
    assert AuditUnit.objects.filter(pk__in=ids, lease_until__isnull=False).count() == len(ids)  # rolled back
    sent = priorities(monkeypatch)
    assert watchdog.audit_units_requeue_lapsed() == len(ids) and [args[0] for _, args, _ in sent] == ids


@pytest.mark.django_db
def test_a_resume_ends_the_leases_of_the_units_it_queues(monkeypatch, django_capture_on_commit_callbacks):
    sent = record_enqueued(monkeypatch)
    a = create(designs=["loop"])
    ids = sorted(a.units.values_list("pk", flat=True))
    lapse(ids)
    with django_capture_on_commit_callbacks(execute=True):
        assert audits.audit_resume(audit_id=a.pk) == len(ids)
    assert watchdog.audit_units_requeue_lapsed() == 0  # not queued a second time
    assert [args[0] for _, args in sent] == ids


@pytest.mark.django_db
def test_the_stall_rule_leaves_an_audit_with_a_unit_under_a_lease_alone(monkeypatch):
    record_enqueued(monkeypatch)
    monkeypatch.setattr(audits, "_AUTO_RESUMED", {})
    monkeypatch.setattr(watchdog, "queued_messages", lambda: 0)
    a = create(designs=["loop"])
    Audit.objects.filter(pk=a.pk).update(created_at=timezone.now() - timedelta(seconds=60))
    pk = a.units.values_list("pk", flat=True).first()
    leases.leases_renew(unit_ids=[pk], holder="alive:2")  # a long unit plays: nothing stored for a while
    assert audits.audits_resume_stalled(stalled_for=10) == 0
    AuditUnit.objects.filter(pk=pk).update(lease_until=timezone.now() - timedelta(seconds=11))  # it never came back
    assert audits.audits_resume_stalled(stalled_for=10) == a.units.count()


@pytest.mark.django_db(transaction=True)  # the keeper's rounds close the connections they used
def test_a_worker_takes_and_renews_the_lease_of_the_audit_unit_it_plays(monkeypatch):
    from celery.signals import task_postrun, task_prerun, task_received

    sent = priorities(monkeypatch)
    ids = sorted(create(designs=["loop"]).units.values_list("pk", flat=True))
    sent.clear()  # its launch's messages

    class Received:
        task_name, args, kwargs = tasks.audit_unit_run.name, (ids[0],), {}

    task_received.send(sender=None, request=Received())
    assert AuditUnit.objects.get(pk=ids[0]).holder == leases.HOLDER
    task_prerun.send(sender=tasks.audit_unit_run, task_id="u1", task=tasks.audit_unit_run, args=(ids[1],), kwargs={})
    try:
        assert keeper.playing_unit_ids() == [ids[1]] and keeper.playing_chunk_ids() == []
        lapse([ids[2]])  # a dead worker's
        assert keeper.Keeper(stalled_for=30).round() == 1  # renews, leads: the dead worker's unit queued again
        assert AuditUnit.objects.get(pk=ids[1]).lease_until > timezone.now()
        assert sent == [(tasks.audit_unit_run.name, (ids[2],), publish.FIRST)]
    finally:
        task_postrun.send(
            sender=tasks.audit_unit_run, task_id="u1", task=tasks.audit_unit_run, args=(ids[1],), kwargs={}
        )
    assert keeper.playing_unit_ids() == []
