import json

import pytest

from agentcore import jobs
from agentcore.config import Config
from agentcore.crash import Crash, CrashPlan
from agentcore.durable import designs
from agentcore.durable.checkpoint import CheckpointError, FileCheckpoint
from agentcore.durable.loop import Loop
from agentcore.harness.scenario import Options, play
from agentcore.standins.model import ScriptedModel
from agentcore.standins.person import ScriptedPerson
from agentcore.standins.tools import ToolServer
from agentcore.standins.tracker import Tracker

S = ["save-half-done", "save-renamed"]
R, A, T = "reply-arrived", "tracker-accepted", "tool-returned"
MS, RS = S + ["marker-saved"], S + ["result-saved"]
TRIAGE = jobs.load("triage")


def kinds(design, tracker="keyed", tmp_path=None):
    p = play(Config(TRIAGE, designs.get(design), tracker), (), Options(points=True), str(tmp_path))
    return [k for k, _ in p.processes[0].points]


def test_save_once_per_turn_points(tmp_path):
    assert kinds("once-per-turn", tmp_path=tmp_path) == S + [R, A, T, A, T] + S + [R, T, A, T] + S + [R] + S


def test_save_after_the_reply_points(tmp_path):
    expected = S + [R] + S + [A, T] + RS + [A, T] + RS + S + [R] + S + [T] + RS + [A, T] + RS + S + [R] + S
    assert kinds("after-reply", tmp_path=tmp_path) == expected
    assert kinds("keys", tmp_path=tmp_path) == expected


def test_markers_add_a_marker_save_before_each_changing_call(tmp_path):
    expected = (
        S + [R] + S + MS + [A, T] + RS + MS + [A, T] + RS + S + [R] + S + [T] + RS + MS + [A, T] + RS + S + [R] + S
    )
    assert kinds("markers", tmp_path=tmp_path) == expected
    assert len(expected) == 43


def test_real_loop_points(tmp_path):
    expected = S + S + [R] + S + (MS + [A, T] + RS) * 2 + [R] + S + [T] + RS + MS + [A, T] + RS
    assert kinds("loop", tmp_path=tmp_path) == expected
    assert len(expected) == 38


def test_labels_name_the_tool_and_call(tmp_path):
    p = play(Config(TRIAGE, designs.get("loop"), "keyed"), (), Options(points=True), str(tmp_path))
    assert "tracker-accepted create_issue call_2" in [label for _, label in p.processes[0].points]


def world(mode="keyed"):
    tracker = Tracker(mode)
    return ToolServer(tracker, TRIAGE), ScriptedModel(TRIAGE), ScriptedPerson(tracker)


def test_crash_is_not_caught_by_the_loop_and_restart_finishes(tmp_path):
    server, model, person = world()
    path = str(tmp_path / "c.json")
    loop = Loop(
        designs.get("loop"),
        TRIAGE,
        FileCheckpoint(path, False, CrashPlan(10)),
        server,
        model,
        person,
        CrashPlan(10),
        "run-1",
    )
    loop.store.hook = loop.hook
    with pytest.raises(Crash):
        loop.run()
    answer = Loop(
        designs.get("loop"), TRIAGE, FileCheckpoint(path, False), server, model, person, CrashPlan(), "run-2"
    ).run()
    assert answer == TRIAGE.final
    assert server.tracker.tally([(0, c.id) for c in TRIAGE.changing_calls()]) == (0, 0)
    assert json.loads(open(path).read())["run_id"] == "run-1"  # the restart kept the saved run ID


def test_a_done_checkpoint_stops_without_a_point_or_save(tmp_path):
    server, model, person = world()
    path = str(tmp_path / "c.json")
    Loop(designs.get("keys"), TRIAGE, FileCheckpoint(path, False), server, model, person, CrashPlan(), "r").run()
    hook = CrashPlan()
    store = FileCheckpoint(path, False, hook)
    assert Loop(designs.get("keys"), TRIAGE, store, server, model, person, hook, "r").run() is None
    assert hook.count == 0 and store.saves == 0


def test_a_corrupt_checkpoint_is_an_error_not_a_fresh_start(tmp_path):
    server, model, person = world()
    path = tmp_path / "c.json"
    path.write_text('{"run_id": "r", "tur')
    with pytest.raises(CheckpointError, match="c.json"):
        Loop(
            designs.get("loop"), TRIAGE, FileCheckpoint(str(path), False), server, model, person, CrashPlan(), "r"
        ).run()
    assert server.tracker.effects == []


def test_keys_are_sent_only_by_designs_with_keys(tmp_path):
    for design, keyed in (("after-reply", False), ("keys", True), ("loop", True)):
        server, model, person = world()
        Loop(
            designs.get(design),
            TRIAGE,
            FileCheckpoint(str(tmp_path / f"{design}.json"), False),
            server,
            model,
            person,
            CrashPlan(),
            "run-1",
        ).run()
        assert all((e["key"] is not None) == keyed for e in server.tracker.effects)
