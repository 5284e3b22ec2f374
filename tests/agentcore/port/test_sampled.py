"""Sampled sweeps (agentcore.port.sampled and sweep_target's passes): rates with Wilson intervals
where a runtime is not deterministic; exact counts where it is."""

import subprocess
import sys

import pytest

from agentcore import jobs
from agentcore.port import sweep_target
from agentcore.port.sampled import rates, wilson
from agentcore.port.sweep import AUTO_SAMPLES

TRIAGE = jobs.load("triage")


def test_wilson_gives_the_textbook_interval_of_five_in_ten():
    lo, hi = wilson(5, 10)
    assert round(lo, 4) == 0.2366 and round(hi, 4) == 0.7634


def test_wilson_of_none_seen_is_not_zero_wide():
    lo, hi = wilson(0, 70)
    assert lo == 0.0 and round(hi, 3) == 0.052


@pytest.mark.parametrize("hits, n", [(1, 0), (-1, 5), (6, 5)])
def test_wilson_refuses_counts_that_are_not_a_share(hits, n):
    with pytest.raises(ValueError, match="hits"):
        wilson(hits, n)


def test_a_deterministic_loop_played_in_passes_keeps_its_share_over_all_of_them():
    result = sweep_target("examples.plain_loop:naive", TRIAGE, "triage", depth=1, samples=3)
    dup = rates(result.records)[0]
    assert result.samples == 3 and (dup.hits, dup.n) == (18, 36)  # 6 of its 12 points, in each pass
    lo, hi = dup.interval
    assert lo < 0.5 < hi


def test_a_deterministic_loop_left_unsaid_is_counted_exactly():
    result = sweep_target("examples.plain_loop:keyed", TRIAGE, "triage", depth=1)
    assert result.ordered and result.samples == 1 and len(result.records) == 14


def test_a_loop_whose_points_change_order_is_sampled_unasked(tmp_path, monkeypatch):
    monkeypatch.setenv("THREADED_FLIP", str(tmp_path / "flip"))
    result = sweep_target("tests.agentcore.port.targets:threaded", TRIAGE, "triage", depth=1, workers=2)
    assert not result.ordered and result.samples == AUTO_SAMPLES
    assert len(result.records) == AUTO_SAMPLES * len(result.labels)
    assert rates(result.records)[0].hits == 0  # keyed, its reply saved first: clean in every pass


def test_a_loop_whose_points_come_from_threads_is_sampled_though_two_runs_agree():
    result = sweep_target("tests.agentcore.port.targets:threaded", TRIAGE, "triage", depth=1, samples=None)
    assert not result.ordered and result.samples == AUTO_SAMPLES  # no flip: its order is the scheduler's


def test_a_threaded_loop_played_once_is_still_a_sample_on_the_command_line():
    p = subprocess.run(
        [sys.executable, "-m", "agentcore", "sweep", "--target", "tests.agentcore.port.targets:threaded"]
        + ["--depth", "1", "--samples", "1"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    assert "threaded [sampled, k=1]" in p.stdout and "95% CI" in p.stdout


def test_the_command_line_marks_a_sampled_row_and_prints_its_intervals():
    p = subprocess.run(
        [sys.executable, "-m", "agentcore", "sweep", "--target", "examples.plain_loop:naive", "--depth", "1"]
        + ["--samples", "2"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    assert "examples.plain_loop:naive [sampled, k=2]" in p.stdout
    assert "with duplicates 12/24 = 50.0% (95% CI 31.4-68.6%)" in p.stdout


def test_the_command_line_refuses_no_passes():
    p = subprocess.run(
        [sys.executable, "-m", "agentcore", "sweep", "--target", "examples.plain_loop:naive", "--samples", "0"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode != 0 and "samples must be 1 or more, not 0" in p.stderr
