"""Tools that keep failing: `--tool-faults first|k:N|always`, the give-up as an
outcome (a restart that finishes the job once the tool recovers, bounded when it never does), and the
planted bug `skip_given_up`, caught where a call fails MAX_ATTEMPTS times in one process and only there."""

import csv
from dataclasses import replace

import pytest

from agentcore import jobs
from agentcore.cli import main
from agentcore.config import Config
from agentcore.crash import TRACKER_KINDS, CrashPlan
from agentcore.durable import designs
from agentcore.harness.chunks import Chunk, points, run_chunk
from agentcore.harness.scenario import Options, play
from agentcore.harness.state import Durable, World
from agentcore.harness.sweep import sweep
from agentcore.limits import MAX_ATTEMPTS, MAX_GIVE_UP_RESTARTS
from agentcore.standins.faults import tool_failures
from agentcore.standins.tools import ToolFailed, ToolServer
from agentcore.standins.tracker import Tracker

TRIAGE = jobs.load("triage")
CHANGING = [c.id for c in TRIAGE.changing_calls()]  # call_1, call_2, call_4
# The most failures of one call a scenario recovers from: MAX_ATTEMPTS tries in each of the process
# that gave up and the restarts after it.
RECOVERABLE = MAX_ATTEMPTS * (MAX_GIVE_UP_RESTARTS + 1) - 1


def config(design="tool-fails", tracker="keyed", faults="first", **kw):
    base, *bugs = design.split("+")
    return Config(TRIAGE, designs.get(base, tuple(bugs)), tracker, tool_faults=faults, **kw)


def attempts(server, cid, n):
    """The outcomes of n attempts of changing call `cid`: "ok", or "after"/"before" (the tracker
    accepted the request or not) for an attempt that died mid-call."""
    out = []
    for _ in range(n):
        before = len(server.tracker.effects)
        try:
            server.call(TRIAGE.tools["create_issue"], {"title": cid}, None, (0, cid), CrashPlan(), cid)
        except ToolFailed:
            out.append("after" if len(server.tracker.effects) > before else "before")
        else:
            out.append("ok")
    return out


def row(cfg, depth=2):
    return sweep([cfg], depth=depth).rows[0]


def caught(r):
    return r.dups > 0 or r.missing > 0


# --- the failure pattern ------------------------------------------------------------------------


@pytest.mark.parametrize("spec,fails", [("first", 1), ("k:1", 1), ("k:2", 2), ("k:5", 5), ("k:0", 0)])
def test_the_first_n_attempts_of_each_changing_call_fail(spec, fails):
    server = ToolServer(Tracker("keyless"), TRIAGE, tool_failures(spec))
    for cid in CHANGING:
        outcomes = attempts(server, cid, fails + 2)
        assert [o == "ok" for o in outcomes] == [False] * fails + [True, True]


def test_always_fails_every_attempt():
    server = ToolServer(Tracker("keyless"), TRIAGE, tool_failures("always"))
    assert "ok" not in attempts(server, "call_1", 50)


def test_first_is_the_chapter_s_flaky_server_odd_calls_after_accept_even_ones_before():
    server = ToolServer(Tracker("keyless"), TRIAGE, tool_failures("first"))
    assert [attempts(server, cid, 1)[0] for cid in CHANGING] == ["after", "before", "after"]


def test_a_call_s_failing_attempts_all_die_alike_alternating_from_call_to_call():
    # Half the failures die after accept (odd-numbered calls): a call given up on may have left its
    # effect, or none at all.
    server = ToolServer(Tracker("keyless"), TRIAGE, tool_failures("k:4"))
    assert [attempts(server, cid, 4) for cid in CHANGING] == [["after"] * 4, ["before"] * 4, ["after"] * 4]


def test_only_a_design_with_a_flaky_server_fails_under_always():
    for design, fails in (("loop", False), ("approval-gate", False), ("tool-fails", True)):
        server = World.fresh(config(design, faults="always")).server
        assert ("ok" not in attempts(server, "call_1", 3)) is fails, design


def test_attempts_outlive_a_crash_in_the_world():
    cfg = config(faults="k:2")
    w = World.fresh(cfg)
    attempts(w.server, "call_2", 1)
    again = World.restore(cfg, w.snapshot({}, 1, []))
    assert attempts(again.server, "call_2", 2) == ["before", "ok"]


# --- a process gives up after MAX_ATTEMPTS tries; a new one finishes the job -------------------


def test_a_call_gets_max_attempts_tries_in_one_process_the_fresh_one_included():
    assert play(config(faults=f"k:{MAX_ATTEMPTS - 1}"), ()).gave_up == 0
    assert play(config(faults=f"k:{MAX_ATTEMPTS}"), ()).gave_up == len(CHANGING)  # once each


@pytest.mark.parametrize("tracker", ["keyed", "keyless", "lookup"])
def test_a_restart_after_a_give_up_finishes_the_job_once_the_tool_recovers(tracker):
    p = play(config(tracker=tracker, faults=f"k:{MAX_ATTEMPTS + 1}"), (), Options(timeline=True))
    assert (p.status, p.duplicates, p.missing) == ("done", 0, 0)
    assert p.gave_up > 0 and not p.crashes
    kinds = [e["kind"] for e in p.timeline]
    assert kinds.count("failed") == p.gave_up and kinds.count("start") == p.gave_up + 1


def test_a_give_up_restart_is_a_new_process_with_a_run_id_of_its_own():
    # Each job run gives up once on each changing call: the second starts fresh in process 4, the
    # one that took over after call_4 of the first was given up on, and continues its run ID.
    p = play(config(faults=f"k:{MAX_ATTEMPTS}", runs=2), (), Options(timeline=True))
    starts = [e["text"] for e in p.timeline if e["kind"] == "start"]
    assert starts[3:6] == [
        "resumed run run-1 at turn 2 (process 4)",
        "fresh run run-2.p4 (process 4)",
        "resumed run run-2.p4 at turn 1 (process 5)",
    ]
    assert len(starts) == 8
    assert (p.status, p.duplicates, p.missing, p.gave_up) == ("done", 0, 0, 2 * len(CHANGING))


def test_a_give_up_takes_no_entry_of_the_crash_plan():
    # The plan's point counts on through the give-up: crashing the uninterrupted run's last point
    # crashes the process that took over after the give-ups.
    cfg = config(faults=f"k:{MAX_ATTEMPTS}")
    last = len(points(cfg))
    p = play(cfg, (last,), Options(points=True))
    assert len(p.crashes) == 1 and p.crashes[0].index == last
    assert p.status == "done" and len(p.processes) == 2


def test_recovery_is_bounded_per_call():
    assert play(config(faults=f"k:{RECOVERABLE}"), ()).status == "done"
    p = play(config(faults=f"k:{RECOVERABLE + 1}"), ())
    assert p.status == "failed" and p.gave_up == MAX_GIVE_UP_RESTARTS + 1


@pytest.mark.parametrize("tracker", ["keyed", "lookup"])
def test_always_ends_failed_after_the_bound(tracker):
    p = play(config(tracker=tracker, faults="always"), (), Options(timeline=True))
    assert p.status == "failed" and p.gave_up == MAX_GIVE_UP_RESTARTS + 1
    assert [e["kind"] for e in p.timeline][-1] == "failed"
    assert p.missing == len(CHANGING) - 1  # call_1's failures died after accept: its issue exists


def test_a_keyless_tracker_s_person_settles_what_a_rerun_never_can():
    # Asked, a truthful person sees call_1's issue (its attempts die after accept); call_2's never
    # reaches the tracker, so the keyless loop gives up on it as the keyed one does on call_1.
    p = play(config(tracker="keyless", faults="always"), ())
    assert (p.status, p.missing, p.gave_up) == ("failed", 2, MAX_GIVE_UP_RESTARTS + 1)


def test_give_ups_are_stored_only_when_there_are_some():
    cfg = config(faults=f"k:{MAX_ATTEMPTS}")
    w = World.fresh(cfg)
    assert "gave_up" not in w.snapshot({}, 0, []).to_dict()
    w.server.give_up((0, "call_1"))
    stored = w.snapshot({}, 1, []).to_dict()
    assert stored["gave_up"] == [[0, "call_1", 1]]
    again = World.restore(cfg, Durable.from_dict(stored, "test"))
    assert again.server.given_up == w.server.given_up


# --- the sweep: the correct loop is clean, the planted bug caught where it should be --------------


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_the_correct_loop_loses_and_doubles_nothing_and_finishes_every_scenario(n):
    res = sweep([config(faults=f"k:{n}")])
    r = res.rows[0]
    assert (r.with_dups, r.dups, r.missing) == (0, 0, 0)
    assert all(rec.status == "done" for rec in res.records[0])
    assert (r.gave_up > 0) is (n >= MAX_ATTEMPTS)


@pytest.mark.parametrize("tracker", ["keyed", "keyless"])
@pytest.mark.parametrize("faults", [f"k:{MAX_ATTEMPTS}", f"k:{MAX_ATTEMPTS + 1}", "always"])
def test_skip_given_up_is_caught_when_a_call_fails_max_attempts_times(tracker, faults):
    r = row(config("tool-fails+skip_given_up", tracker, faults), depth=1)
    assert r.missing > 0 and r.gave_up > 0


@pytest.mark.parametrize("tracker", ["keyed", "keyless"])
@pytest.mark.parametrize("faults", ["first", f"k:{MAX_ATTEMPTS - 1}"])
def test_skip_given_up_is_invisible_while_a_call_fails_fewer_times(tracker, faults):
    assert (
        row(config("tool-fails+skip_given_up", tracker, faults)).values()
        == row(config("tool-fails", tracker, faults)).values()
    )


@pytest.mark.parametrize("design", ["loop", "approval-gate"])
def test_skip_given_up_is_not_caught_by_a_design_whose_tools_never_fail(design):
    assert not caught(row(config(f"{design}+skip_given_up", faults="always")))


@pytest.mark.parametrize("design", ["loop", "tool-fails"])
def test_skip_given_up_is_not_caught_by_a_crashing_tracker_alone(design):
    # A call fails at most twice in one process of a once scenario, or of a twice one of the loop
    # whose tools never fail (two tracker crashes)...
    assert not caught(row(config(f"{design}+skip_given_up", tracker_fault="crash"), depth=1))
    assert not caught(row(config("loop+skip_given_up", tracker_fault="crash")))


def test_skip_given_up_under_a_crashing_tracker_loses_only_a_flaky_call_the_tracker_crashed_twice():
    # ...but the flaky server's first failure and two tracker crashes on one call are MAX_ATTEMPTS
    # failures in one process: the tool did keep failing, and the bug loses the call there alone.
    res = sweep([config("tool-fails+skip_given_up", tracker_fault="crash")])
    lost = [r for r in res.records[0] if r.missing]
    assert lost and all(r.first_kind in TRACKER_KINDS and r.second_kind in TRACKER_KINDS for r in lost)
    assert all(r.first_label.split(" ", 1)[1] == r.second_label.split(" ", 1)[1] for r in lost)  # one call


# --- determinism: twice scenarios from a noted state, the kill crash model ---------------------


@pytest.mark.parametrize(
    "design,tracker,faults,more",
    [
        ("tool-fails", "keyed", f"k:{MAX_ATTEMPTS + 1}", {}),
        ("tool-fails", "keyless", f"k:{MAX_ATTEMPTS}", {}),
        ("tool-fails", "keyed", "always", {}),
        ("tool-fails+skip_given_up", "keyed", f"k:{MAX_ATTEMPTS}", {}),
        ("tool-fails", "keyed", f"k:{MAX_ATTEMPTS}", {"runs": 2}),
        # a tracker that can crash: its crashes start segments of the plan, the give-ups do not
        ("tool-fails", "lookup", f"k:{MAX_ATTEMPTS}", {"tracker_fault": "crash"}),
    ],
)
def test_twice_scenarios_equal_a_full_replay_crashed_twice(design, tracker, faults, more):
    cfg = config(design, tracker, faults, **more)
    for p, (kind, label) in enumerate(points(cfg), 1):
        for rec in run_chunk(cfg, Chunk(0, p, kind, label), 2, collect=True).records[1:]:
            full = play(cfg, (p, rec.second_point), Options(timeline=True))
            assert (
                rec.timeline,
                rec.effects,
                rec.duplicates,
                rec.missing,
                rec.gave_up,
                rec.asks,
                rec.model_calls,
                rec.status,
            ) == (
                full.timeline,
                full.effects,
                full.duplicates,
                full.missing,
                full.gave_up,
                full.asks,
                full.model_calls,
                full.status,
            ), (p, rec.second_point)


@pytest.mark.parametrize("tracker,faults", [("keyed", f"k:{MAX_ATTEMPTS + 1}"), ("keyless", "always")])
def test_kill_gives_the_records_of_panic_at_depth_1(tracker, faults):
    panic = config(tracker=tracker, faults=faults)
    killed = replace(panic, crash_model="kill")
    for p, (kind, label) in enumerate(points(panic), 1):
        chunk = Chunk(0, p, kind, label)
        assert run_chunk(killed, chunk, 1, collect=True).records == run_chunk(panic, chunk, 1, collect=True).records


def test_the_command_line_shows_the_gave_up_column(capsys):
    assert (
        main(
            [
                "sweep",
                "--design",
                "tool-fails",
                "--tracker",
                "keyed",
                "--tool-faults",
                f"k:{MAX_ATTEMPTS}",
                "--depth",
                "1",
                "--format",
                "csv",
            ]
        )
        == 0
    )
    r = next(csv.DictReader(capsys.readouterr().out.splitlines()))
    assert int(r["gave_up"]) > 0 and int(r["missing"]) == 0


@pytest.mark.parametrize("depth", [1, 2])
def test_a_queue_sweep_answered_truthfully_is_the_scripted_sweep_through_give_ups(depth):
    # A pause resumes from the state its process started from: a process after a give-up started
    # within the crash plan's segment, and is played again from there with the answer.
    from tests.agentcore.harness.test_sweep import _comparable, _queue_sweep_answered_truthfully

    cfg = config(tracker="keyless", faults=f"k:{MAX_ATTEMPTS + 1}")
    scripted = sweep([cfg], depth=depth, collect=True).records[0]
    queued, _ = _queue_sweep_answered_truthfully(cfg, depth)
    assert any(r.gave_up for r in scripted) and _comparable(queued) == _comparable(scripted)


def test_a_give_up_is_counted_by_the_job_call_a_fresh_provider_id_stands_for():
    server = ToolServer(Tracker("keyed"), TRIAGE, 1)
    server.give_up((0, "call_1~2"))
    server.give_up((0, "call_1"))
    assert server.given_up == {(0, "call_1"): 2}
