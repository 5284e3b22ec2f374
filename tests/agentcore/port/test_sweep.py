"""The driver sweeps targets through fork servers; the lesson of the examples, from their rows."""

import pytest

from agentcore import jobs
from agentcore.port import TargetError, sweep_target
from agentcore.records import table_row

TRIAGE = jobs.load("triage")


def row(target, **kw):
    result = sweep_target(f"examples.plain_loop:{target}", TRIAGE, "triage", **kw)
    return table_row(target, result.records)


def test_the_naive_loop_doubles_effects_a_crash_interrupted():
    r = row("naive", depth=1)
    assert r.once == 12 and r.with_dups == 6 and r.missing == 0


def test_a_key_from_an_unsaved_reply_looks_safe_with_a_model_that_repeats_its_ids():
    assert row("keyed_late", depth=2, model="fixed").dups == 0


def test_the_same_key_breaks_when_the_model_mints_fresh_ids_as_a_real_one_does():
    r = row("keyed_late", depth=2, workers=2)
    assert r.once == 12 and r.twice == 92 and r.with_dups == 78 and r.dups == 142


def test_the_key_is_safe_once_the_reply_that_carries_its_id_is_durable():
    r = row("keyed", depth=2, workers=2)
    assert (r.once, r.twice, r.with_dups, r.missing, r.wrong) == (14, 97, 0, 0, 0)


def test_depth_three_crashes_the_second_restart_too():
    r = row("keyed", depth=3, workers=2)
    assert r.thrice > r.twice and r.with_dups == 0


def test_a_target_whose_points_change_from_run_to_run_is_refused_with_the_difference():
    with pytest.raises(TargetError, match="only the first run met: step pid="):
        sweep_target("tests.agentcore.port.targets:shifting", TRIAGE, "triage", depth=1)


def test_a_target_that_cannot_be_imported_is_refused_by_its_server():
    with pytest.raises(TargetError, match="cannot import nowhere"):
        sweep_target("nowhere:x", TRIAGE, "triage")
