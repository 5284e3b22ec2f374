"""Effects checked against the truth (agentcore.checker.effects): the truth of a configuration, a wrong
effect told from a legitimately different one, and the planted bug happened_without_result caught
by the wrong column where a "happened" answer is heard, and nowhere else."""

import copy

import pytest

from agentcore import jobs
from agentcore.config import Config, table_configs
from agentcore.durable import designs
from agentcore.harness import scenario
from agentcore.harness import scenario as effects  # the runner makes the truth the checker compares with
from agentcore.harness.chunks import Chunk, points, run_chunk
from agentcore.harness.scenario import Options, play
from agentcore.harness.sweep import sweep

TRIAGE = jobs.load("triage")
BUG = ("happened_without_result",)
TITLE_1 = "Login fails after password reset"
TITLE_2 = "Export times out on large projects"
BODY = "Likely related to the session store change."


def _effect(op, args, origin, answer):
    return {"op": op, "args": args, "key": None, "origin": list(origin), "answer": answer}


def _issue(n, call, run=0):
    return _effect("create_issue", {"title": TITLE_1 if call == "call_1" else TITLE_2}, (run, call), {"number": n})


def _comment(issue, n=1, run=0):
    return _effect("comment", {"issue": issue, "body": BODY}, (run, "call_4"), {"comment": n, "issue": issue})


def _wrong(effs, tracker="keyless"):
    return effects.wrong(Config(TRIAGE, designs.get("loop"), tracker), effs)


def test_the_truth_of_the_triage_job_is_two_issues_and_a_comment_on_the_first():
    truth = effects.truth(Config(TRIAGE, designs.get("loop"), "keyless"))
    assert truth.effects == {
        (0, "call_1"): ("create_issue", {"title": TITLE_1}),
        (0, "call_2"): ("create_issue", {"title": TITLE_2}),
        (0, "call_4"): ("comment", {"issue": ("issue", 0, "call_1"), "body": BODY}),
    }


def test_the_truth_of_daily_runs_names_each_run_s_own_issue():
    truth = effects.truth(Config(TRIAGE, designs.get("loop"), "keyed", runs=2))
    assert truth.effects[1, "call_4"] == ("comment", {"issue": ("issue", 1, "call_1"), "body": BODY})


def test_the_truth_is_played_once_per_configuration(monkeypatch):
    played = []
    real = scenario.uninterrupted_effects
    monkeypatch.setattr(scenario, "uninterrupted_effects", lambda cfg: played.append(cfg) or real(cfg))
    job = jobs.load("triage")  # a job object no truth was made for yet
    cfg = Config(job, designs.get("loop"), "keyless")
    for p in range(1, 6):
        play(cfg, (p,))
    effects.truth(Config(job, designs.get("loop"), "keyless", crash_model="power-cut"))  # other conditions
    assert len(played) == 1


def test_the_truth_is_the_sound_design_s_run_in_the_fault_free_world():
    # The flaky tool's uninterrupted run asks the person about call_1: with the bug, it would record
    # a bare confirmation and comment on issue None. The truth is the design's without its bug.
    cfg = Config(
        TRIAGE,
        designs.get("tool-fails", BUG),
        "keyless",
        person="queue",
        tool_faults="k:3",
        crash_model="kill",
        fsync=False,
    )
    assert effects.fault_free(cfg) == Config(TRIAGE, designs.get("tool-fails"), "keyless")
    assert effects.truth(cfg).effects[0, "call_4"][1]["issue"] == ("issue", 0, "call_1")


def test_the_uninterrupted_run_s_own_effects_are_not_wrong():
    assert _wrong([_issue(1, "call_1"), _issue(2, "call_2"), _comment(1)]) == 0


@pytest.mark.parametrize("issue", [None, 2, 7])  # no issue, call_2's issue, an issue never made
def test_a_comment_on_another_issue_than_call_1_s_is_wrong(issue):
    assert _wrong([_issue(1, "call_1"), _issue(2, "call_2"), _comment(issue)]) == 1


def test_other_arguments_are_compared_as_they_are():
    effs = [_issue(1, "call_1"), _issue(2, "call_2"), _comment(1)]
    effs[1]["args"] = {"title": "something else"}
    effs[2]["args"] = {"issue": 1, "body": "another body"}
    assert _wrong(effs) == 2


def test_a_duplicate_issue_made_first_shifts_the_numbers_and_nothing_is_wrong():
    # call_1 made issues 1 and 2, call_2 made 3: a comment on either of call_1's issues is right.
    made = [_issue(1, "call_1"), _issue(2, "call_1"), _issue(3, "call_2")]
    assert [_wrong([*made, _comment(n)]) for n in (1, 2, 3)] == [0, 0, 1]


def test_a_duplicate_that_differs_counts_as_a_duplicate_and_as_wrong():
    cfg = Config(TRIAGE, designs.get("loop"), "keyless")
    effs = [_issue(1, "call_1"), _issue(2, "call_2"), _comment(1), _comment(None, 2)]
    from agentcore.standins.tracker import Tracker

    tracker = Tracker("keyless")
    tracker.effects = effs
    assert tracker.tally(cfg.expected) == (1, 0)
    assert effects.wrong(cfg, effs) == 1


def test_an_effect_whose_origin_the_truth_has_not_is_not_checked():
    stray = _effect("comment", {"issue": None, "body": "?"}, (0, "call_9"), {"comment": 2, "issue": None})
    assert _wrong([_issue(1, "call_1"), _issue(2, "call_2"), _comment(1), stray]) == 0


def test_stored_effects_are_checked_as_made():
    # A durable state stores the tracker's effects as JSON: origins are lists there too.
    effs = [_issue(1, "call_1"), _issue(2, "call_2"), _comment(None)]
    assert _wrong(copy.deepcopy(effs)) == _wrong(effs) == 1


def test_every_row_of_the_table_at_the_defaults_has_nothing_wrong():
    rows = sweep(table_configs(TRIAGE)).rows
    assert len(rows) == 11
    assert {r.name: r.wrong for r in rows} == {r.name: 0 for r in rows}


@pytest.mark.parametrize("design", ["loop", "tool-fails"])
def test_the_correct_loop_under_the_lookup_tracker_has_nothing_wrong(design):
    row = sweep([Config(TRIAGE, designs.get(design), "lookup")]).rows[0]
    assert row.once > 0 and row.wrong == 0


@pytest.mark.parametrize(("tracker", "caught"), [("keyless", True), ("lookup", True), ("keyed", False)])
def test_happened_without_result_is_caught_by_the_wrong_column_where_a_happened_is_heard(tracker, caught):
    # The person (keyless) or a lookup says "it happened"; a keyed tracker's reruns never do.
    row = sweep([Config(TRIAGE, designs.get("loop", BUG), tracker)], depth=1).rows[0]
    assert (row.wrong > 0) == caught
    assert (row.dups, row.missing) == (0, 0)  # the comment exists: only its content tells


@pytest.mark.parametrize(
    "conditions",
    [
        {"crash_model": "power-cut"},
        {"crash_model": "power-cut", "fsync": False},
        {"tracker_fault": "crash"},
        {"crash_model": "kill"},
    ],
)
def test_happened_without_result_under_the_keyed_tracker_is_caught_under_no_other_condition(conditions):
    row = sweep([Config(TRIAGE, designs.get("loop", BUG), "keyed", **conditions)], depth=1).rows[0]
    assert row.wrong == 0


def test_happened_without_result_s_wrong_effect_is_the_comment_on_issue_none():
    res = sweep([Config(TRIAGE, designs.get("loop", BUG), "keyless")], depth=1, collect=True)
    caught = [r for r in res.records[0] if r.wrong]
    assert caught and sum(r.wrong for r in caught) == res.rows[0].wrong
    for r in caught:
        assert [e["args"]["issue"] for e in r.effects if e["op"] == "comment"] == [None]


@pytest.mark.parametrize("tracker", ["keyless", "lookup"])
def test_twice_scenarios_with_happened_without_result_equal_a_full_replay_crashed_twice(tracker):
    cfg = Config(TRIAGE, designs.get("loop", BUG), tracker)
    wrong = 0
    for p, (kind, label) in enumerate(points(cfg), 1):
        for rec in run_chunk(cfg, Chunk(0, p, kind, label), 2).records[1:]:
            full = play(cfg, (p, rec.second_point), Options())
            assert (rec.duplicates, rec.missing, rec.wrong, rec.asks, rec.model_calls, rec.status) == (
                full.duplicates,
                full.missing,
                full.wrong,
                full.asks,
                full.model_calls,
                full.status,
            ), (p, rec)
            wrong += rec.wrong
    assert wrong > 0


def test_kill_gives_the_records_of_panic_with_happened_without_result_at_depth_1():
    panic, killed = (Config(TRIAGE, designs.get("loop", BUG), "keyless", crash_model=m) for m in ("panic", "kill"))
    a, b = (sweep([c], depth=1, collect=True).records[0] for c in (panic, killed))
    assert a == b
    assert sum(r.wrong for r in a) > 0


def test_a_queue_person_s_wrong_yes_shows_as_a_missing_issue_and_a_wrong_comment():
    # Crashed right after call_1's marker (before the request), the restart asks: "yes" is wrong,
    # nothing shows on the tracker, the result is a bare confirmation, the comment goes to None.
    cfg = Config(TRIAGE, designs.get("loop"), "keyless", person="queue")
    p = next(n for n, (kind, label) in enumerate(points(cfg), 1) if kind == "marker-saved" and label.endswith("call_1"))
    paused = play(cfg, (p,))
    assert paused.status == "waiting" and paused.question["truth"] is False
    done = play(cfg, (p,), answers={paused.question["id"]: True})
    assert (done.status, done.missing, done.wrong) == ("done", 1, 1)
