"""LangGraph through the port: its points, and the rows that teach the lesson (examples/langgraph_triage.py).

The triage job in four model calls (examples/triage4.json), as the prototype the issue quotes ran it.
"""

import inspect
import os
from collections import Counter

import pytest

pytest.importorskip(
    "langgraph", reason="the LangGraph extra is not installed: .venv/bin/pip install -r requirements-langgraph.txt"
)

from agentcore import jobs  # noqa: E402
from agentcore.port import sweep_target  # noqa: E402
from agentcore.port.labels import kind_of  # noqa: E402
from agentcore.port.sampled import rates  # noqa: E402
from agentcore.records import table_row  # noqa: E402

JOB_FILE = "examples/triage4.json"
JOB = jobs.load(JOB_FILE)


def sweep(target, **kw):
    return sweep_target(f"examples.langgraph_triage:{target}", JOB, JOB_FILE, workers=2, **kw)


def per_pass(result):
    """A row's counts per pass: ToolNode runs a turn's two tools in threads, so its sweep is a sample
    (AUTO_SAMPLES passes unasked; the tests ask for 2), here with the same counts in every pass."""
    row = table_row(result.target, result.records)
    assert len(result.records) % result.samples == 0
    return row.once // result.samples, row.with_dups // result.samples, row.with_dups % result.samples


def test_a_sync_stategraph_meets_every_put_put_writes_reply_and_effect():
    result = sweep("naive_sync", depth=1, samples=2)
    kinds = Counter(kind_of(label) for label in result.labels)
    assert kinds == {"put": 9, "put_writes": 8, "reply": 4, "effect": 3}
    assert per_pass(result) == (24, 3, 0)


def test_keyed_tools_after_sync_saves_double_nothing():
    assert table_row("keyed", sweep("keyed_sync", depth=1, samples=2).records).with_dups == 0


@pytest.fixture(scope="module")
def keyed_exit():
    """keyed_exit swept unasked (its passes left to the port), shared by the two tests that read it."""
    return sweep("keyed_exit", depth=1)


def test_a_sync_stategraph_s_tools_run_in_threads_so_its_sweep_is_a_sample_unasked(keyed_exit):
    from agentcore.port.sweep import AUTO_SAMPLES

    assert not keyed_exit.ordered and keyed_exit.samples == AUTO_SAMPLES


def test_with_exit_durability_a_key_from_fresh_call_ids_doubles_what_no_key_doubles(keyed_exit):
    naive = per_pass(sweep("naive_exit", depth=1, samples=2))
    assert naive == per_pass(keyed_exit) == (8, 6, 0)


def test_a_model_that_repeats_its_ids_certifies_that_key_wrongly():
    assert table_row("keyed", sweep("keyed_exit", depth=1, model="fixed", samples=2).records).with_dups == 0


def test_async_durability_is_a_sample_whose_naive_tools_double():
    result = sweep("naive_async", depth=1, samples=2)  # its saves race its next step: a sample
    dup = rates(result.records)[0]
    assert result.samples == 2 and len(result.labels) == 24 and dup.n == 48 and dup.hits > 0


def test_async_keyed_tools_with_a_model_that_repeats_its_ids_double_nothing():
    result = sweep("keyed_async", depth=1, samples=2, model="fixed")
    assert rates(result.records)[0].hits == 0


def test_the_functional_api_s_points_are_the_prototype_s_and_its_fixed_id_key_doubles_nothing():
    result = sweep("keyed_functional", depth=1, samples=2, model="fixed")  # its task writes run in the background
    kinds = Counter(kind_of(label) for label in result.labels)
    assert kinds == {"put": 2, "put_writes": 9, "reply": 4, "effect": 3}
    assert rates(result.records)[0].hits == 0


def test_a_row_names_the_pinned_runtime_it_was_measured_on():
    from agentcore.adapters.langgraph import VERSIONS
    from agentcore.port.sweep import Served, runtime_of, server_argv

    server = Served(server_argv("examples.langgraph_triage:keyed_sync", JOB_FILE))
    server.close()
    shown = runtime_of(server.hello["versions"])
    assert all(f"{d} {v}" in shown for d, v in VERSIONS.items()), (shown, VERSIONS)
    # Installed beside it under the same namespace package, but not imported: not named.
    assert "langgraph-checkpoint-postgres" not in shown


def test_the_wrapped_saver_keeps_put_writes_signature(tmp_path):
    from agentcore.adapters.langgraph import port_saver

    class Handle:
        workdir = str(tmp_path)

        def point(self, kind, detail=""):
            pass

    saver = port_saver(Handle())
    assert "task_path" in inspect.signature(saver.put_writes).parameters


@pytest.fixture
def postgres_saves(monkeypatch):
    """A throwaway database on the services pass's PostgreSQL, its URL in AGENTCORE_LANGGRAPH_POSTGRES
    through the server's Unix socket (a child has no network namespace's loopback), dropped after."""
    import psycopg
    from django.conf import settings

    db = settings.DATABASES["default"]
    admin = dict(host=db.get("HOST") or "127.0.0.1", port=db.get("PORT") or 5432, user=db.get("USER") or "postgres")
    name = f"agentcore_lg_{os.getpid()}"
    with psycopg.connect(**admin, dbname="postgres", autocommit=True) as conn:
        socket_dir = conn.execute("SHOW unix_socket_directories").fetchone()[0].split(",")[0].strip()
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"CREATE DATABASE {name}")
    monkeypatch.setenv("AGENTCORE_LANGGRAPH_POSTGRES", f"postgresql://{admin['user']}@/{name}?host={socket_dir}")
    yield dict(admin, dbname=name)
    with psycopg.connect(**admin, dbname="postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.mark.services
def test_on_postgres_saver_the_sync_graph_s_points_and_rows_are_sqlite_saver_s(postgres_saves):
    import psycopg

    naive = sweep("naive_sync", depth=1, samples=1)
    assert Counter(kind_of(label) for label in naive.labels) == {"put": 9, "put_writes": 8, "reply": 4, "effect": 3}
    assert per_pass(naive) == (24, 3, 0)
    keyed = sweep("keyed_sync", depth=1, samples=1)
    assert table_row("keyed", keyed.records).with_dups == 0
    assert "langgraph-checkpoint-postgres 3.2.0" in ", ".join(f"{d} {v}" for d, v in keyed.hello["versions"].items())
    with psycopg.connect(**postgres_saves) as conn:  # the saves were PostgreSQL's: a schema per scenario
        (schemas,) = conn.execute(
            "SELECT count(*) FROM information_schema.schemata WHERE schema_name LIKE 'agentcore\\_%'"
        ).fetchone()
    assert schemas >= len(naive.records) + len(keyed.records)  # and the uninterrupted runs' own
