"""Helpers for the dashboard's tests: sweeps made and run by the services (no worker), what they
publish, forms, users and clients, and the pages' parts read back."""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.urls import resolve, reverse

import agentcore as agentsweep
from sweeps import configs as sweep_configs
from sweeps import tasks
from sweeps.models import Chunk, Question, Sweep
from sweeps.services import chunks, export_files, launch
from sweeps.workqueue import publish

TRIAGE = sweep_configs.builtin_job_source("triage")
MARKERS = [{"name": "markers, keyed", "design": "markers", "tracker": "keyed"}]
LOOP = [{"name": "loop, keyed", "design": "loop", "tracker": "keyed"}]
LOOP_KEYLESS = [{"name": "real loop, keyless tracker", "design": "loop", "tracker": "keyless"}]
ONCE_PER_TURN = [{"name": "save once per turn", "design": "once-per-turn", "tracker": "keyed"}]
POWER_CUT = {"crash_model": "power-cut", "fsync": False, "tracker_fault": "crash"}
WORLD = {"tracker_fault": "ttl:5", "tool_faults": "k:2", "person_faults": "deny:0.5", "model": "fickle", "seed": 7}


def create(**kw: Any) -> Sweep:
    """A sweep made by the service a launch calls: the triage job, one configuration, depth 1, with changes."""
    args = {"user": None, "job_source": TRIAGE, "configs": LOOP, "depth": 1}
    args.update(kw)
    return launch.sweep_create(**args)


def run_all(sweep: Sweep) -> Sweep:
    """Every chunk of the sweep played and stored here, as its worker would (no worker)."""
    for pk in Chunk.objects.filter(sweep=sweep).values_list("pk", flat=True):
        chunks.chunk_run(chunk_id=pk)
    sweep.refresh_from_db()
    return sweep


def chunk_ids(sweep: Sweep) -> list[int]:
    return list(Chunk.objects.filter(sweep=sweep).order_by("pk").values_list("pk", flat=True))


def run_stored_chunks(sweep: Sweep) -> None:
    """Run every chunk not stored yet, including those made meanwhile (no worker here)."""
    while ids := chunk_ids_unstored(sweep):
        for pk in ids:
            chunks.chunk_run(chunk_id=pk)


def chunk_ids_unstored(sweep: Sweep) -> list[int]:
    return list(Chunk.objects.filter(sweep=sweep, stored=False).order_by("pk").values_list("pk", flat=True))


def launch_data(**kw: Any) -> dict[str, Any]:
    """A valid launch form (the triage job, the chapter's table), with changes."""
    data: dict[str, Any] = {
        "job": "triage",
        "preset": "table",
        "depth": "2",
        "runs": "1",
        "person": "scripted",
        "crash_model": "panic",
        "fsync": "on",
        "tracker_fault": "none",
        "tool_faults": "first",
        "person_faults": "truthful",
        "model": "fixed",
        "seed": "0",
        "request_token": uuid.uuid4().hex,
    }
    data.update(kw)
    return data


def record_enqueued(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, tuple]]:
    """What the services publish, recorded instead of sent: [(task name, args), ...]."""
    sent: list[tuple[str, tuple]] = []
    monkeypatch.setattr(publish, "send", lambda name, args, producer, *_: sent.append((name, tuple(args))))
    return sent


def record_conditions(monkeypatch: pytest.MonkeyPatch, name: str) -> list[sweep_configs.Conditions]:
    """The conditions (crash model, fsync and the world's faults) of every configuration agentcore's
    function `name` (run_chunk, points, ...) is called with, recorded as it runs."""
    seen: list[sweep_configs.Conditions] = []
    real = getattr(agentsweep, name)

    def spy(cfg: agentsweep.Config, *args: Any, **kw: Any) -> Any:
        seen.append(sweep_configs.Conditions(*(getattr(cfg, c) for c in sweep_configs.Conditions._fields)))
        return real(cfg, *args, **kw)

    monkeypatch.setattr(agentsweep, name, spy)
    return seen


def sent_chunk_ids(sent: list[tuple[str, tuple]]) -> list[int]:
    out: list[int] = []
    for name, args in sent:
        if name == tasks.chunk_run.name:
            out.append(args[0])
        elif name == tasks.chunks_run.name:
            out.extend(args[0])
    return out


def sent_resumes(sent: list[tuple[str, tuple]]) -> list[int]:
    return [args[0] for name, args in sent if name == tasks.question_resume.name]


def counts() -> tuple[int, int]:
    return Sweep.objects.count(), Chunk.objects.count()


def waiting_sweep() -> Sweep:
    """A real queue-person sweep (one configuration, depth 1) with its chunks run and stored by the
    services: its waiting scenarios have open questions with real durable states."""
    sweep = run_all(create(configs=MARKERS, person="queue"))
    assert Question.objects.filter(sweep=sweep, status=Question.Status.OPEN).exists()
    return sweep


def member(name: str, role: str | None, **fields: Any) -> Any:
    """A user in one of sweeps.roles' groups (None: in none), as `manage.py user NAME --role ROLE` makes
    it; no password unless given (no slow hashing)."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    fields.setdefault("is_staff", role == "staff")
    user = get_user_model().objects.create_user(name, **fields)
    if role is not None:
        user.groups.add(Group.objects.get(name=role))
    return user


def logged_in(user: Any) -> Any:
    """A test client with `user`'s session (None: nobody logged in)."""
    from django.test import Client

    c = Client()
    if user is not None:
        c.force_login(user)
    return c


def exported(c: Any, url: str) -> Any:
    """A scenario export as its user gets it: asked for (POST), made here as its worker makes it
    (export_files.export_build, the task's one call), then its file fetched (a FileResponse)."""
    r = c.post(url)
    assert r.status_code == 302, r
    export_id = resolve(urlsplit(r["Location"]).path).kwargs["export_id"]
    assert export_files.export_build(export_id=export_id)
    file = c.get(reverse("sweeps:export_file", args=[export_id]))
    assert file.status_code == 200 and file.streaming
    return file


# The views' `sweep` fixture's first row: once, twice, with dups, dups, missing, wrong, gave up, denied
# ran, asks, avoidable, calls+.
CONFIG_0 = [2, 2, 1, 2, 1, 1, 1, 2, 1, 1, 3]
REFUSED_SECONDS = 0.2  # the goal is 0.1 s; these refusals take about 0.01 s here


def text(response) -> str:
    return response.content.decode()


def count_shown(page: str) -> int:
    return int(re.search(r'<strong id="count">(\d+)</strong>', page).group(1))


def heatmap_page(client: Any, sweep: Sweep, query: str = "") -> str:
    return text(client.get(reverse("sweeps:heatmap", args=[sweep.pk]) + query))


def timed(call: Callable[[], Any]) -> tuple[Any, float]:
    """A request's response and its seconds, after one request of the same client's apart (the
    first request's own costs: templates, the session)."""
    call()
    start = time.perf_counter()
    r = call()
    return r, time.perf_counter() - start
