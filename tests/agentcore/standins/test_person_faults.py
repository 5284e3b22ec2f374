"""A fallible person: the scripted person's spellings, what its errors do to a scenario,
denied_ran, the grade of each question, and the two planted approval bugs, each caught by the
option that should catch it and by no other."""

import json

import pytest

from agentcore import jobs
from agentcore.config import Config
from agentcore.durable import designs, ladder
from agentcore.harness.chunks import Chunk, points, run_chunk
from agentcore.harness.scenario import Options, play
from agentcore.harness.sweep import sweep
from agentcore.jobs import Call
from agentcore.standins.faults import chance
from agentcore.standins.person import ScriptedPerson, Suspended
from agentcore.standins.tracker import Tracker

TRIAGE = jobs.load("triage")
CALL = Call("c1", "create_issue", {"title": "t"})
ORIGINS = [(run, f"call_{i}") for run in range(3) for i in range(8)]
# Seed 2 denies some calls of the first job run and approves others (seed 0 denies all three).
MIXED = 2


def _made(t, origin):
    return t.request("create_issue", {"title": "t"}, None, origin, lambda kind, detail: None, "")


def _point(cfg, label):
    """The 1-based crash point with this label."""
    return next(i for i, (_, text) in enumerate(points(cfg), 1) if text == label)


def _caught(row):
    return (row.dups, row.missing, row.wrong, row.gave_up, row.denied_ran)


# --- the person's answers ---------------------------------------------------------------------------


def test_the_truthful_person_approves_everything_and_answers_truly():
    t = Tracker("keyless")
    p = ScriptedPerson(t)
    assert all(p.approve(f"req {o}", CALL, o) for o in ORIGINS)
    assert p.did_it_happen((0, "c1"), CALL, None, "") is None
    assert p.did_it_happen((0, "c1"), CALL, None, "") is None
    answer = _made(t, (0, "c1"))
    assert p.did_it_happen((0, "c1"), CALL, None, "") == answer


@pytest.mark.parametrize("seed", [0, 1, MIXED])
def test_deny_decides_each_call_by_the_chance_of_its_seed_run_and_call(seed):
    p = ScriptedPerson(Tracker("keyed"), "deny:0.5", seed)
    got = [p.approve(f"req {o}", CALL, o) for o in ORIGINS]
    assert got == [chance("deny", seed, *o) >= 0.5 for o in ORIGINS]
    assert True in got and False in got
    assert p.prompts == len(ORIGINS)


def test_deny_is_the_same_every_time_and_differs_with_the_seed():
    def decisions(seed):
        p = ScriptedPerson(Tracker("keyed"), "deny:0.5", seed)
        return [p.approve(f"req {o}", CALL, o) for o in ORIGINS]

    assert decisions(MIXED) == decisions(MIXED)
    assert decisions(MIXED) != decisions(MIXED + 1)


@pytest.mark.parametrize("spec,approved", [("deny:0", True), ("deny:1", False)])
def test_deny_at_the_ends_approves_all_or_none(spec, approved):
    p = ScriptedPerson(Tracker("keyed"), spec)
    assert {p.approve(f"req {o}", CALL, o) for o in ORIGINS} == {approved}


def test_a_repeated_request_gets_its_decision_without_a_prompt_whichever_call_it_is_about():
    p = ScriptedPerson(Tracker("keyed"), "deny:0.5", MIXED)
    denied = next(o for o in ORIGINS if p.denies(o))
    approved = next(o for o in ORIGINS if not p.denies(o))
    assert p.approve("req", CALL, denied) is False
    assert p.approve("req", CALL, approved) is False  # the old decision: the person cannot tell
    assert p.prompts == 1
    assert not p.denies(approved)  # its verdict on the call stays its own


def _answers(spec, seed=0, asks=40):
    """The answers (True: "it happened") to asks about calls half of which happened."""
    t = Tracker("keyless")
    for o in ORIGINS[::2]:
        _made(t, o)
    p = ScriptedPerson(t, spec, seed)
    got = []
    for n in range(asks):
        o = ORIGINS[n % len(ORIGINS)]
        got.append((o, p.did_it_happen(o, CALL, None, "") is not None, t.find(o) is not None))
    return got


def test_wrong_answers_each_ask_wrongly_by_the_chance_of_its_seed_run_call_and_ask_number():
    got = _answers("wrong:0.5", MIXED)
    assert [said != truth for _, said, truth in got] == [
        chance("wrong", MIXED, *o, n) < 0.5 for n, (o, _, _) in enumerate(got, 1)
    ]
    assert {said != truth for _, said, truth in got} == {True, False}
    assert _answers("wrong:0.5", MIXED) == got


@pytest.mark.parametrize("spec,lies", [("wrong:0", False), ("wrong:1", True), ("adversarial", True)])
def test_wrong_at_the_ends_and_adversarial(spec, lies):
    assert {said != truth for _, said, truth in _answers(spec)} == {lies}


@pytest.mark.parametrize("spec", ["wrong:1", "adversarial"])
def test_a_person_who_answers_wrongly_still_approves_everything(spec):
    p = ScriptedPerson(Tracker("keyed"), spec)
    assert all(p.approve(f"req {o}", CALL, o) for o in ORIGINS)


def test_a_wrong_yes_is_a_bare_confirmation_and_a_wrong_no_hides_the_effect():
    t = Tracker("keyless")
    p = ScriptedPerson(t, "adversarial")
    assert p.did_it_happen((0, "c1"), CALL, None, "") == {"confirmed": True}
    _made(t, (0, "c1"))
    assert p.did_it_happen((0, "c1"), CALL, None, "") is None


# --- what the errors do to a scenario -----------------------------------------------------------------


def test_a_wrong_yes_makes_the_loop_take_the_call_as_done_and_its_effect_missing():
    cfg = Config(TRIAGE, designs.get("loop"), "keyless", person_faults="adversarial")
    # The marker is saved, the call never reached the tracker: the truth is "no".
    p = play(cfg, (_point(cfg, "marker-saved create_issue call_1"),))
    assert (p.asks, p.duplicates, p.missing) == (1, 0, 1)


def test_a_wrong_no_makes_the_loop_call_again_a_duplicate_on_a_keyless_tracker():
    cfg = Config(TRIAGE, designs.get("loop"), "keyless", person_faults="adversarial")
    # The tracker accepted the call, its answer never came back: the truth is "yes".
    p = play(cfg, (_point(cfg, "tracker-accepted create_issue call_1"),))
    assert (p.asks, p.duplicates, p.missing) == (1, 1, 0)


def test_a_truthful_answer_at_the_same_points_loses_and_doubles_nothing():
    cfg = Config(TRIAGE, designs.get("loop"), "keyless")
    for label in ("marker-saved create_issue call_1", "tracker-accepted create_issue call_1"):
        p = play(cfg, (_point(cfg, label),))
        assert (p.asks, p.duplicates, p.missing) == (1, 0, 0)


# --- denied_ran and missing ---------------------------------------------------------------------------


def test_a_denied_call_is_not_missing_and_the_gate_runs_none():
    p = play(Config(TRIAGE, designs.get("approval-gate"), "keyed", person_faults="deny:1"), ())
    assert (p.approvals, p.duplicates, p.missing, p.denied_ran) == (3, 0, 0, 0)


def test_denied_ran_counts_each_denied_call_that_made_an_effect():
    p = play(Config(TRIAGE, designs.get("approval-gate", ("denied_still_runs",)), "keyed", person_faults="deny:1"), ())
    assert (p.duplicates, p.missing, p.denied_ran) == (0, 0, 3)


def test_a_tracker_tallies_a_denied_call_apart():
    t = Tracker("keyless")
    for o in [(0, "a"), (0, "b"), (0, "b")]:
        _made(t, o)
    denied = frozenset({(0, "b"), (0, "c")})
    assert t.tally([(0, "a"), (0, "b"), (0, "c"), (0, "d")], denied) == (1, 1)  # d missing, c rightly not
    assert t.made(denied) == 1


# --- the grade of a question --------------------------------------------------------------------------


def test_the_grade_is_the_tool_s_key():
    assert ladder.avoidable(True) is True
    assert ladder.avoidable(False) is False


def _job(sends_key, lookup):
    return jobs.parse(
        json.dumps(
            {
                "name": "one",
                "tools": {"t": {"op": "create_issue", "sends_key": sends_key, "lookup": lookup}},
                "turns": [{"calls": [{"id": "c1", "tool": "t", "args": {"title": "x"}}]}, {"final": "done"}],
            }
        ),
        "one",
    )


@pytest.mark.parametrize(
    "design,tracker,sends_key,lookup,graded",
    [
        ("markers", "keyed", True, True, True),  # the design sends no key the tracker would honour
        ("loop", "keyless", True, True, True),  # the tracker ignores the key and answers no lookup
        ("loop", "lookup", True, False, True),  # the tool has no lookup: a keyed tracker would rerun
        ("loop", "lookup", False, True, False),  # a lookup goes by key: the tool sends none
        ("loop", "keyed", False, False, False),  # nothing but the person can tell
    ],
)
def test_each_question_the_ladder_asks_carries_its_grade(design, tracker, sends_key, lookup, graded):
    cfg = Config(_job(sends_key, lookup), designs.get(design), tracker, person="queue")
    p = play(cfg, (_point(cfg, "tracker-accepted t c1"),))
    assert p.status == "waiting"
    assert p.question["avoidable"] is graded


@pytest.mark.parametrize("sends_key,avoidable", [(True, 1), (False, 0)])
def test_a_scenario_counts_its_avoidable_asks(sends_key, avoidable):
    cfg = Config(_job(sends_key, False), designs.get("loop"), "keyless")
    p = play(cfg, (_point(cfg, "tracker-accepted t c1"),))
    assert (p.asks, p.avoidable) == (1, avoidable)


def test_a_paused_scenario_stores_its_avoidable_asks_and_a_resume_goes_on_counting():
    from agentcore.harness.chunks import resume
    from agentcore.harness.state import Durable

    cfg = Config(TRIAGE, designs.get("markers"), "keyed", person="queue")
    first = _point(cfg, "tracker-accepted create_issue call_1")
    # Process 2 asks about call_1 and pauses; answered, it crashes again at some point q and
    # process 3 asks again: its paused state starts after one avoidable ask.
    again = None
    for q in range(1, 40):
        p = play(cfg, (first, q))
        r = resume(cfg, p.durable, {p.question["id"]: True}, (first, "k", "l"), None).played
        if r.status == "waiting":
            again = r
            break
    assert again is not None
    stored = json.loads(json.dumps(again.durable))
    assert (stored["asks"], stored["avoidable"]) == (1, 1)
    assert Durable.from_dict(stored, "q").to_dict() == stored
    done = resume(cfg, stored, {again.question["id"]: True}, (first, "k", "l"), None).record
    assert (done.status, done.asks, done.avoidable) == ("done", 2, 2)


def test_a_question_raised_carries_the_grade_it_was_asked_with():
    from agentcore.standins.person import QueuePerson

    with pytest.raises(Suspended) as e:
        QueuePerson(Tracker("keyless")).did_it_happen((0, "c1"), CALL, None, "", True)
    assert e.value.question["avoidable"] is True


# --- the correct loop and the planted bugs --------------------------------------------------------------


@pytest.mark.parametrize("seed,runs", [(0, 1), (MIXED, 1), (MIXED, 2)])
def test_the_keyed_approval_gate_is_clean_under_deny(seed, runs):
    row = sweep(
        [Config(TRIAGE, designs.get("approval-gate"), "keyed", runs=runs, person_faults="deny:0.5", seed=seed)]
    ).rows[0]
    assert (row.dups, row.missing, row.denied_ran) == (0, 0, 0)


def _rows(bug, runs=1, **conditions):
    """The sound approval gate's row and the buggy one's, on a keyed tracker at depth 1."""
    return [
        sweep(
            [Config(TRIAGE, designs.get("approval-gate", bugs), "keyed", runs=runs, **conditions)],
            depth=1,
            collect=True,
        )
        for bugs in ((), (bug,))
    ]


@pytest.mark.parametrize("seed", [0, MIXED])
def test_deny_catches_a_denied_call_that_still_runs(seed):
    sound, buggy = _rows("denied_still_runs", person_faults="deny:0.5", seed=seed)
    assert sound.rows[0].denied_ran == 0
    assert buggy.rows[0].denied_ran > 0


@pytest.mark.parametrize("seed", [0, MIXED])
def test_deny_over_two_runs_catches_an_approval_id_reused(seed):
    sound, buggy = _rows("approval_id_reused", runs=2, person_faults="deny:0.5", seed=seed)
    assert (sound.rows[0].missing, sound.rows[0].denied_ran) == (0, 0)
    assert buggy.rows[0].missing + buggy.rows[0].denied_ran > 0
    # the second run was never asked: it took the first run's decisions
    assert {r.approvals for r in sound.records[0]} == {6}
    assert {r.approvals for r in buggy.records[0]} == {3}


OTHER_OPTIONS = [
    {},
    {"person_faults": "wrong:0.5"},
    {"person_faults": "adversarial"},
    {"tool_faults": "k:2"},
    {"model": "fresh-ids"},
    {"model": "fickle", "seed": MIXED},
    {"tracker_fault": "crash"},
    {"tracker_fault": "ttl:2"},
    {"tracker_fault": "strict-params"},
]


@pytest.mark.parametrize("runs", [1, 2])
@pytest.mark.parametrize("conditions", OTHER_OPTIONS)
def test_no_other_option_catches_a_denied_call_that_still_runs(conditions, runs):
    sound, buggy = _rows("denied_still_runs", runs=runs, **conditions)
    assert _caught(buggy.rows[0]) == _caught(sound.rows[0])


@pytest.mark.parametrize("conditions", OTHER_OPTIONS + [{"person_faults": "deny:0.5", "seed": MIXED}])
def test_no_other_option_catches_an_approval_id_reused(conditions):
    runs = 1 if conditions.get("person_faults", "").startswith("deny") else 2  # deny needs two runs
    sound, buggy = _rows("approval_id_reused", runs=runs, **conditions)
    assert _caught(buggy.rows[0]) == _caught(sound.rows[0])


# --- determinism: twice scenarios and the kill crash model --------------------------------------------


@pytest.mark.parametrize(
    "design,tracker,faults,runs",
    [
        ("approval-gate", "keyed", "deny:0.5", 2),
        ("approval-gate", "keyless", "deny:0.5", 1),
        ("loop", "keyless", "wrong:0.5", 1),
        ("markers", "keyed", "wrong:0.5", 1),
    ],
)
def test_twice_scenarios_equal_a_full_replay_crashed_twice(design, tracker, faults, runs):
    # As tests/agentcore/harness/test_sweep.py's test of the name: the person's draws, and its verdicts,
    # must come out the same from a noted state as in a full replay.
    cfg = Config(TRIAGE, designs.get(design), tracker, runs=runs, person_faults=faults, seed=MIXED)
    for p, (kind, label) in enumerate(points(cfg), 1):
        noted = run_chunk(cfg, Chunk(0, p, kind, label), 2).records[1:]
        for rec in noted:
            full = play(cfg, (p, rec.second_point), Options())
            assert (
                rec.duplicates,
                rec.missing,
                rec.denied_ran,
                rec.asks,
                rec.avoidable,
                rec.approvals,
                rec.model_calls,
                rec.status,
            ) == (
                full.duplicates,
                full.missing,
                full.denied_ran,
                full.asks,
                full.avoidable,
                full.approvals,
                full.model_calls,
                full.status,
            ), (p, rec)
            assert len(full.crashes) == 2


@pytest.mark.parametrize("design,bugs", [("approval-gate", ()), ("approval-gate", ("denied_still_runs",))])
def test_kill_gives_the_records_of_panic_under_deny(design, bugs):
    panic, killed = (
        sweep(
            [Config(TRIAGE, designs.get(design, bugs), "keyless", person_faults="deny:0.5", seed=MIXED, crash_model=m)],
            depth=1,
            collect=True,
        )
        for m in ("panic", "kill")
    )
    assert killed.records == panic.records
    assert killed.rows[0].denied_ran == panic.rows[0].denied_ran
