"""views/compare.py: two sweeps' tables side by side, their differences, the export."""

from __future__ import annotations

import csv
import html
import io
import re

import pytest
from django.urls import reverse

from agentcore.records import COLUMNS
from sweeps import exports
from sweeps.models import Sweep
from tests.sweeps import _data
from tests.sweeps._web import CONFIG_0, text

pytestmark = pytest.mark.django_db


@pytest.fixture
def other_sweep(sweep):
    """Sweep's first two configurations, the second with another number; a fourth config of its own."""
    s = _data.make_sweep(2, configs=sweep.configs[:2] + [_data.configs(4)[3]], name="after the change")
    _data.add(s, 0, 1)
    _data.add(s, 0, 1, 1, duplicates=2, asks=1, avoidable=1)
    _data.add(s, 0, 2, missing=1, wrong=1, gave_up=1)
    _data.add(s, 0, 2, 1, calls_plus=3, denied_ran=2)
    _data.add(s, 1, 1, duplicates=3)
    return s


def compare(client, query):
    return client.get(reverse("sweeps:compare") + query)


def compare_rows(page):
    """{configuration: (data-in, [(value text, highlighted), ...])} from the compare table."""
    out = {}
    for attrs, body in re.findall(r'<tr class="[^"]*" data-in="(\w+)">(.*?)</tr>', page, re.S):
        name = re.sub(r"<[^>]+>|\(only in sweep \d+\)", "", re.search(r"<td>(.*?)</td>", body, re.S).group(1)).strip()
        cells = re.findall(r'<td class="num([^"]*)">(.*?)</td>', body, re.S)
        out[html.unescape(name)] = (attrs, [(re.sub(r"<[^>]+>", " ", v).split()[0], "diff" in c) for c, v in cells])
    return out


def test_compare_without_sweeps_offers_the_choice(client, sweep, other_sweep):
    r = compare(client, "")
    assert r.status_code == 200 and 'id="compare-form"' in text(r) and 'id="compare"' not in text(r)
    assert f'<option value="{other_sweep.pk}">{other_sweep.pk}: after the change, running</option>' in text(r)


def test_compare_from_a_sweeps_nav_link_preselects_it(client, sweep, other_sweep):
    page = text(compare(client, f"?a={sweep.pk}"))
    assert f'<option value="{sweep.pk}" selected>' in page and 'id="compare"' not in page


def test_compare_shows_both_tables_side_by_side_with_the_differences_highlighted(client, sweep, other_sweep):
    rows = compare_rows(text(compare(client, f"?a={sweep.pk}&b={other_sweep.pk}")))
    same, changed = sweep.configs[0]["name"], sweep.configs[1]["name"]
    assert rows[same] == ("both", [(str(v), False) for v in CONFIG_0 * 2])
    dups = COLUMNS.index("dups")
    assert rows[changed][1][dups] == ("1", True) and rows[changed][1][len(COLUMNS) + dups] == ("3", True)  # 1 -> 3
    assert rows[changed][1][0] == ("1", False)


def test_compare_says_which_rows_only_one_sweep_has(client, sweep, other_sweep):
    page = text(compare(client, f"?a={sweep.pk}&b={other_sweep.pk}"))
    rows = compare_rows(page)
    assert rows[sweep.configs[2]["name"]][0] == "a" and rows[other_sweep.configs[2]["name"]][0] == "b"
    assert f"(only in sweep {sweep.pk})" in page and f"(only in sweep {other_sweep.pk})" in page
    assert '<strong id="changed-count">3</strong> of 4 configurations differ' in page


def test_compare_shows_b_minus_a_beside_b(client, sweep, other_sweep):
    page = text(compare(client, f"?a={sweep.pk}&b={other_sweep.pk}"))
    assert '3<span class="delta">+2</span>' in page


def test_compare_says_when_a_table_is_not_final(client, sweep, other_sweep):
    Sweep.objects.filter(pk=sweep.pk).update(status=Sweep.Status.DONE)
    page = text(compare(client, f"?a={sweep.pk}&b={other_sweep.pk}"))
    assert f"sweep {other_sweep.pk} is running: its table is not final" in page


def test_compare_says_when_the_job_files_differ(client, sweep, other_sweep):
    assert 'id="jobs-differ"' not in text(compare(client, f"?a={sweep.pk}&b={other_sweep.pk}"))
    Sweep.objects.filter(pk=other_sweep.pk).update(job_source='{"name": "triage", "changed": 1}')
    assert 'id="jobs-differ"' in text(compare(client, f"?a={sweep.pk}&b={other_sweep.pk}"))


def test_compare_shows_each_sweep_s_conditions(client, sweep, other_sweep):
    Sweep.objects.filter(pk=other_sweep.pk).update(crash_model="power-cut", fsync=False)
    page = text(compare(client, f"?a={sweep.pk}&b={other_sweep.pk}"))
    assert re.findall(r'<span class="conditions">(.*?)</span>', page) == [
        "crash model: panic, fsync on",
        "crash model: power-cut, fsync off",
    ]


def test_compare_says_when_the_world_differs(client, sweep, other_sweep):
    Sweep.objects.filter(pk=other_sweep.pk).update(
        tracker_fault="ttl:5", tool_faults="k:3", person_faults="deny:0.5", model="fresh-ids", seed=2
    )
    page = text(compare(client, f"?a={sweep.pk}&b={other_sweep.pk}"))
    assert re.findall(r'<p class="setup-differs">(.*?)</p>', page) == [
        "Different tracker fault: none in A, ttl:5 in B.",
        "Different tool faults: first in A, k:3 in B.",
        "Different person faults: truthful in A, deny:0.5 in B.",
        "Different model: fixed in A, fresh-ids in B.",
        "Different seed: 0 in A, 2 in B.",
    ]
    assert re.findall(r'<span class="conditions">(.*?)</span>', page)[1] == (
        "crash model: panic, fsync on, tracker fault: ttl:5, tool faults: k:3, person: deny:0.5, model: fresh-ids, "
        "seed: 2"
    )


def test_compare_says_when_the_conditions_differ(client, sweep, other_sweep):
    assert "setup-differs" not in text(compare(client, f"?a={sweep.pk}&b={other_sweep.pk}"))
    Sweep.objects.filter(pk=other_sweep.pk).update(crash_model="power-cut", fsync=False, tracker_fault="crash")
    page = text(compare(client, f"?a={sweep.pk}&b={other_sweep.pk}"))
    assert re.findall(r'<p class="setup-differs">(.*?)</p>', page) == [
        "Different crash model: panic in A, power-cut in B.",
        "Different fsync: on in A, off in B.",
        "Different tracker fault: none in A, crash in B.",
    ]


def test_compare_export_carries_each_sweep_s_conditions(auth, sweep, other_sweep):
    Sweep.objects.filter(pk=other_sweep.pk).update(crash_model="kill")
    r = auth.get(reverse("sweeps:compare_export") + f"?a={sweep.pk}&b={other_sweep.pk}")
    lines = list(csv.DictReader(io.StringIO(text(r))))
    assert {(line["conditions_a"], line["conditions_b"]) for line in lines} == {("panic, fsync on", "kill, fsync on")}


@pytest.mark.parametrize("query", ["?a=x&b=1", "?a=0&b=1", "?a=1&b=-4", "?a=1&b=99999999999999999999"])
def test_compare_bad_ids_are_400(client, sweep, query):
    assert compare(client, query).status_code == 400


def test_compare_unknown_sweep_is_404(client, sweep):
    assert compare(client, f"?a={sweep.pk}&b=424242").status_code == 404


def test_sweep_nav_links_to_compare(client, sweep):
    assert f'href="{reverse("sweeps:compare")}?a={sweep.pk}"' in text(
        client.get(reverse("sweeps:detail", args=[sweep.pk]))
    )


def test_compare_export_needs_login_even_where_reading_is_public(anon, sweep, other_sweep, settings):
    settings.SWEEPSITE_PUBLIC_READ = True
    r = anon.get(reverse("sweeps:compare_export") + f"?a={sweep.pk}&b={other_sweep.pk}")
    assert r.status_code == 302 and "/accounts/login/" in r["Location"]


def test_compare_export_is_the_difference_as_csv(auth, sweep, other_sweep):
    r = auth.get(reverse("sweeps:compare_export") + f"?a={sweep.pk}&b={other_sweep.pk}")
    assert r.status_code == 200 and r["Content-Type"].startswith("text/csv")
    assert f'filename="compare-sweep-{sweep.pk}-with-{other_sweep.pk}.csv"' in r["Content-Disposition"]
    lines = list(csv.DictReader(io.StringIO(text(r))))
    # A name a spreadsheet would run as a formula ("+ idempotency keys") carries a ' in front.
    by_name = {line["configuration"]: line for line in lines}
    changed = by_name[exports.spreadsheet_cell(sweep.configs[1]["name"])]
    assert (changed["in"], changed["changed"], changed["dups_a"], changed["dups_b"], changed["dups_diff"]) == (
        "both",
        "yes",
        "1",
        "3",
        "2",
    )
    assert by_name[exports.spreadsheet_cell(sweep.configs[2]["name"])]["in"] == "a only" and len(lines) == 4


@pytest.mark.parametrize("query", ["", "?a=1", "?a=x&b=2"])
def test_compare_export_without_two_good_ids_is_400(auth, sweep, query):
    assert auth.get(reverse("sweeps:compare_export") + query).status_code == 400


def test_compare_export_unknown_sweep_is_404(auth, sweep):
    assert auth.get(reverse("sweeps:compare_export") + f"?a=424242&b={sweep.pk}").status_code == 404


def test_compare_shows_thrice_when_a_sweep_has_depth_3(client, deep, sweep):
    page = text(client.get(reverse("sweeps:compare") + f"?a={sweep.pk}&b={deep.pk}"))
    assert page.count('<th class="num">thrice</th>') == 2  # on both sides
    assert "Different depth: 2 in A, 3 in B." in page


def test_two_sweeps_of_a_registered_agent_compare_and_export_as_any_sweeps(client, settings):
    from sweeps import targets
    from sweeps.services import launch
    from tests.sweeps._web import TRIAGE, run_all

    settings.SWEEPSITE_TARGETS = "late=examples.plain_loop:keyed_late"
    targets._plans.clear()
    fixed, fresh = (
        run_all(launch.sweep_create(user=None, job_source=TRIAGE, targets=["late"], depth=1, model=m))
        for m in ("fixed", "fresh-ids")
    )
    rows = compare_rows(text(compare(client, f"?a={fixed.pk}&b={fresh.pk}")))
    with_dups = COLUMNS.index("with_dups")
    # The key made from the call ID looks safe under a model that repeats its IDs, and is not.
    assert rows["late"][0] == "both"
    assert rows["late"][1][with_dups] == ("0", True) and int(rows["late"][1][len(COLUMNS) + with_dups][0]) > 0
    table = client.get(reverse("sweeps:export_table", args=[fresh.pk, "csv"]))
    (row,) = list(csv.DictReader(io.StringIO(table.content.decode())))
    assert (row["name"], row["model"]) == ("late", "fresh-ids") and int(row["with_dups"]) > 0
