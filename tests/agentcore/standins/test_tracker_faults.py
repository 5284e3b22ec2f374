"""A tracker that is not ideal: one that forgets keys after N requests (ttl:N),
one that refuses a known key with other arguments (strict-params); the rows the sweep shows, the
planted bug only strict-params catches, twice scenarios against a full replay, kill against panic."""

import csv
import json

import pytest

from agentcore import jobs
from agentcore.cli import main
from agentcore.config import Config, table_configs
from agentcore.crash import CrashPlan
from agentcore.durable import designs
from agentcore.durable.checkpoint import CheckpointError
from agentcore.harness.chunks import Chunk, points, run_chunk
from agentcore.harness.scenario import Options, play
from agentcore.harness.state import Durable, World
from agentcore.harness.sweep import sweep
from agentcore.records import COLUMNS
from agentcore.standins.tracker import Refused, Tracker

TRIAGE = jobs.load("triage")
ORIGIN = (0, "call_1")
TITLE = {"title": "t"}


def config(design="loop", tracker="keyed", fault="ttl:1", **kw):
    base, *bugs = design.split("+")
    return Config(TRIAGE, designs.get(base, tuple(bugs)), tracker, tracker_fault=fault, **kw)


def request(tracker, args=TITLE, key="k1", origin=ORIGIN, op="create_issue"):
    return tracker.request(op, args, key, origin, CrashPlan(), f"{op} {origin[1]}")


def row(cfg, depth=2):
    return sweep([cfg], depth=depth).rows[0]


# --- ttl:N: keys forgotten after N requests -------------------------------------------------------


def test_a_key_is_known_to_the_n_requests_after_the_one_that_stored_it():
    t = Tracker("keyed", "ttl:2")
    request(t)
    t.search({"query": "t"})
    assert request(t) == {"number": 1} and len(t.effects) == 1  # the 2nd request after it


def test_a_repeat_after_the_key_expired_makes_a_second_issue():
    t = Tracker("keyed", "ttl:2")
    request(t)
    t.search({"query": "t"})
    t.search({"query": "t"})
    assert request(t) == {"number": 2} and len(t.effects) == 2  # the 3rd: a new request
    assert t.tally([ORIGIN]) == (1, 0)


def test_the_repeat_that_made_the_second_issue_stores_the_key_again():
    t = Tracker("keyed", "ttl:1")
    request(t)
    t.search({})
    request(t)
    assert request(t) == {"number": 2} and len(t.effects) == 2


def test_a_lookup_counts_as_a_request_and_forgets_too():
    t = Tracker("lookup", "ttl:1")
    request(t)
    assert t.lookup("k1") == {"number": 1}  # the 1st request after it
    assert t.lookup("k1") is None  # the 2nd: "never happened", though it did
    assert t.find(ORIGIN) == {"number": 1}  # the person looks at the issues themselves


def test_what_the_person_reads_off_the_tracker_is_no_request():
    t = Tracker("keyed", "ttl:1")
    request(t)
    for _ in range(3):
        t.find(ORIGIN)
    assert t.requests == 1 and request(t) == {"number": 1}


def test_a_tracker_without_the_fault_never_forgets():
    t = Tracker("keyed")
    request(t)
    for _ in range(100):
        t.search({})
    assert request(t) == {"number": 1} and len(t.effects) == 1


def test_the_request_count_and_the_keys_ages_outlive_a_stored_durable_state():
    t = Tracker("keyed", "ttl:2")
    request(t)
    t.search({})
    back = Tracker.restore(json.loads(json.dumps(t.snapshot())))
    back.search({})
    assert request(back) == {"number": 2}  # 3 requests after: forgotten, as without the restore


# --- strict-params: a known key with other arguments is refused -----------------------------------


def test_a_known_key_with_other_arguments_is_refused_and_nothing_happens():
    t = Tracker("keyed", "strict-params")
    request(t)
    with pytest.raises(Refused, match="other arguments"):
        request(t, {"title": "u"})
    assert len(t.effects) == 1 and t.refused == [list(ORIGIN)]


def test_a_known_key_under_another_op_is_refused():
    t = Tracker("keyed", "strict-params")
    request(t)
    with pytest.raises(Refused):
        request(t, op="comment")


def test_a_known_key_with_the_same_arguments_is_answered_from_the_first_request():
    t = Tracker("keyed", "strict-params")
    request(t)
    assert request(t) == {"number": 1} and len(t.effects) == 1 and t.refused == []


def test_a_call_answered_after_its_refusal_is_no_longer_a_refused_call():
    t = Tracker("keyed", "strict-params")
    request(t)
    with pytest.raises(Refused):
        request(t, {"title": "u"})
    request(t)
    assert t.refused == []


def test_a_keyless_tracker_compares_nothing():
    t = Tracker("keyless", "strict-params")
    request(t)
    request(t, {"title": "u"})
    assert len(t.effects) == 2


def test_a_refused_request_the_job_needed_is_a_missing_effect():
    # Another call's request under the first one's key: refused, so its effect never happened.
    t = Tracker("keyed", "strict-params")
    request(t)
    with pytest.raises(Refused):
        request(t, {"title": "u"}, origin=(0, "call_2"))
    assert t.tally([ORIGIN, (0, "call_2")]) == (0, 1)


def test_the_keys_arguments_and_the_refused_calls_outlive_a_stored_durable_state():
    t = Tracker("keyed", "strict-params")
    request(t)
    with pytest.raises(Refused):
        request(t, {"title": "u"})
    back = Tracker.restore(json.loads(json.dumps(t.snapshot())))
    assert back.refused == [list(ORIGIN)]
    with pytest.raises(Refused):
        request(back, {"title": "u"})


@pytest.mark.parametrize(
    "fault,field,value",
    [
        ("ttl:2", "requests", "many"),
        ("ttl:2", "stored", []),
        ("strict-params", "params", None),
        ("strict-params", "refused", {}),
    ],
)
def test_a_stored_state_whose_fault_records_are_corrupt_is_refused(fault, field, value):
    cfg = config(fault=fault)
    note = play(cfg, (3,), Options(notes=True)).restarts[0]
    stored = note.to_dict()
    assert World.restore(cfg, Durable.from_dict(stored, "stored")).tracker.snapshot() == note.tracker
    stored["tracker"][field] = value
    with pytest.raises(CheckpointError, match="the tracker's fault state is corrupt"):
        Durable.from_dict(stored, "stored")


# --- the loop meets a refusal ---------------------------------------------------------------------


def _after_accept(cfg):
    """Crashed after the tracker accepted call_1, before its result was saved: the restart retries."""
    at = [lb for _, lb in points(cfg)].index("tracker-accepted create_issue call_1") + 1
    return play(cfg, (at,), Options(timeline=True))


def test_the_loop_records_a_refusal_as_the_call_s_result_and_moves_on():
    p = _after_accept(config("loop+retry_edits_args", fault="strict-params"))
    texts = [e["text"] for e in p.timeline]
    answer = next(t for t in texts if t.startswith("answer create_issue call_1"))
    assert "refused" in answer and "'retry': True" in [t for t in texts if "request create_issue call_1" in t][-1]
    assert sum(t.startswith("request create_issue call_1") for t in texts) == 2  # no retry after the refusal
    assert texts.count("result create_issue call_1") == 1  # the refusal is its saved result
    assert (p.status, p.gave_up, p.duplicates, p.missing, p.model_calls) == ("done", 1, 0, 0, 3)


def test_the_same_retry_is_answered_silently_by_a_tracker_that_does_not_compare():
    p = _after_accept(config("loop+retry_edits_args", fault="none"))
    answer = next(e["text"] for e in p.timeline if e["text"].startswith("answer create_issue call_1"))
    assert answer.endswith("{'number': 1}") and p.gave_up == 0


# --- the sweep's rows -----------------------------------------------------------------------------

CHAPTER = {r.name: r.values() for r in sweep(table_configs(TRIAGE)).rows}


def test_the_real_loop_doubles_a_call_under_ttl_1_when_two_crashes_make_its_key_expire():
    res = sweep([config()])
    assert res.rows[0].values() == (38, 872, 27, 27, 0, 0, 0, 0, 0, 0, 180)
    doubled = [r for r in res.records[0] if r.duplicates]
    # Both crashes between the tracker accepting a call and its result saved: the second retry is
    # the 2nd request after the one that stored the key.
    for r in doubled:
        assert r.second_point is not None
        assert r.first_label.split(" ")[-1] == r.second_label.split(" ")[-1]


def test_one_crash_never_outlives_a_key_of_the_real_loop():
    assert row(config(), depth=1).dups == 0


@pytest.mark.parametrize("n", [2, 5, 20])
def test_the_real_loop_is_clean_from_ttl_2_the_sweep_s_depth(n):
    assert row(config(fault=f"ttl:{n}")).values() == CHAPTER["real loop, keyed tracker"]


@pytest.mark.parametrize("n,dups", [(1, 297), (2, 18), (3, 0)])
def test_a_flaky_tool_s_failed_attempt_needs_a_key_kept_one_request_longer(n, dups):
    assert row(config("tool-fails", fault=f"ttl:{n}")).dups == dups


def test_the_table_under_strict_params_is_the_chapter_s():
    # No design of the table repeats a key with other arguments: nothing is refused.
    assert {r.name: r.values() for r in sweep(table_configs(TRIAGE, tracker_fault="strict-params")).rows} == CHAPTER


def test_the_command_line_sweeps_with_ttl(capsys):
    assert main(["sweep", "--design", "loop", "--tracker", "keyed", "--tracker-fault", "ttl:1", "--format", "csv"]) == 0
    r = next(csv.DictReader(capsys.readouterr().out.splitlines()))
    assert (r["with_dups"], r["dups"]) == ("27", "27")


# --- the planted bug: a retry that edits its arguments --------------------------------------------


def test_retry_edits_args_is_caught_by_strict_params():
    buggy = row(config("loop+retry_edits_args", fault="strict-params"))
    assert (buggy.gave_up, buggy.dups, buggy.missing) == (360, 0, 0)


@pytest.mark.parametrize("fault", ["none", "crash", "ttl:1", "ttl:5"])
def test_retry_edits_args_doubles_and_loses_nothing_under_any_other_tracker(fault):
    # The other trackers answer the edited retry from its key; only the content check (agentcore.checker.effects)
    # sees it, where the retry is the request that made the effect: its arguments are not the job's.
    buggy, sound = row(config("loop+retry_edits_args", fault=fault)), row(config(fault=fault))
    others = tuple(c for c in COLUMNS if c != "wrong")
    assert buggy.values(others) == sound.values(others)
    assert sound.wrong == 0 and buggy.wrong > 0


def test_reuse_run_id_sends_run_1_s_arguments_again_so_strict_params_answers_as_keyed_does():
    # Run 2's calls carry run 1's keys and run 1's arguments (the same titles; the comment on the
    # issue number run 1 got): nothing to refuse, run 2's effects are missing either way.
    rows = [row(config("loop+reuse_run_id", fault=f, runs=2), depth=1) for f in ("none", "strict-params")]
    assert rows[0].values() == rows[1].values() and rows[0].missing == 76 * 3 and rows[1].gave_up == 0


# --- twice scenarios from a noted state; kill ------------------------------------------------------


@pytest.mark.parametrize(
    "design,tracker,fault",
    [
        ("loop", "keyed", "ttl:1"),
        ("loop", "lookup", "ttl:1"),
        ("tool-fails", "keyed", "ttl:2"),
        ("loop+retry_edits_args", "keyed", "strict-params"),
    ],
)
def test_twice_scenarios_equal_a_full_replay_crashed_twice(design, tracker, fault):
    cfg = config(design, tracker, fault)
    for p, (kind, label) in enumerate(points(cfg), 1):
        for rec in run_chunk(cfg, Chunk(0, p, kind, label), 2, collect=True).records[1:]:
            full = play(cfg, (p, rec.second_point), Options(timeline=True))
            assert (
                rec.timeline,
                rec.effects,
                rec.duplicates,
                rec.missing,
                rec.gave_up,
                rec.model_calls,
                rec.status,
            ) == (
                full.timeline,
                full.effects,
                full.duplicates,
                full.missing,
                full.gave_up,
                full.model_calls,
                full.status,
            ), (p, rec.second_point)


@pytest.mark.parametrize(
    "design,tracker,fault",
    [
        ("tool-fails", "keyed", "ttl:1"),
        ("tool-fails", "lookup", "ttl:1"),
        ("loop+retry_edits_args", "keyed", "strict-params"),
    ],
)
def test_kill_gives_the_records_of_panic_at_depth_1(design, tracker, fault):
    # The tracker, its request count and its refusals live in the parent (agentcore.harness.kill).
    panic, killed = (config(design, tracker, fault, crash_model=m) for m in ("panic", "kill"))
    res = [sweep([c], depth=1, collect=True) for c in (panic, killed)]
    assert res[0].records == res[1].records
    assert res[0].rows[0].dups + res[0].rows[0].gave_up > 0  # the fault shows
