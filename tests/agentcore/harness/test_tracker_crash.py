"""A tracker that can crash: its write-ahead log, the answer that never arrives,
the sweep's rows with the fault on, the planted bug only this model catches, and twice scenarios
started from a noted state against a full replay."""

import csv
import json
from dataclasses import replace

import pytest

from agentcore import jobs
from agentcore.cli import main
from agentcore.config import Config, table_configs
from agentcore.crash import TRACKER_KINDS, Crash, CrashPlan
from agentcore.durable import designs
from agentcore.durable.checkpoint import CheckpointError
from agentcore.harness.chunks import Chunk, points, replay, run_chunk
from agentcore.harness.scenario import Options, play
from agentcore.harness.state import Durable, World
from agentcore.harness.sweep import sweep
from agentcore.records import CHAPTER_COLUMNS
from agentcore.standins.tracker import Tracker
from tests.agentcore.harness.test_sweep import _comparable, _queue_sweep_answered_truthfully

TRIAGE = jobs.load("triage")
ORIGIN = (0, "call_1")
ROWS = {  # the real loop when the tracker can crash: two more points per changing call, nothing lost
    "keyed": (44, 1124, 0, 0, 0, 0, 204),
    "keyless": (44, 1100, 0, 0, 0, 978, 204),
    "lookup": (44, 1121, 0, 0, 0, 0, 204),
}


def config(design="loop", tracker="keyed", fault="crash", **kw):
    base, *bugs = design.split("+")
    return Config(TRIAGE, designs.get(base, tuple(bugs)), tracker, tracker_fault=fault, **kw)


def request(tracker, hook, key="k1"):
    return tracker.request("create_issue", {"title": "t"}, key, ORIGIN, hook, "create_issue call_1")


def crashed_request(tracker, at):
    """A request whose tracker crashes at its `at`th point (1: logged, 2: synced), restarted."""
    with pytest.raises(Crash):
        request(tracker, CrashPlan(at))
    tracker.crash()


def point(cfg, label, plan=()):
    """The number of the point labelled `label`: of the uninterrupted run, or with `plan` of the
    segment after its crashes."""
    pts = points(cfg) if not plan else play(cfg, plan, Options(points=True)).processes[len(plan)].points
    return [lb for _, lb in pts].index(label) + 1


def starts(timeline):
    return [e["text"] for e in timeline if e["kind"] == "start"]


# --- the log --------------------------------------------------------------------------------------


def test_a_request_is_logged_then_synced_then_answered():
    plan = CrashPlan(record=True)
    request(Tracker("keyed", "crash"), plan)
    assert [k for k, _ in plan.points] == ["tracker-logged", "tracker-synced", "tracker-accepted"]


def test_a_tracker_that_never_crashes_keeps_no_log_and_fires_no_log_point():
    t, plan = Tracker("keyed"), CrashPlan(record=True)
    request(t, plan)
    assert [k for k, _ in plan.points] == ["tracker-accepted"] and t.log == []


def test_a_request_logged_but_not_synced_is_lost_when_the_tracker_crashes():
    t = Tracker("keyed", "crash")
    crashed_request(t, 1)
    assert (t.log, t.effects, t.find(ORIGIN), t.lookup("k1")) == ([], [], None, None)


def test_a_synced_request_has_happened_after_the_crash_though_it_was_never_answered():
    t = Tracker("lookup", "crash")
    crashed_request(t, 2)  # synced, not yet applied: the restart applies it from the log
    assert t.find(ORIGIN) == {"number": 1} and t.lookup("k1") == {"number": 1}


def test_the_restarted_tracker_numbers_on_after_its_synced_records():
    t = Tracker("keyless", "crash")
    request(t, CrashPlan())
    crashed_request(t, 2)
    assert request(t, CrashPlan()) == {"number": 3}


def test_a_known_key_is_answered_from_the_records_and_logs_nothing():
    t = Tracker("keyed", "crash")
    crashed_request(t, 2)
    plan = CrashPlan(record=True)
    assert request(t, plan) == {"number": 1}
    assert [k for k, _ in plan.points] == ["tracker-accepted"] and len(t.log) == 1


def test_without_the_fault_no_configuration_of_the_table_fires_a_tracker_point():
    for cfg in table_configs(TRIAGE):
        assert not {k for k, _ in points(cfg)} & TRACKER_KINDS, cfg.label


# --- the log in the durable state -----------------------------------------------------------------


def _note(fault):
    cfg = config(fault=fault)
    at = point(cfg, "tool-returned create_issue call_2")
    return cfg, play(cfg, (at,), Options(points=True, notes=True)).restarts[0]


def test_the_tracker_s_log_is_part_of_the_stored_durable_state():
    cfg, note = _note("crash")
    stored = json.loads(json.dumps(note.to_dict()))
    back = World.restore(cfg, Durable.from_dict(stored, "stored")).tracker
    assert len(back.log) == 2 and back.log == note.tracker["log"]
    assert back.effects == note.tracker["effects"]


def test_a_stored_state_without_fault_and_log_loads_as_a_tracker_that_never_crashes():
    cfg, note = _note("none")
    stored = note.to_dict()
    assert not {"fault", "log"} & set(stored["tracker"])  # the shape stored before the fault existed
    assert World.restore(cfg, Durable.from_dict(stored, "stored")).tracker.fault == "none"


def test_a_stored_log_that_does_not_replay_is_refused():
    _, note = _note("crash")
    stored = note.to_dict()
    stored["tracker"]["log"][0]["op"] = "delete_everything"
    with pytest.raises(CheckpointError, match="the tracker's log is corrupt"):
        Durable.from_dict(stored, "stored")


# --- the answer that never arrived ----------------------------------------------------------------


def test_a_tracker_crash_fails_the_call_and_the_agent_process_goes_on():
    cfg = config()
    p = play(cfg, (point(cfg, "tracker-synced create_issue call_1"),), Options(timeline=True))
    assert starts(p.timeline) == ["fresh run run-1 (process 1)"]  # no restart: one process throughout
    assert "tool" in [e["kind"] for e in p.timeline] and len(p.crashes) == 1
    assert (p.duplicates, p.missing, p.model_calls) == (0, 0, 3)


def test_a_request_executed_whose_answer_never_arrived_is_settled_by_asking():
    cfg = config(tracker="keyless")
    p = play(cfg, (point(cfg, "tracker-synced create_issue call_1"),), Options(timeline=True))
    assert "create_issue call_1: ask says it happened" in [e["text"] for e in p.timeline]
    assert (p.asks, p.duplicates, p.missing) == (1, 0, 0)


def test_a_request_lost_with_the_tracker_is_made_again():
    cfg = config(tracker="keyless")
    p = play(cfg, (point(cfg, "tracker-logged create_issue call_1"),), Options(timeline=True))
    assert "create_issue call_1: ask says it did not happen" in [e["text"] for e in p.timeline]
    assert (p.asks, p.duplicates, p.missing, len(p.effects)) == (1, 0, 0, 3)


def test_a_process_crashed_after_a_tracker_crash_restarts_as_process_2():
    cfg = config()
    first = point(cfg, "tracker-logged create_issue call_1")
    second = point(cfg, "save-renamed result create_issue call_1", (first,))  # counted after the tracker crash
    p = play(cfg, (first, second), Options(timeline=True))
    assert starts(p.timeline) == ["fresh run run-1 (process 1)", "resumed run run-1 at turn 1 (process 2)"]


# --- the sweep's rows -----------------------------------------------------------------------------


@pytest.mark.parametrize("tracker", list(ROWS))
def test_the_real_loop_loses_and_doubles_nothing_when_the_tracker_crashes(tracker):
    assert sweep([config(tracker=tracker)]).rows[0].values(CHAPTER_COLUMNS) == ROWS[tracker]


@pytest.mark.parametrize(
    "name",
    [
        "tool fails after accept, keyed tracker",
        "tool fails after accept, keyless tracker",
        "approval gate, keyed tracker",
        "approval gate, keyless tracker",
    ],
)
def test_the_harder_situations_lose_and_double_nothing_when_the_tracker_crashes(name):
    cfg = next(c for c in table_configs(TRIAGE, tracker_fault="crash") if c.label == name)
    row = sweep([cfg]).rows[0]
    assert (row.with_dups, row.dups, row.missing) == (0, 0, 0)


def test_the_command_line_sweeps_with_the_tracker_fault(capsys):
    assert main(["sweep", "--design", "loop", "--tracker", "keyed", "--tracker-fault", "crash", "--format", "csv"]) == 0
    row = next(csv.DictReader(capsys.readouterr().out.splitlines()))
    assert tuple(int(row[c]) for c in CHAPTER_COLUMNS) == ROWS["keyed"]


# --- the planted bug: a retry that fails too is given up -------------------------------------------


@pytest.mark.parametrize("tracker", list(ROWS))
def test_retry_once_is_caught_when_the_tracker_can_crash(tracker):
    row = sweep([config("loop+retry_once", tracker)]).rows[0]
    assert row.missing > 0 and row.once == ROWS[tracker][0]


@pytest.mark.parametrize("tracker", list(ROWS))
def test_retry_once_is_not_caught_when_the_tracker_never_crashes(tracker):
    buggy = sweep([config("loop+retry_once", tracker, fault="none")]).rows[0]
    assert buggy.values() == sweep([config("loop", tracker, fault="none")]).rows[0].values()


def test_retry_once_is_not_caught_by_the_flaky_tool_server():
    # the flaky server fails a call's first attempt only: no retry in the same process ever fails
    row = sweep([config("tool-fails+retry_once", "keyed", fault="none")]).rows[0]
    assert (row.with_dups, row.dups, row.missing) == (0, 0, 0)


def test_retry_once_loses_a_call_only_where_the_tracker_lost_it_and_then_its_retry():
    res = sweep([config("loop+retry_once")])
    lost = [r for r in res.records[0] if r.missing]
    assert lost and all(r.first_kind == r.second_kind == "tracker-logged" for r in lost)
    assert all(r.first_label.split(" ", 1)[1] == r.second_label.split(" ", 1)[1] for r in lost)  # one call


# --- twice scenarios: from a noted state, or played in full ---------------------------------------


@pytest.mark.parametrize(
    "design,tracker", [("loop", "keyed"), ("loop", "keyless"), ("tool-fails", "keyless"), ("loop+retry_once", "lookup")]
)
def test_twice_scenarios_equal_a_full_replay_crashed_twice_when_the_tracker_crashes(design, tracker):
    # Second points where an agent process crashes start from the state noted there (also after a
    # first crash of the tracker); those where the tracker crashes are played in full.
    cfg = config(design, tracker)
    for p, (kind, label) in enumerate(points(cfg), 1):
        for rec in run_chunk(cfg, Chunk(0, p, kind, label), 2, collect=True).records[1:]:
            full = play(cfg, (p, rec.second_point), Options(timeline=True))
            assert (rec.timeline, rec.effects, rec.duplicates, rec.missing, rec.asks, rec.model_calls, rec.status) == (
                full.timeline,
                full.effects,
                full.duplicates,
                full.missing,
                full.asks,
                full.model_calls,
                full.status,
            ), (p, rec.second_point)
            assert len(full.crashes) == 2


def test_replaying_a_scenario_whose_second_crash_is_the_tracker_s_gives_the_sweep_s_record():
    cfg = config(tracker="keyless")
    recs = [r for r in sweep([cfg], collect=True).records[0] if r.second_kind in TRACKER_KINDS]
    assert recs
    for rec in recs:
        again = replay(cfg, rec.first_point, rec.second_point)
        assert (again.timeline, again.effects, again.asks) == (rec.timeline, rec.effects, rec.asks)


@pytest.mark.parametrize("name", ["real loop, keyless tracker", "tool fails after accept, keyless tracker"])
def test_a_queue_sweep_answered_truthfully_is_the_scripted_sweep_when_the_tracker_crashes(name):
    cfg = next(c for c in table_configs(TRIAGE, tracker_fault="crash") if c.label == name)
    scripted = sweep([cfg], collect=True).records[0]
    queued, _ = _queue_sweep_answered_truthfully(replace(cfg, person="queue"), 2)
    assert _comparable(queued) == _comparable(scripted)
