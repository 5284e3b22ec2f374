import json
import subprocess
import sys

from agentcore.cli import main
from agentcore.records import COLUMNS


def run(*args):
    return subprocess.run([sys.executable, "-m", "agentcore", *args], capture_output=True, text=True, timeout=120)


def test_key_command(capsys):
    assert main(["key", "run-1", "call_1"]) == 0
    assert capsys.readouterr().out == "ba09e991b6ea3f35e4d62b6164c4a689\n"


def test_sweep_json_has_exactly_name_and_the_columns(capsys):
    assert main(["sweep", "--design", "keys", "--tracker", "keyed", "--depth", "1", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert list(rows[0]) == ["name", *COLUMNS]
    assert rows[0]["once"] == 34


def test_csv_and_markdown_formats(capsys):
    main(["sweep", "--design", "once-per-turn", "--tracker", "keyed", "--format", "csv"])
    out = capsys.readouterr().out
    assert out.splitlines()[0] == (
        "name,once,twice,with_dups,dups,missing,wrong,gave_up,denied_ran,asks,avoidable,calls_plus"
    )
    assert out.splitlines()[1].endswith(",18,225,164,294,0,0,0,0,0,0,338")
    main(["sweep", "--design", "once-per-turn", "--tracker", "keyed", "--format", "markdown"])
    assert "| 18 | 225 | 164 | 294 | 0 | 0 | 338 |" in capsys.readouterr().out


def test_records_file_has_one_json_line_per_scenario(tmp_path, capsys):
    path = tmp_path / "r.jsonl"
    main(["sweep", "--design", "loop", "--tracker", "keyed", "--records", str(path)])
    lines = path.read_text().splitlines()
    assert len(lines) == 38 + 872
    assert json.loads(lines[0])["timeline"]


def test_bad_job_file_is_one_line_and_exit_2(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"name": "x", "tools": {}, "turns": []}')
    r = run("sweep", "--job", str(bad), "--design", "loop", "--tracker", "keyed")
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [f"agentcore: error: {bad}: tools: declares no tool"]
    assert "Traceback" not in r.stderr


def test_a_key_named_twice_is_one_line_naming_its_path_and_exit_2(tmp_path):
    path = tmp_path / "twice.json"
    path.write_text(
        open("agentcore/jobfiles/triage.json")
        .read()
        .replace('"name": "triage"', '"name": "triage", "name": "other"', 1)
    )
    r = run("sweep", "--job", str(path), "--design", "loop", "--tracker", "keyed")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines() == [
        f"agentcore: error: {path}: name: the key 'name' appears more than once "
        "in its object (JSON would keep only the last, silently): write it once"
    ]


def test_unknown_design_is_a_usage_error_without_traceback():
    r = run("sweep", "--design", "nope", "--tracker", "keyed")
    assert r.returncode == 2
    assert "Traceback" not in r.stderr and "invalid choice" in r.stderr


def test_table_command_prints_all_rows_with_two_workers():
    r = run("table", "--workers", "2", "--depth", "1", "--format", "json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert len(rows) == 11
    assert rows[6]["name"] == "real loop, keyless tracker"
    assert (rows[6]["once"], rows[6]["twice"], rows[6]["dups"], rows[6]["missing"]) == (38, 0, 0, 0)


def test_crash_model_and_fsync_reach_the_sweep(capsys):
    args = ["sweep", "--design", "loop", "--tracker", "keyed", "--depth", "1", "--format", "csv"]
    assert main([*args, "--bug", "skip_dir_fsync"]) == 0
    assert capsys.readouterr().out.splitlines()[1].endswith(",38,0,0,0,0,0,0,0,0,0,4")  # panic: clean
    assert main([*args, "--bug", "skip_dir_fsync", "--crash-model", "power-cut"]) == 0
    assert capsys.readouterr().out.splitlines()[1].endswith(",166,0,21,40,0,0,0,0,0,0,112")  # the rename undone
    assert main([*args, "--crash-model", "power-cut", "--fsync", "off"]) == 0
    assert capsys.readouterr().out.splitlines()[1].split(",")[1] != "38"


def test_an_unknown_crash_model_is_a_one_line_error():
    r = run("sweep", "--design", "loop", "--tracker", "keyed", "--crash-model", "earthquake")
    assert r.returncode == 2
    assert "invalid choice: 'earthquake'" in r.stderr


def test_the_sweep_says_how_many_scenarios_it_played_and_no_merge_plays_them_all(capsys):
    outs = []
    for extra in ([], ["--no-merge"]):
        assert main(["sweep", "--design", "loop", "--tracker", "keyed", "--format", "csv", *extra]) == 0
        captured = capsys.readouterr()
        outs.append(captured.out)
        assert "910 scenarios, " in captured.err
    assert outs[0] == outs[1]
    assert "910 scenarios, 910 played" in captured.err


def test_depth_3_adds_the_thrice_column_after_twice(capsys):
    assert main(["sweep", "--design", "loop", "--tracker", "keyed", "--depth", "3", "--format", "csv"]) == 0
    header, row = capsys.readouterr().out.splitlines()
    assert header.startswith("name,once,twice,thrice,with_dups,")
    assert row.startswith('"real loop, keyed tracker",38,872,15364,0,0,0,0,')
