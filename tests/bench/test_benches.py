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


def bench(script: str, *args: str) -> str:
    """What a bench printed, run as the docs say, from the repository's root."""
    return subprocess.run(
        [sys.executable, f"bench/{script}", *args], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout


def test_bench_table_times_the_table() -> None:
    assert "scenarios/s" in bench("bench_table.py", "--repeat", "1", "--workers", "1")


def test_bench_workers_times_sweep_in_its_own_process() -> None:
    wall, own, pool = bench_workers.inner("table", 1, True)
    assert wall > 0 and own > 0 and pool == 0.0


def test_bench_port_compares_the_fork_server_with_a_fresh_interpreter() -> None:
    out = bench("bench_port.py", "--repeat", "1", "--workers", "1")
    assert "| 1 | " in out and "with an interpreter per process" in out
