"""`python -m agentcore sweep --target`: a user's loop from the command line."""

import json
import subprocess
import sys


def run(*args):
    return subprocess.run(
        [sys.executable, "-m", "agentcore", "sweep", *args], capture_output=True, text=True, timeout=300
    )


def test_a_target_sweep_prints_its_row_and_writes_its_records(tmp_path):
    records = tmp_path / "r.jsonl"
    p = run("--target", "examples.plain_loop:keyed_late", "--depth", "1", "--format", "csv", "--records", str(records))
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[1].startswith("examples.plain_loop:keyed_late,12,0,6,8,0,")
    assert "model fresh-ids" in p.stderr
    rows = [json.loads(line) for line in records.read_text().splitlines()]
    assert len(rows) == 12 and {r["design"] for r in rows} == {"examples.plain_loop:keyed_late"}


def test_the_model_repeats_its_ids_only_when_asked():
    p = run("--target", "examples.plain_loop:keyed_late", "--depth", "1", "--format", "csv", "--model", "fixed")
    assert p.stdout.splitlines()[1].startswith("examples.plain_loop:keyed_late,12,0,0,0,0,")


def test_conditions_a_target_cannot_take_are_refused_not_ignored():
    p = run("--target", "examples.plain_loop:keyed", "--crash-model", "kill", "--design", "loop")
    assert p.returncode == 2 and "--target takes none of --design, --crash-model" in p.stderr


def test_a_sweep_needs_a_design_or_a_target():
    p = run("--tracker", "keyed")
    assert p.returncode == 2 and "sweep needs --design and --tracker, or --target" in p.stderr


def test_import_agentcore_loads_neither_the_port_nor_any_third_party_module():
    code = (
        "import sys; before = set(sys.modules); import agentcore; "
        "new = sorted(m.split('.')[0] for m in set(sys.modules) - before); print(' '.join(new)); "
        "print(any(m.startswith('agentcore.port') for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    third_party = set(out[0].split()) - set(sys.stdlib_module_names) - {"agentcore"}
    assert third_party == set() and out[1] == "False"


def test_a_target_sweep_counts_its_progress_in_scenarios_not_chunks():
    p = run("--target", "examples.plain_loop:keyed_late", "--depth", "2", "--workers", "1")  # 104 scenarios, >1 s
    assert p.returncode == 0, p.stderr
    assert "sweeping: 92/92 scenarios" in p.stderr and "chunks" not in p.stderr


def test_a_target_sweep_names_the_runtime_it_was_measured_on():
    p = run("--target", "examples.plain_loop:keyed", "--depth", "1")
    assert p.returncode == 0, p.stderr
    assert f"Python {sys.version.split()[0]}; runtime: plain Python (no agent runtime imported)" in p.stderr


def test_table_sweeps_a_row_per_target_under_the_same_conditions():
    p = subprocess.run(
        [sys.executable, "-m", "agentcore", "table", "--depth", "1", "--format", "csv"]
        + ["--target", "examples.plain_loop:naive", "--target", "examples.plain_loop:keyed_late", "--model", "fixed"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[1].startswith("examples.plain_loop:naive,12,0,3,") and lines[2].startswith(
        "examples.plain_loop:keyed_late,12,0,0,0,0,"  # a repeating model: the late key looks clean
    )
    assert "examples.plain_loop:naive: 12 scenarios over 12 points; model fixed" in p.stderr
