import os

import pytest

from agentcore.crash import Crash, CrashPlan, Kind
from agentcore.durable.checkpoint import CheckpointError, FileCheckpoint
from agentcore.harness.disk import MemoryFiles

STATE = {"run_id": "run-1", "done": False, "turns": []}


def test_save_then_load_round_trips(tmp_path):
    store = FileCheckpoint(str(tmp_path / "c.json"), fsync=False)
    store.save(STATE, "start")
    assert store.load() == STATE


def test_missing_file_loads_as_none(tmp_path):
    assert FileCheckpoint(str(tmp_path / "c.json")).load() is None


def test_crash_between_write_and_rename_keeps_the_old_state(tmp_path):
    path = str(tmp_path / "c.json")
    FileCheckpoint(path, fsync=False).save(STATE, "start")
    store = FileCheckpoint(path, fsync=False, hook=CrashPlan(crash_at=1))
    with pytest.raises(Crash) as e:
        store.save({**STATE, "done": True}, "final")
    assert e.value.kind == Kind.SAVE_HALF_DONE
    assert os.path.exists(path + ".tmp")
    assert FileCheckpoint(path).load() == STATE


def test_leftover_temp_file_is_ignored_on_load_and_truncated_by_the_next_save(tmp_path):
    path = str(tmp_path / "c.json")
    with open(path + ".tmp", "w") as f:
        f.write('{"half' + " " * 100)
    store = FileCheckpoint(path)
    assert store.load() is None
    assert os.path.exists(path + ".tmp")  # a load only reads
    store.save(STATE, "start")
    assert not os.path.exists(path + ".tmp")
    assert store.load() == STATE


def test_save_with_fsync_has_a_point_after_each_file_operation(tmp_path):
    plan = CrashPlan(record=True)
    FileCheckpoint(str(tmp_path / "c.json"), hook=plan).save(STATE, "start")
    assert [k for k, _ in plan.points] == ["save-half-done", "save-synced", "save-renamed", "save-dir-synced"]


def test_save_fires_half_done_then_renamed(tmp_path):
    plan = CrashPlan(record=True)
    FileCheckpoint(str(tmp_path / "c.json"), fsync=False, hook=plan).save(STATE, "start")
    assert plan.points == [("save-half-done", "save-half-done start"), ("save-renamed", "save-renamed start")]


def test_corrupt_checkpoint_names_the_file(tmp_path):
    path = tmp_path / "c.json"
    path.write_text('{"run_id": "run-1", "turns": [')
    with pytest.raises(CheckpointError, match=str(path)):
        FileCheckpoint(str(path)).load()


def test_wrong_shape_is_an_error_not_a_fresh_start(tmp_path):
    path = tmp_path / "c.json"
    path.write_text("[1, 2]")
    with pytest.raises(CheckpointError, match="not a checkpoint"):
        FileCheckpoint(str(path)).load()


def test_fsync_setting_syncs_file_and_folder(tmp_path, monkeypatch):
    calls = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: calls.append(fd) or real(fd))
    FileCheckpoint(str(tmp_path / "c.json"), fsync=True).save(STATE, "start")
    assert len(calls) == 2
    calls.clear()
    FileCheckpoint(str(tmp_path / "d.json"), fsync=False).save(STATE, "start")
    assert calls == []


def test_memory_files_keep_the_old_state_on_a_crash_between_write_and_rename():
    files = MemoryFiles()
    FileCheckpoint("c.json", files=files).save(STATE, "start")
    with pytest.raises(Crash):
        FileCheckpoint("c.json", hook=CrashPlan(crash_at=1), files=files).save({**STATE, "done": True}, "final")
    assert set(files.data) == {"c.json", "c.json.tmp"}
    assert FileCheckpoint("c.json", files=files).load() == STATE


def test_memory_files_hold_the_same_bytes_as_real_files(tmp_path):
    files = MemoryFiles()
    FileCheckpoint("c.json", files=files).save(STATE, "start")
    FileCheckpoint(str(tmp_path / "c.json"), fsync=False).save(STATE, "start")
    assert files.data["c.json"] == (tmp_path / "c.json").read_bytes()


def test_a_corrupt_checkpoint_in_memory_names_it():
    files = MemoryFiles({"run-1.json": b'{"run_id": "run-1", "tu'})
    with pytest.raises(CheckpointError, match="run-1.json: corrupt"):
        FileCheckpoint("run-1.json", files=files).load()


def test_renaming_a_missing_temp_file_is_an_error_as_on_disk():
    with pytest.raises(FileNotFoundError):
        MemoryFiles().replace("c.json.tmp", "c.json")
