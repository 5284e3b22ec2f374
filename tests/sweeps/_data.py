"""Rows for the dashboard's tests: sweeps, chunks and scenarios created directly (no sweep is run)."""

from __future__ import annotations

import json
from typing import Any

from agentcore import TABLE
from sweeps.configs import builtin_job_source
from sweeps.models import Chunk, Question, Scenario, Sweep

KINDS = ("reply-arrived", "tracker-accepted", "tool-returned", "result-saved")


def long_title_job(chars: int = 400_000) -> str:
    """The triage job with its first issue's title `chars` characters long: valid, under the upload
    limit, and carried by every state of every scenario."""
    job = json.loads(builtin_job_source())
    job["turns"][0]["calls"][0]["args"]["title"] = "x" * chars
    return json.dumps(job)


def configs(n: int = 11) -> list[dict[str, str]]:
    return [{"name": name, "design": d, "tracker": t} for name, d, t in TABLE[:n]]


def make_sweep(n_configs: int = 11, **kw: Any) -> Sweep:
    fields = {"job_name": "triage", "job_source": builtin_job_source(), "configs": configs(n_configs), "depth": 2}
    fields.update(kw)
    return Sweep.objects.create(**fields)


def point_kind(first: int) -> str:
    return KINDS[first % len(KINDS)]


def scenario(sweep: Sweep, config: int, first: int, second: int = 0, **kw: Any) -> Scenario:
    """An unsaved scenario row; metrics default to 0."""
    cfg = sweep.configs[config]
    fields: dict[str, Any] = {
        "sweep": sweep,
        "config": config,
        "design": cfg["design"],
        "tracker": cfg["tracker"],
        "job": "triage",
        "first_point": first,
        "first_kind": point_kind(first),
        "first_label": f"{point_kind(first)} p{first}",
        "second_point": second,
        "second_kind": point_kind(second) if second else "",
        "second_label": f"{point_kind(second)} q{second}" if second else "",
    }
    fields.update(kw)
    return Scenario(**fields)


def add(sweep: Sweep, config: int, first: int, second: int = 0, **kw: Any) -> Scenario:
    s = scenario(sweep, config, first, second, **kw)
    s.save()
    return s


def chunk(sweep: Sweep, config: int, first: int, stored: bool = True, scenarios: int = 1) -> Chunk:
    return Chunk.objects.create(
        sweep=sweep,
        config=config,
        first_point=first,
        kind=point_kind(first),
        label=f"{point_kind(first)} p{first}",
        stored=stored,
        scenarios=scenarios,
    )


def question(scenario: Scenario, qid: str = "0:call_1", **kw: Any) -> Question:
    fields: dict[str, Any] = {
        "sweep": scenario.sweep,
        "scenario": scenario,
        "qid": qid,
        "call": {"id": qid.split(":")[-1], "tool": "create_issue", "args": {"title": "Login fails"}},
        "key": "k-" + qid,
        "tried": "lookup found nothing; asking",
        "durable": {},
        "truth": True,
    }
    fields.update(kw)
    return Question.objects.create(**fields)


def big_sweep(configs_n: int = 10, firsts: int = 100, per_first: int = 100, thirds: int = 0) -> Sweep:
    """configs_n x firsts x per_first scenario rows (the once scenario and per_first - 1 twice ones);
    with `thirds`, a depth-3 sweep whose twice scenarios have that many thrice ones each."""
    rows = 1 + (per_first - 1) * (1 + thirds)
    sweep = make_sweep(configs_n, total_chunks=configs_n * firsts, depth=3 if thirds else 2)
    Chunk.objects.bulk_create(
        [
            Chunk(
                sweep=sweep,
                config=c,
                first_point=f,
                kind=point_kind(f),
                label=f"{point_kind(f)} p{f}",
                stored=True,
                scenarios=rows,
            )
            for c in range(configs_n)
            for f in range(1, firsts + 1)
        ],
        batch_size=2000,
    )
    batch: list[Scenario] = []
    for c in range(configs_n):
        cfg = sweep.configs[c]
        for f in range(1, firsts + 1):
            fk = point_kind(f)
            fl = f"{fk} create_issue call_{f}"
            for s in range(per_first):
                for t in range(1 + thirds if s else 1):
                    batch.append(
                        Scenario(
                            sweep=sweep,
                            config=c,
                            design=cfg["design"],
                            tracker=cfg["tracker"],
                            job="triage",
                            first_point=f,
                            first_kind=fk,
                            first_label=fl,
                            second_point=s,
                            second_kind=point_kind(s) if s else "",
                            second_label=f"{point_kind(s)} call_{s}" if s else "",
                            third_point=t,
                            third_kind=point_kind(t) if t else "",
                            third_label=f"{point_kind(t)} call_{t}" if t else "",
                            duplicates=int((c + f + s + t) % 7 == 0),
                            missing=int((c * f + s) % 11 == 0),
                            asks=(f + s + t) % 3 == 0,
                            model_calls=5 + (s % 2),
                            calls_plus=s % 2,
                        )
                    )
                    if len(batch) >= 5000:
                        Scenario.objects.bulk_create(batch, batch_size=5000)
                        batch = []
    if batch:
        Scenario.objects.bulk_create(batch, batch_size=5000)
    return sweep
