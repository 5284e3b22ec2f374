"""With 100,000 scenario rows stored, the sweep page, heatmaps, scenario list and compare page answer in
under 150 ms (the goal; asserted at twice it); so do a depth-3 sweep's (its third-point map and
filters too).

The rows (10 configurations x 100 first points x 100 scenarios each: the once scenario and 99 twice
scenarios) are bulk-created once for the module. Each page is requested once to warm up, then
REPEATS times; the median is compared with the budget. Run with -s to see the timings. (The budget
is for SQLite, the embedded default; on PostgreSQL the tables are vacuumed first, as autovacuum would.)
"""

from __future__ import annotations

import statistics
import time

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse

from sweeps.models import Chunk, Scenario, Sweep
from tests.sweeps import _data
from tests.sweeps._web import logged_in, member

pytestmark = [pytest.mark.django_db, pytest.mark.perf]

ROWS = 100_000
# The goal (printed with each page's median), asserted with twice its margin: a loaded machine (CI's
# timed pass runs these after the fault tests) never fails it, a page that reads its rows the slow
# way (seconds at this size) does.
GOAL_MS = 150
BUDGET_MS = 2 * GOAL_MS
REPEATS = 5


def stored_for_the_module(django_db_blocker, **shape):
    """A big sweep (_data.big_sweep's `shape`) of ROWS rows while the module's tests run, then deleted."""
    with django_db_blocker.unblock():
        sweep = _data.big_sweep(**shape)
        assert Scenario.objects.filter(sweep=sweep).count() == ROWS
        if connection.vendor == "postgresql":  # what autovacuum does soon after a bulk insert
            with connection.cursor() as cur:
                cur.execute(f"VACUUM ANALYZE {Scenario._meta.db_table}")
                cur.execute(f"VACUUM ANALYZE {Chunk._meta.db_table}")
    yield sweep
    with django_db_blocker.unblock(), connection.cursor() as cur:
        for model in (Scenario, Chunk):
            cur.execute(f"DELETE FROM {model._meta.db_table} WHERE sweep_id = %s", [sweep.pk])
        Sweep.objects.filter(pk=sweep.pk).delete()


@pytest.fixture
def client() -> Client:
    """A viewer: reading needs a login (its session and permissions are part of each page's time)."""
    return logged_in(member("vic", "viewer"))


@pytest.fixture(scope="module")
def big(django_db_setup, django_db_blocker):
    yield from stored_for_the_module(django_db_blocker, configs_n=10, firsts=100, per_first=100)


def median_ms(client: Client, url: str) -> tuple[float, str]:
    r = client.get(url)
    assert r.status_code == 200, url
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        r = client.get(url)
        times.append((time.perf_counter() - start) * 1000)
    assert r.status_code == 200
    ms = statistics.median(times)
    print(f"\n{url}: median {ms:.1f} ms over {REPEATS} requests ({len(r.content) // 1024} KB; goal {GOAL_MS} ms)")
    return ms, r.content.decode()


PAGES = [
    ("sweeps:detail", ""),
    ("sweeps:progress", ""),
    ("sweeps:heatmap", ""),
    ("sweeps:heatmap", "?metric=asks&config=7"),
    ("sweeps:scenarios", ""),
    ("sweeps:scenarios", "?page=2000"),
    ("sweeps:scenarios", "?has_dups=yes&twice=yes"),
    ("sweeps:scenarios", "?design=loop&tracker=keyless&asked=no&page=20"),
    ("sweeps:scenarios", "?first_kind=reply-arrived&status=done&second_point=7"),
    ("sweeps:scenarios", "?config=3&has_dups=yes&sum=duplicates"),  # a table number's list, stating its sum
    ("sweeps:scenarios", "?extra_calls=yes&sum=calls_plus&page=300"),
]


@pytest.mark.parametrize("name,query", PAGES, ids=[f"{n.split(':')[1]}{q}" for n, q in PAGES])
def test_page_answers_within_budget(big, client, name, query):
    ms, _ = median_ms(client, reverse(name, args=[big.pk]) + query)
    assert ms < BUDGET_MS


def test_sweep_page_counts_all_rows(big, client):
    _, page = median_ms(client, reverse("sweeps:detail", args=[big.pk]))
    assert f'<strong id="scenarios">{ROWS}</strong>' in page and "1000 / 1000" in page


def test_scenario_list_counts_all_rows(big, client):
    _, page = median_ms(client, reverse("sweeps:scenarios", args=[big.pk]))
    assert f'<strong id="count">{ROWS}</strong>' in page


def test_compare_answers_within_budget(big, client):
    """Two 100,000-row tables side by side (the sweep with itself: two aggregates, as two sweeps take)."""
    Sweep.objects.filter(pk=big.pk).update(table=None)
    ms, page = median_ms(client, reverse("sweeps:compare") + f"?a={big.pk}&b={big.pk}")
    assert ms < BUDGET_MS
    assert '<strong id="changed-count">0</strong> of 10 configurations differ' in page


def test_the_heatmap_with_every_metric_stays_small(big, client):
    """Both maps carry all four metrics (a new colour needs no request): the page stays under 1.5 MB."""
    _, page = median_ms(client, reverse("sweeps:heatmap", args=[big.pk]) + "?config=4")
    assert len(page.encode()) < 1_500_000


# A depth-3 sweep of 100,000 rows: 4 configurations x 25 first points x (the once scenario, 27 twice
# scenarios and 36 thrice scenarios after each).
@pytest.fixture(scope="module")
def deep(django_db_setup, django_db_blocker):
    yield from stored_for_the_module(django_db_blocker, configs_n=4, firsts=25, per_first=28, thirds=36)


DEEP_PAGES = [
    ("sweeps:detail", ""),
    ("sweeps:progress", ""),
    ("sweeps:heatmap", "?config=2"),
    ("sweeps:heatmap", "?config=3&first=7&second=20&metric=asks"),  # the third-point map
    ("sweeps:scenarios", "?thrice=yes&page=500"),
    ("sweeps:scenarios", "?config=1&third_point=30&has_dups=yes"),
    ("sweeps:scenarios", "?twice=yes&thrice=no&sum=duplicates"),  # the table's twice number at depth 3
]


@pytest.mark.parametrize("name,query", DEEP_PAGES, ids=[f"{n.split(':')[1]}{q}" for n, q in DEEP_PAGES])
def test_a_depth_3_sweep_s_page_answers_within_budget(deep, client, name, query):
    ms, page = median_ms(client, reverse(name, args=[deep.pk]) + query)
    assert ms < BUDGET_MS
    if "first=7" in query:
        assert 'id="fig-third"' in page


def test_a_depth_3_sweep_s_table_counts_its_thrice_scenarios(deep, client):
    _, page = median_ms(client, reverse("sweeps:detail", args=[deep.pk]))
    assert f'<strong id="scenarios">{ROWS}</strong>' in page and ">thrice</th>" in page
    Sweep.objects.filter(pk=deep.pk).update(table=None)
    ms, page = median_ms(client, reverse("sweeps:compare") + f"?a={deep.pk}&b={deep.pk}")
    assert ms < BUDGET_MS
    assert '<strong id="changed-count">0</strong> of 4 configurations differ' in page
