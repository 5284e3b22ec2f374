"""The benches run by hand (docs/benchmarks.md) still run: each one's smallest measurement, once.

A bench is only worth its figures if it runs after a refactoring; these take a second or two each.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import bench_workers  # noqa: E402


def test_bench_table_times_the_table() -> None:
    out = subprocess.run(
        [sys.executable, "bench/bench_table.py", "--repeat", "1", "--workers", "1"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert "scenarios/s" in out


def test_bench_workers_times_sweep_in_its_own_process() -> None:
    wall, own, pool = bench_workers.inner("table", 1, True)
    assert wall > 0 and own > 0 and pool == 0.0


def test_bench_port_compares_the_fork_server_with_a_fresh_interpreter() -> None:
    out = subprocess.run(
        [sys.executable, "bench/bench_port.py", "--repeat", "1", "--workers", "1"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert "| 1 | " in out and "with an interpreter per process" in out
