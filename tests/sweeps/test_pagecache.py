"""The page cache (sweeps/pagecache.py): what a page computes from a sweep's rows is computed once per
version of the rows, equals the live computation, and is computed again when the rows change.

A done sweep's rows never change: its version costs no query and its pages read their numbers,
figures and rows' HTML from the cache. A waiting (or failed, cancelled) sweep's version moves with
each chunk stored and each question answered or resumed; a running sweep's pages are computed on
each request, but for its heatmaps, drawn once per chunk stored. The perf-marked test holds a done
sweep's cached pages at 100,000 rows to a query count (none of the scenario rows) and to twice the
time per request that 20 clients on 2 gunicorn workers leave each request for a 300 ms p95 (the
goal: 2 workers x 300 ms / 20 clients = 30 ms).
"""

from __future__ import annotations

import re
import statistics
import time

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from sweeps import pagecache, selectors
from sweeps.models import Chunk, Question, Scenario, Sweep
from sweeps.services import lifecycle
from tests.sweeps import _data
from tests.sweeps._web import launch_data, logged_in, member
from tests.sweeps.test_perf import PAGES, stored_for_the_module

pytestmark = pytest.mark.django_db


@pytest.fixture
def client():
    return logged_in(member("vic", "viewer"))


def stored(status: str = Sweep.Status.DONE, configs: int = 3, firsts: int = 4, per_first: int = 5) -> Sweep:
    """A sweep with every chunk stored and its rows (the once scenario and per_first - 1 twice ones)."""
    sweep = _data.make_sweep(configs, status=status, total_chunks=configs * firsts)
    for c in range(configs):
        for f in range(1, firsts + 1):
            _data.chunk(sweep, c, f, scenarios=per_first)
            Scenario.objects.bulk_create(
                [_data.scenario(sweep, c, f, s, duplicates=(c + f + s) % 3, asks=s % 2) for s in range(per_first)]
            )
    return Sweep.objects.get(pk=sweep.pk)


def fresh(sweep: Sweep) -> Sweep:
    """The sweep read again, as the next request reads it (a version is read once per object)."""
    return selectors.sweep_get(sweep.pk)


def page(response) -> str:
    """A page's HTML but its CSRF token (the log-out form's: new in each response)."""
    return re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', "", response.content.decode())


def queries(fn) -> int:
    with CaptureQueriesContext(connection) as ctx:
        fn()
    return len(ctx.captured_queries)


def test_a_done_sweep_s_version_costs_no_query_and_names_the_sweep():
    sweep = stored()
    assert queries(lambda: pagecache.rows_version(sweep)) == 0
    assert pagecache.rows_version(sweep).startswith(f"{sweep.pk}.")


def test_a_running_sweep_has_no_version_and_is_computed_each_time():
    sweep = stored(Sweep.Status.RUNNING)
    assert pagecache.rows_version(sweep) is None
    before = selectors.scenario_totals(sweep, {})
    Scenario.objects.bulk_create([_data.scenario(sweep, 0, 1, 99, duplicates=4)])
    after = selectors.scenario_totals(fresh(sweep), {})
    assert after["count"] == before["count"] + 1 and after["duplicates"] == before["duplicates"] + 4


def test_a_done_sweep_s_totals_are_read_once_and_equal_the_live_aggregate():
    sweep = stored()
    filters = {"has_dups": True, "config": 1}
    live = selectors.scenario_filter(sweep, filters).count()
    first = selectors.scenario_totals(sweep, filters)
    assert first["count"] == live > 0
    assert first["duplicates"] == sum(selectors.scenario_filter(sweep, filters).values_list("duplicates", flat=True))
    again = fresh(sweep)
    assert queries(lambda: selectors.scenario_totals(again, filters)) == 0
    assert selectors.scenario_totals(again, filters) == first


def test_a_done_sweep_s_progress_and_table_are_read_once_and_equal_the_live_ones():
    sweep = stored()
    lifecycle.sweep_finalize(sweep_id=sweep.pk)  # already done: nothing changes
    live = selectors.progress._progress_counts(sweep), selectors.tables._table_live(sweep)
    assert selectors.sweep_progress(sweep)["scenarios"] == live[0]["scenarios"] == 3 * 4 * 5
    assert selectors.sweep_table_live(sweep) == live[1]
    again = fresh(sweep)
    assert queries(lambda: (selectors.sweep_progress(again), selectors.sweep_table_live(again))) == 0


def test_finalize_turns_a_waiting_sweep_s_cached_table_into_the_done_one():
    """The rows a waiting sweep's page cached are not a done sweep's: done is a new version."""
    sweep = stored(Sweep.Status.WAITING)
    scenario = Scenario.objects.filter(sweep=sweep, config=2).first()
    q = _data.question(scenario, status=Question.Status.OPEN)
    waiting = selectors.sweep_table_live(sweep)
    assert waiting["partial"] and waiting["rows"][2]["values"]["twice"] is None  # not final: it waits
    Question.objects.filter(pk=q.pk).update(status=Question.Status.RESUMED)
    done = lifecycle.sweep_finalize(sweep_id=sweep.pk)
    assert done.status == Sweep.Status.DONE
    table = selectors.sweep_table_live(fresh(sweep))
    assert not table["partial"] and table["rows"][2]["values"]["twice"] == 4 * 4


def test_a_waiting_sweep_s_cache_moves_with_each_chunk_stored_and_each_answer():
    sweep = stored(Sweep.Status.WAITING)
    extra = _data.chunk(sweep, 0, 9, stored=False)
    scenario = Scenario.objects.filter(sweep=sweep).first()
    q = _data.question(scenario, status=Question.Status.OPEN)
    versions = [pagecache.rows_version(fresh(sweep))]
    count = selectors.scenario_totals(fresh(sweep), {})["count"]
    # A chunk stored: its rows and the chunk's flag, as services.chunks stores them.
    Scenario.objects.bulk_create([_data.scenario(sweep, 0, 9, s) for s in range(3)])
    Chunk.objects.filter(pk=extra.pk).update(stored=True, stored_at=timezone.now())
    versions.append(pagecache.rows_version(fresh(sweep)))
    assert selectors.scenario_totals(fresh(sweep), {})["count"] == count + 3
    # An answer, then its resume (the scenario's outcome stored).
    Question.objects.filter(pk=q.pk).update(status=Question.Status.ANSWERED, answer=True)
    versions.append(pagecache.rows_version(fresh(sweep)))
    assert selectors.sweep_progress(fresh(sweep))["open_questions"] == 0
    Scenario.objects.filter(pk=scenario.pk).update(duplicates=50)
    Question.objects.filter(pk=q.pk).update(status=Question.Status.RESUMED)
    versions.append(pagecache.rows_version(fresh(sweep)))
    assert selectors.scenario_totals(fresh(sweep), {})["duplicates"] >= 50
    assert len(set(versions)) == 4


def test_a_sweep_id_used_again_never_meets_the_last_sweep_s_entries():
    sweep = stored(firsts=2)
    first = selectors.scenario_totals(sweep, {})
    pk = sweep.pk
    Sweep.objects.filter(pk=pk).delete()
    again = _data.make_sweep(3, status=Sweep.Status.DONE)
    Sweep.objects.filter(pk=again.pk).update(id=pk)
    reused = Sweep.objects.get(pk=pk)
    assert pagecache.rows_version(reused) != pagecache.rows_version(sweep)
    assert selectors.scenario_totals(reused, {})["count"] == 0 != first["count"]


def test_the_scenario_list_of_a_done_sweep_is_the_same_page_from_the_cache(client):
    sweep = stored()
    url = reverse("sweeps:scenarios", args=[sweep.pk]) + "?has_dups=yes&config=1&sum=duplicates"
    cache.clear()
    with CaptureQueriesContext(connection) as cold:
        first = client.get(url)
    with CaptureQueriesContext(connection) as warm:
        second = client.get(url)
    assert first.status_code == second.status_code == 200
    assert page(first) == page(second)
    assert 'id="scenarios"' in page(second) and 'id="filters"' in page(second)
    scenario_reads = [q for q in warm.captured_queries if "sweeps_scenario" in q["sql"]]
    assert scenario_reads == [] and len(warm.captured_queries) < len(cold.captured_queries)


def test_the_heatmap_of_a_done_sweep_is_drawn_once(client, monkeypatch):
    sweep = stored()
    from sweeps import charts

    drawn = []
    real = charts.design_first_figure
    monkeypatch.setattr(charts, "design_first_figure", lambda *a, **k: drawn.append(1) or real(*a, **k))
    url = reverse("sweeps:heatmap", args=[sweep.pk]) + "?metric=asks&config=2"
    pages = [page(client.get(url)) for _ in range(3)]
    assert len(drawn) == 1 and pages[0] == pages[1] == pages[2]
    client.get(reverse("sweeps:heatmap", args=[sweep.pk]) + "?metric=duplicates&config=2")
    assert len(drawn) == 2  # another metric is another figure


def test_a_refused_launch_form_is_never_the_cached_one():
    operator = logged_in(member("olga", "operator"))
    assert operator.get(reverse("sweeps:list")).status_code == 200  # the unbound form, kept
    r = operator.post(reverse("sweeps:launch"), launch_data(preset="custom"))
    assert r.status_code == 400 and "choose at least one design" in r.content.decode()
    assert "choose at least one design" not in operator.get(reverse("sweeps:list")).content.decode()


def test_a_running_sweep_s_scenario_list_shows_rows_stored_since_the_last_request(client):
    sweep = stored(Sweep.Status.RUNNING, firsts=1)
    url = reverse("sweeps:scenarios", args=[sweep.pk])
    assert '<strong id="count">15</strong>' in client.get(url).content.decode()
    Scenario.objects.bulk_create([_data.scenario(sweep, 0, 7)])
    assert '<strong id="count">16</strong>' in client.get(url).content.decode()


# --- a done sweep's cached pages at 100,000 rows ------------------------------------------------

ROWS = 100_000
# 2 workers x 300 ms / 20 clients: what each request may take for a 300 ms p95 (the goal, printed);
# asserted with twice that margin, so a loaded machine never fails it (the uncached pages' queries
# of the scenario rows, asserted apart, are what tells a regression to the old way).
GOAL_MS = 30
CACHED_BUDGET_MS = 2 * GOAL_MS
# The request's own (session, user, permissions, the sweep) and the page's few small reads.
CACHED_QUERIES = 8
REPEATS = 7


@pytest.fixture(scope="module")
def done_big(django_db_setup, django_db_blocker):
    for sweep in stored_for_the_module(django_db_blocker, configs_n=10, firsts=100, per_first=100):
        with django_db_blocker.unblock():
            Sweep.objects.filter(pk=sweep.pk).update(status=Sweep.Status.DONE, finished_at=timezone.now())
        yield sweep


@pytest.mark.perf
@pytest.mark.parametrize("name,query", PAGES, ids=[f"{n.split(':')[1]}{q}" for n, q in PAGES])
def test_a_done_sweep_s_cached_page_answers_within_its_share(done_big, client, name, query):
    """test_perf's pages, of a done sweep: the second request on reads nothing of the scenario rows."""
    url = reverse(name, args=[done_big.pk]) + query
    assert client.get(url).status_code == 200  # computed and kept
    times = []
    for _ in range(REPEATS):
        with CaptureQueriesContext(connection) as ctx:
            start = time.perf_counter()
            r = client.get(url)
            times.append((time.perf_counter() - start) * 1000)
        assert r.status_code == 200
        assert len(ctx.captured_queries) <= CACHED_QUERIES, [q["sql"][:120] for q in ctx.captured_queries]
        assert not [q for q in ctx.captured_queries if "sweeps_scenario" in q["sql"]], url
    ms = statistics.median(times)
    print(f"\n{url}: median {ms:.1f} ms from the cache ({len(r.content) // 1024} KB; goal {GOAL_MS} ms)")
    assert ms < CACHED_BUDGET_MS


def test_the_heatmap_of_a_running_sweep_is_drawn_again_once_a_chunk_is_stored(client, monkeypatch):
    sweep = stored(Sweep.Status.RUNNING)
    from sweeps import charts

    drawn = []
    real = charts.design_first_figure
    monkeypatch.setattr(charts, "design_first_figure", lambda *a, **k: drawn.append(1) or real(*a, **k))
    url = reverse("sweeps:heatmap", args=[sweep.pk]) + "?metric=duplicates&config=0"
    first = [page(client.get(url)) for _ in range(2)]
    assert len(drawn) == 1 and first[0] == first[1]
    _data.chunk(sweep, 0, 99)  # a store: its chunk and its rows
    Scenario.objects.bulk_create([_data.scenario(sweep, 0, 99, 0, duplicates=7)])
    again = page(client.get(url))
    assert len(drawn) == 2 and again != first[0]
