"""The audit (agentcore.checker, run by agentcore.harness.audit): world models as Config conditions,
the job variants that stress the key, the judgement of a scenario, the verdicts with their first
breaking world and shortest witness, and the CLI's formats and one-line errors."""

import pytest

import agentcore as audit
from agentcore import jobs
from agentcore.checker.judge import BREAK, EXPECTED, OK, judge
from agentcore.cli import main
from agentcore.config import CONDITIONS, Config
from agentcore.durable import designs
from agentcore.harness.chunks import replay
from agentcore.harness.sweep import plan_chunks, run_chunks
from agentcore.jobs import Call, Job, Tool
from agentcore.records import ScenarioRecord

TRIAGE = jobs.load("triage")
PANIC, POWER_CUT = audit.world("panic"), audit.world("power-cut")


def _record(**outcome):
    fields = dict(
        duplicates=0,
        missing=0,
        wrong=0,
        gave_up=0,
        denied_ran=0,
        asks=0,
        avoidable=0,
        approvals=0,
        model_calls=3,
        calls_plus=0,
        status="done",
    )
    return ScenarioRecord("triage", "loop", "keyed", 2, 1, "k", "l", None, None, None, **(fields | outcome))


def test_every_world_is_a_valid_configuration_of_the_chapters_world_with_one_factor_changed():
    for w in audit.WORLDS:
        Config(TRIAGE, designs.get("tool-fails"), "keyed", runs=audit.RUNS, **w.conditions)  # validates them
        assert all(v != CONDITIONS[c] for c, v in w.conditions.items() if c != "seed")
        # one factor: the crash model with fsync, or one fault (fickle's seed is part of it)
        assert len(set(w.conditions) - {"fsync", "seed"}) <= 1
    assert [w.name for w in audit.WORLDS][:3] == ["panic", "power-cut", "power-cut-no-fsync"]
    assert "kill" not in {w.conditions.get("crash_model") for w in audit.WORLDS}


def test_the_variants_stress_the_key_each_in_one_way():
    made, skipped = audit.variants(TRIAGE)
    by = {v.name: v.job for v in made}
    assert list(by) == ["job", "same-args", "no-key", "idempotent"] and skipped == []
    assert by["job"] is TRIAGE
    twice = by["same-args"]
    assert twice.name == "triage+same-args"
    assert [c.id for c in twice.turns[0]] == ["call_1", "call_1_same", "call_2"]
    assert (twice.turns[0][1].tool, twice.turns[0][1].args) == ("create_issue", TRIAGE.turns[0][0].args)
    bare = by["no-key"].tools
    assert (bare["create_issue"].sends_key, bare["create_issue"].lookup) == (False, False)
    assert bare["comment"] == TRIAGE.tools["comment"] and by["no-key"].turns == TRIAGE.turns
    same = by["idempotent"]
    assert same.tools["label"] == Tool("label", "label", idempotent=True)
    assert same.turns[:-1] == TRIAGE.turns
    assert same.turns[-1] == (
        Call("label_1", "label", {"issue": {"$result": "call_1", "field": "number"}, "label": "audited"}),
    )


def test_a_variant_a_job_cannot_have_is_skipped_with_the_reason():
    search = Job(
        "look",
        {"search": Tool("search", "search", read_only=True)},
        ((Call("c1", "search", {"query": "x"}),),),
        "done",
        "test",
    )
    made, skipped = audit.variants(search)
    assert [v.name for v in made] == ["job"]
    assert [name for name, _ in skipped] == ["same-args", "no-key", "idempotent"]
    assert "no changing call" in skipped[0][1] and "creates no issue" in skipped[2][1]


def test_a_scenario_is_ok_an_expected_loss_or_a_break():
    person, tool, fsync = (
        audit.world("person-adversarial"),
        audit.world("tool-faults-always"),
        audit.world("power-cut-no-fsync"),
    )
    assert judge(_record(), PANIC) == OK
    for loss in ({"duplicates": 1}, {"missing": 1}, {"wrong": 1}, {"denied_ran": 1}, {"status": "corrupt"}):
        assert judge(_record(**loss), PANIC) == BREAK
    # a lie where nothing could check it (the ladder asked) is expected; without an ask it is the design's
    assert judge(_record(duplicates=1, asks=1), person) == EXPECTED
    assert judge(_record(duplicates=1), person) == BREAK
    assert judge(_record(duplicates=1, asks=1), audit.world("person-deny:0.5")) == BREAK
    # a tool that never recovers: missing where the loop gave up, never a double
    assert judge(_record(missing=1, gave_up=1, status="failed"), tool) == EXPECTED
    assert judge(_record(missing=1, status="failed"), tool) == BREAK
    assert judge(_record(missing=1, gave_up=1), tool) == BREAK  # done: the tool recovered, the call was skipped
    assert judge(_record(duplicates=1, gave_up=1), tool) == BREAK
    # an unsynced disk loses checkpoints, never makes an effect wrong; a denied call that ran is never excused
    assert judge(_record(duplicates=2, missing=1, status="corrupt"), fsync) == EXPECTED
    assert judge(_record(wrong=1), fsync) == BREAK
    assert judge(_record(denied_ran=1, asks=1), person) == BREAK


def test_the_correct_loop_is_safe_in_the_chapters_world_on_every_variant():
    result = audit.audit(TRIAGE, [designs.get("loop")], ["keyed"], [PANIC], depth=2)
    (s,) = result.subjects
    assert (s.broken, s.witness) == ("", None)
    assert s.cells["panic"].scenarios > 4 * 3000 and s.cells["panic"].breaks == 0
    assert audit.verdict(s) == "real loop, keyed tracker: safe"


def test_a_broken_design_names_its_first_breaking_world_and_is_not_swept_after_it():
    loop = designs.get("loop", ("skip_dir_fsync",))
    once = designs.get("once-per-turn")
    result = audit.audit(TRIAGE, [loop, once], ["keyed"], [PANIC, POWER_CUT, audit.world("tracker-crash")], depth=1)
    bug, naive = result.subjects
    assert (bug.broken, list(bug.cells)) == ("power-cut", ["panic", "power-cut"])
    assert bug.cells["panic"].breaks == 0 and bug.cells["power-cut"].breaks > 0
    assert (naive.broken, list(naive.cells)) == ("panic", ["panic"])
    assert bug.witness.world == "power-cut" and "crash_model=power-cut" in bug.witness.link
    assert audit.verdict(naive).startswith("save once per turn: broken by panic (")


def test_the_witness_is_the_shortest_breaking_timeline():
    once = designs.get("once-per-turn")
    result = audit.audit(TRIAGE, [once], ["keyed"], [PANIC], depth=1, site="http://x")
    wit = result.subjects[0].witness
    configs = [Config(v.job, once, "keyed", runs=audit.RUNS) for v in result.variants]
    lengths = [
        len(replay(configs[res.config], r.first_point).timeline)
        for res in run_chunks(configs, plan_chunks(configs), depth=1)
        for r in res.records
        if judge(r, PANIC) == BREAK
    ]
    assert len(lengths) > audit.CANDIDATES  # the candidates were a choice
    assert len(wit.timeline) == min(lengths)
    assert wit.record.duplicates > 0 and [e for e in wit.timeline if e["kind"] == "crash"]
    # printed up to the job run that doubled: the second, which loses nothing, is left out
    assert wit.timeline[wit.needed]["text"].startswith("fresh run run-2")
    assert [e for e in wit.timeline[: wit.needed] if e["kind"] == "crash"]
    assert wit.link == (
        f"http://x/witness/?job=triage&variant={wit.variant}&design=once-per-turn&tracker=keyed"
        f"&runs=2&first={wit.record.first_point}"
    )


def test_a_safe_verdict_names_its_expected_losses_and_the_table_counts_them():
    s = audit.Subject(
        designs.get("loop"), "keyless", {"panic": audit.Cell(10), "person-adversarial": audit.Cell(10, expected=4)}
    )
    assert audit.verdict(s) == (
        "real loop, keyless tracker: safe; expected losses under person-adversarial (4 scenarios)"
    )
    assert [c.text for c in s.cells.values()] == ["safe", "safe (4 expected)"]
    s.cells["panic"].breaks, s.broken = 3, "panic"
    assert audit.verdict(s) == "real loop, keyless tracker: broken by panic (3 of 10 scenarios)"
    assert s.cells["panic"].text == "3"


def test_tool_fault_worlds_are_not_swept_for_a_design_without_a_flaky_tool():
    result = audit.audit(TRIAGE, [designs.get("loop")], ["keyed"], [audit.world("tool-faults-always")], depth=1)
    cell = result.subjects[0].cells["tool-faults-always"]
    assert (cell.scenarios, cell.text) == (0, "n/a") and result.scenarios == 0


def test_markdown_sweeps_every_cell(capsys):
    assert (
        main(
            [
                "audit",
                "--design",
                "once-per-turn",
                "--tracker",
                "keyed",
                "--world",
                "panic",
                "--world",
                "power-cut",
                "--world",
                "tool-faults-k:4",
                "--depth",
                "1",
                "--format",
                "markdown",
            ]
        )
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "| design | panic | power-cut | tool-faults-k:4 |"
    name, panic, power_cut, tool = lines[2].strip("|").split(" | ")
    assert name.strip() == "save once per turn" and int(panic) > 0 and int(power_cut) >= int(panic)
    assert tool.strip() == "n/a"


def test_text_prints_a_verdict_with_its_witness_and_the_kill_note(capsys):
    assert (
        main(
            [
                "audit",
                "--design",
                "once-per-turn",
                "--design",
                "loop",
                "--tracker",
                "keyed",
                "--world",
                "panic",
                "--depth",
                "1",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert audit.KILL_NOTE in out
    assert "real loop, keyed tracker: safe\n" in out
    assert "save once per turn: broken by panic (" in out and "  witness (" in out
    assert "http://127.0.0.1:8000/witness/?job=triage&variant=" in out


def test_the_witness_shows_every_job_run_up_to_the_last_that_crashed_or_lost():
    timeline = [
        {"kind": "start", "text": "fresh run run-1 (process 1)"},
        {"kind": "crash", "text": "c"},
        {"kind": "start", "text": "resumed run run-1 at turn 0 (process 2)"},
        {"kind": "start", "text": "fresh run run-2.p2 (process 2)"},
        {"kind": "save", "text": "final"},
    ]
    assert audit.needed(timeline, {0}) == 3
    assert audit.needed(timeline, {1}) == 5
    assert audit.needed(timeline, set()) == 3  # the crash's run
    # a run ID naming no job run (a planted bug's) keeps counting the run it was in
    assert audit.needed([{"kind": "start", "text": "fresh run odd"}, {"kind": "save", "text": "x"}], set()) == 2


@pytest.mark.parametrize(
    "args, error",
    [
        (["--world", "moon"], "unknown world model 'moon'"),
        (["--design", "nope"], "unknown design 'nope'"),
        (["--tracker", "nope"], "unknown tracker mode 'nope'"),
        (["--bug", "nope"], "unknown bug 'nope'"),
        (["--job", "/nonexistent.json"], "/nonexistent.json: file: cannot read"),
    ],
)
def test_cli_errors_are_one_line_and_exit_2(capsys, args, error):
    assert main(["audit", *args]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("agentcore: error: ") and error in err[0]


def test_a_call_given_up_and_skipped_breaks_where_the_tool_recovers_on_a_tracker_that_cannot_tell():
    # keyless: nothing makes the skip show as a wrong effect, only the missing effect of a run that ended "done"
    tool = audit.world(f"tool-faults-k:{audit.MAX_ATTEMPTS + 1}")
    bug, sound = designs.get("tool-fails", ("skip_given_up",)), designs.get("tool-fails")
    result = audit.audit(TRIAGE, [bug, sound], ["keyless"], [tool], depth=1)
    skipped, correct = result.subjects
    assert skipped.broken == tool.name and skipped.cells[tool.name].breaks > 0
    assert correct.broken == "" and correct.cells[tool.name].expected == 0


def test_the_audit_refuses_depth_3_whose_witnesses_it_could_not_replay():
    with pytest.raises(ValueError, match="depth is 1 or 2, not 3"):
        audit.audit(jobs.load("triage"), [designs.get("loop")], ["keyed"], [audit.world("panic")], depth=3)
