"""Crash models and fsync: the chapter's table where it must not change, what each model
sees, the planted store bugs each caught by the model that should catch it and by no other."""

import os
import signal

import pytest

from agentcore.config import Config, table_configs
from agentcore.durable import designs
from agentcore.harness import kill
from agentcore.harness.chunks import Chunk, points, run_chunk
from agentcore.harness.scenario import Options, play
from agentcore.harness.sweep import sweep
from agentcore.jobs import load

TRIAGE = load("triage")
CHAPTER = {  # the chapter's table, as tests/agentcore/harness/test_sweep.py checks it under panic
    row.name: row.values() for row in sweep(table_configs(TRIAGE)).rows
}
MODELS = [("panic", True), ("kill", True), ("power-cut", True), ("power-cut", False)]


def _row(design, tracker="keyed", crash_model="panic", fsync=True, depth=1, bugs=()):
    cfg = Config(TRIAGE, designs.get(design, bugs), tracker, crash_model=crash_model, fsync=fsync)
    return sweep([cfg], depth=depth).rows[0]


def _caught(row):
    return row.dups > 0 or row.missing > 0


def test_the_chapter_s_table_under_power_cut_with_fsync_on():
    rows = sweep(table_configs(TRIAGE, crash_model="power-cut")).rows
    assert {r.name: r.values() for r in rows} == CHAPTER


def test_the_chapter_s_table_with_fsync_off_under_panic():
    rows = sweep(table_configs(TRIAGE, fsync=False)).rows
    assert {r.name: r.values() for r in rows} == CHAPTER


@pytest.mark.parametrize(
    "design,tracker", [("loop", "keyed"), ("keys-and-markers", "keyed"), ("approval-gate", "keyless")]
)
def test_kill_gives_the_records_of_panic(design, tracker):
    # Every sixth first point with all its twice scenarios (the whole sweep takes ten times longer).
    panic, killed = (Config(TRIAGE, designs.get(design), tracker, crash_model=m) for m in ("panic", "kill"))
    pts = points(panic)
    for p in range(1, len(pts) + 1, 6):
        chunk = Chunk(0, p, *pts[p - 1])
        assert run_chunk(killed, chunk, 2, collect=True).records == run_chunk(panic, chunk, 2, collect=True).records


def test_kill_s_table_at_depth_1_is_the_chapter_s_first_column():
    rows = sweep(table_configs(TRIAGE, crash_model="kill"), depth=1).rows
    assert {r.name: r.once for r in rows} == {name: v[0] for name, v in CHAPTER.items()}


def test_kill_really_kills_each_crashed_process_with_sigkill(monkeypatch):
    statuses = []
    real = os.waitpid
    monkeypatch.setattr(kill.os, "waitpid", lambda pid, opts: statuses.append(real(pid, opts)[1]) or (pid, 0))
    p = play(Config(TRIAGE, designs.get("loop"), "keyed", crash_model="kill"), (3, 4))
    assert p.status == "done" and len(p.crashes) == 2
    assert [os.WTERMSIG(s) if os.WIFSIGNALED(s) else None for s in statuses] == [signal.SIGKILL] * 2 + [None]
    assert os.waitstatus_to_exitcode(statuses[-1]) == 0


def test_kill_pauses_and_resumes_a_queue_person_s_scenario_as_panic_does():
    from agentcore.harness.chunks import resume

    outcomes = []
    for model in ("panic", "kill"):
        cfg = Config(TRIAGE, designs.get("markers"), "keyed", person="queue", crash_model=model)
        p = play(cfg, (10,), Options(timeline=True))
        assert p.status == "waiting"
        rec = resume(cfg, p.durable, {p.question["id"]: True}, (10, "k", "l"), None).record
        outcomes.append((p.question, rec))
    assert outcomes[0] == outcomes[1]


@pytest.mark.parametrize("crash_model,fsync,depth", [("panic", True, 2), ("kill", True, 1), ("power-cut", True, 2)])
def test_the_correct_loop_is_clean_under_every_model_with_fsync(crash_model, fsync, depth):
    # (under kill at depth 2, test_kill_gives_the_records_of_panic)
    for tracker in ("keyed", "lookup"):
        row = _row("loop", tracker, crash_model, fsync, depth)
        assert (row.dups, row.missing) == (0, 0), (tracker, row)


def test_power_cut_without_fsync_shows_what_the_missing_syncs_cost():
    row = _row("loop", crash_model="power-cut", fsync=False)
    assert row.once > CHAPTER["real loop, keyed tracker"][0]  # the power cut's states are points too
    assert row.dups > 0 and row.missing > 0


# Which models catch each planted bug (loop design, keyed tracker, depth 1); the correct loop is in
# test_the_correct_loop_is_clean_under_every_model_with_fsync.
CATCHES = {
    "write_in_place": {("power-cut", True), ("power-cut", False)},  # a truncated or torn checkpoint
    "remove_then_rename": set(MODELS),  # a crash between the unlink and the rename: no checkpoint
    "skip_file_fsync": {("power-cut", True), ("power-cut", False)},  # renamed, but empty
    "skip_dir_fsync": {("power-cut", True), ("power-cut", False)},  # the rename undone
    "proposed_run_id": set(MODELS),  # new keys after every restart
}


@pytest.mark.parametrize("bug", designs.STORE_BUGS + ("proposed_run_id",))
@pytest.mark.parametrize("crash_model,fsync", MODELS)
def test_each_planted_bug_is_caught_by_the_models_that_should_catch_it_and_by_no_other(bug, crash_model, fsync):
    caught = _caught(_row("loop", crash_model=crash_model, fsync=fsync, bugs=(bug,)))
    assert caught == ((crash_model, fsync) in CATCHES[bug])


def test_the_store_bugs_fsync_off_cannot_tell_apart_are_caught_with_fsync_on_only_by_their_own_cost():
    # With fsync off every store loses saves; with it on, a store that skips one sync is seen alone.
    clean = _row("loop", crash_model="power-cut")
    for bug in ("skip_file_fsync", "skip_dir_fsync"):
        assert _caught(_row("loop", crash_model="power-cut", bugs=(bug,))) and not _caught(clean)


def test_remove_then_rename_is_caught_at_the_new_point_between_the_two_operations():
    cfg = Config(TRIAGE, designs.get("loop", ("remove_then_rename",)), "keyed")
    res = sweep([cfg], depth=1)
    assert {r.first_kind for r in res.records[0] if r.duplicates} == {"save-removed"}


def test_write_in_place_is_caught_by_a_restart_that_cannot_read_its_checkpoint():
    cfg = Config(TRIAGE, designs.get("loop", ("write_in_place",)), "keyed", crash_model="power-cut")
    recs = [r for r in sweep([cfg], depth=1).records[0] if r.missing]
    assert recs and {r.status for r in recs} == {"corrupt"}
    assert all("[power cut: run-1.json" in r.first_label for r in recs)


def test_a_power_cut_point_says_what_the_crash_left():
    cfg = Config(TRIAGE, designs.get("loop", ("skip_dir_fsync",)), "keyed", crash_model="power-cut")
    labels = [label for _, label in points(cfg)]
    assert "save-renamed start" in labels
    assert any(label.endswith("[power cut: run-1.json gone]") for label in labels)


def test_twice_scenarios_under_power_cut_equal_a_full_replay_crashed_twice():
    # Twice scenarios start from the disk state the model noted, never from the store's memory.
    cfg = Config(TRIAGE, designs.get("keys-and-markers"), "keyed", crash_model="power-cut", fsync=False)
    pts = points(cfg)
    for p in range(1, len(pts) + 1, 9):
        recs = run_chunk(cfg, Chunk(0, p, *pts[p - 1]), 2).records[1:]
        for rec in recs[::11]:
            full = play(cfg, (p, rec.second_point), Options())
            assert (rec.duplicates, rec.missing, rec.model_calls, rec.status) == (
                full.duplicates,
                full.missing,
                full.model_calls,
                full.status,
            ), (p, rec.second_label)
