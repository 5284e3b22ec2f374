"""A model that changes its mind: fresh provider call IDs and a fickle model when
asked again, the job file refusing the separator, the designs that save the reply immune, saving once
per turn worse, and the planted bug `reask_open_turn` caught where it should be."""

import pytest

from agentcore.config import Config, table_configs
from agentcore.crash import CrashPlan
from agentcore.durable import designs
from agentcore.durable.checkpoint import CheckpointError
from agentcore.harness.chunks import Chunk, points, run_chunk
from agentcore.harness.scenario import Options, play
from agentcore.harness.state import Durable, World
from agentcore.harness.sweep import sweep
from agentcore.jobs import JobError, Tool, load, parse
from agentcore.standins.model import CHANGED, ScriptedModel, job_call_id
from agentcore.standins.tools import ToolServer
from agentcore.standins.tracker import Tracker

TRIAGE = load("triage")
REPLY_SAVERS = (
    "save after the reply",
    "+ idempotency keys",
    "+ attempt markers, no keys",
    "keys and markers",
    "real loop, keyed tracker",
    "real loop, keyless tracker",
    "tool fails after accept, keyed tracker",
    "tool fails after accept, keyless tracker",
    "approval gate, keyed tracker",
    "approval gate, keyless tracker",
)
BUG = ("reask_open_turn",)
CREATE = Tool("create_issue", "create_issue", sends_key=True)


def _rows(model, seed=0, extra=()):
    configs = table_configs(TRIAGE, model=model, seed=seed) + [
        Config(TRIAGE, designs.get(d, b), "keyed", model=model, seed=seed) for d, b in extra
    ]
    return {r.name: r.values() for r in sweep(configs).rows}


@pytest.fixture(scope="module")
def fixed():
    return _rows("fixed", extra=[("once-per-turn-keys", ())])


@pytest.fixture(scope="module")
def fresh():
    return _rows("fresh-ids", extra=[("once-per-turn-keys", ())])


def _ids(reply):
    return [c["id"] for c in reply]


def _without_ids(reply):
    return [(c["tool"], c["args"]) for c in reply]


def _happened(origin):
    return {"number": 1}  # the tracker holds an effect of every call


# --- the model ------------------------------------------------------------------------------------


def test_a_fixed_model_gives_the_same_reply_when_asked_again_and_counts_calls():
    m = ScriptedModel(TRIAGE)
    assert m.reply(0, 0, {}) == m.reply(0, 0, {})
    assert m.reply(0, 1, {"call_1": {"number": 5}})[1]["args"]["issue"] == 5
    assert isinstance(m.reply(0, 2, {}), str)
    assert m.calls == 4


def test_fresh_ids_gives_the_job_s_ids_first_then_the_same_calls_under_new_ids():
    m = ScriptedModel(TRIAGE, "fresh-ids")
    first, second, third = (m.reply(0, 0, {}) for _ in range(3))
    assert _ids(first) == ["call_1", "call_2"]
    assert _ids(second) == ["call_1~2", "call_2~2"] and _ids(third) == ["call_1~3", "call_2~3"]
    assert _without_ids(first) == _without_ids(second) == _without_ids(third)
    assert _ids(m.reply(1, 0, {})) == ["call_1", "call_2"]  # another job run's turn: a first ask


def test_a_model_reads_results_given_under_its_fresh_ids():
    m = ScriptedModel(TRIAGE, "fresh-ids")
    assert m.reply(0, 1, {"call_1~2": {"number": 5}, "call_2~2": {"number": 6}})[1]["args"]["issue"] == 5


def test_a_provider_id_maps_back_to_the_job_call():
    assert [job_call_id(c) for c in ("call_1", "call_1~2", "call_1~2b")] == ["call_1"] * 3


def test_the_fickle_model_is_seeded_and_deterministic():
    def replies(seed):
        m = ScriptedModel(TRIAGE, "fickle", seed, _happened)
        return [m.reply(r, t, {}) for r in range(2) for t in range(2) for _ in range(3)]

    assert replies(1) == replies(1)
    assert len({repr(replies(s)) for s in range(5)}) > 1


def test_the_fickle_model_drops_doubles_and_changes_calls_under_new_ids():
    seen = set()
    for seed in range(20):
        m = ScriptedModel(TRIAGE, "fickle", seed, _happened)
        m.reply(0, 0, {})
        again = m.reply(0, 0, {})
        assert all(c["id"].endswith(("~2", "~2b")) for c in again)
        ids = _ids(again)
        seen |= {"drop" for c in ("call_1", "call_2") if f"{c}~2" not in ids}
        seen |= {"twice" for i in ids if i.endswith("b")}
        seen |= {"change" for c in again if c["args"]["title"].endswith(CHANGED)}
        seen |= {"keep" for c in again if c["args"]["title"] in {c0.args["title"] for c0 in TRIAGE.turns[0]}}
    assert seen == {"drop", "twice", "change", "keep"}


def test_the_fickle_model_keeps_the_calls_of_a_turn_nothing_of_which_took_effect():
    m = ScriptedModel(TRIAGE, "fickle", 1, lambda origin: None)
    fresh = ScriptedModel(TRIAGE, "fresh-ids")
    for _ in range(4):
        assert m.reply(0, 0, {}) == fresh.reply(0, 0, {})


def test_a_job_file_may_not_use_the_separator_in_a_call_id():
    text = (
        '{"name": "j", "tools": {"c": {"op": "comment"}}, "turns": [{"calls": [{"id": "call~1", "tool": "c", '
        '"args": {}}]}, {"final": "done"}]}'
    )
    with pytest.raises(JobError, match=r"turns\[0\]\.calls\[0\]\.id: .*'~'"):
        parse(text, "j.json")


# --- the world ------------------------------------------------------------------------------------


def test_an_effect_under_a_fresh_id_counts_against_its_job_call():
    tracker = Tracker("keyed")
    server = ToolServer(tracker, TRIAGE)
    server.call(CREATE, {"title": "x"}, "run-1:call_1", (0, "call_1"), CrashPlan(), "")
    server.call(CREATE, {"title": "x"}, "run-1:call_1~2", (0, "call_1~2"), CrashPlan(), "")
    assert tracker.tally([(0, "call_1"), (0, "call_2")]) == (1, 1)
    assert tracker.find((0, "call_2~3")) is None and tracker.find((0, "call_1~3")) == {"number": 1}


def test_the_model_s_asks_outlive_a_crash_through_the_durable_state():
    cfg = Config(TRIAGE, designs.get("loop"), "keyed", model="fresh-ids")
    w = World.fresh(cfg)
    w.model.reply(0, 0, {})
    state = Durable.from_dict(w.snapshot({}, 1, []).to_dict(), "state")
    assert _ids(World.restore(cfg, state).model.reply(0, 0, {})) == ["call_1~2", "call_2~2"]


def test_a_fixed_model_s_state_keeps_the_stored_shape():
    w = World.fresh(Config(TRIAGE, designs.get("loop"), "keyed"))
    w.model.reply(0, 0, {})
    assert "model_asks" not in w.snapshot({}, 1, []).to_dict()


def test_a_corrupt_count_of_the_model_s_asks_is_refused():
    w = World.fresh(Config(TRIAGE, designs.get("loop"), "keyed", model="fickle"))
    stored = w.snapshot({}, 1, []).to_dict() | {"model_asks": [[0, 0, "two"]]}
    with pytest.raises(CheckpointError, match="model's asks"):
        Durable.from_dict(stored, "state")


# --- the sweep ------------------------------------------------------------------------------------


def test_fresh_ids_leave_the_designs_that_save_the_reply_as_in_the_chapter(fixed, fresh):
    # Only a reply lost before its save is asked for again: none of its calls ran yet, so new IDs
    # change nothing, not even the count of model calls.
    assert {n: fresh[n] for n in REPLY_SAVERS} == {n: fixed[n] for n in REPLY_SAVERS}


def test_fresh_ids_defeat_the_keys_of_a_design_that_saves_once_per_turn(fixed, fresh):
    # Saving once per turn asks again for a turn whose calls ran: with the same IDs its keys stop
    # every repeat, with fresh ones it doubles as much as without keys.
    keys = "once-per-turn-keys, keyed tracker"
    assert fixed[keys][2:4] == (0, 0)
    assert fresh[keys][2:4] == fixed["save once per turn"][2:4] > (0, 0)
    assert fresh["save once per turn"] == fixed["save once per turn"]  # no keys: already every repeat doubled


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_fickle_model_leaves_the_designs_that_save_the_reply_as_in_the_chapter(fixed, seed):
    rows = _rows("fickle", seed)
    assert {n: rows[n] for n in REPLY_SAVERS} == {n: fixed[n] for n in REPLY_SAVERS}


@pytest.mark.parametrize("seed,worse", [(2, "dups"), (3, "missing")])
def test_a_fickle_model_makes_saving_once_per_turn_fare_worse(fixed, seed, worse):
    # Asked again about a turn part of which ran, it gives calls twice (more duplicates) or drops
    # one that had not run (missing); it may also drop one that had (one duplicate fewer).
    row = sweep([Config(TRIAGE, designs.get("once-per-turn"), "keyed", model="fickle", seed=seed)]).rows[0]
    column = {"dups": 3, "missing": 4}[worse]
    assert row.values()[column] > fixed["save once per turn"][column]


def _bug_row(model, tracker="keyed", seed=0, bugs=BUG, **conditions):
    return sweep([Config(TRIAGE, designs.get("loop", bugs), tracker, model=model, seed=seed, **conditions)]).rows[0]


@pytest.mark.parametrize("tracker", ["keyed", "keyless"])
def test_reask_open_turn_costs_only_model_calls_under_a_fixed_model(fixed, tracker):
    row = _bug_row("fixed", tracker)
    assert (row.dups, row.missing) == (0, 0)
    assert row.calls_plus > fixed["real loop, keyed tracker"][6]


def test_reask_open_turn_is_not_caught_by_a_tracker_that_can_crash():
    row = _bug_row("fixed", tracker_fault="crash")
    assert (row.dups, row.missing) == (0, 0)


@pytest.mark.parametrize("model,seed", [("fresh-ids", 0), ("fickle", 0), ("fickle", 1)])
def test_reask_open_turn_doubles_effects_on_a_keyed_tracker_when_the_model_changes_its_mind(model, seed):
    assert _bug_row(model, seed=seed).dups > 0
    correct = _bug_row(model, seed=seed, bugs=())
    assert (correct.dups, correct.missing) == (0, 0)


def test_reask_open_turn_doubles_effects_already_when_crashed_once():
    assert sweep([Config(TRIAGE, designs.get("loop", BUG), "keyed", model="fresh-ids")], depth=1).rows[0].dups > 0


@pytest.mark.parametrize(
    "design,model,seed,runs",
    [
        ("loop+reask_open_turn", "fresh-ids", 0, 1),
        ("loop+reask_open_turn", "fickle", 1, 1),
        ("once-per-turn-keys", "fickle", 2, 2),
    ],
)
def test_twice_scenarios_equal_a_full_replay_crashed_twice(design, model, seed, runs):
    # As tests/agentcore/harness/test_sweep.py: the restart noted at each point carries the model's asks.
    base, *bugs = design.split("+")
    cfg = Config(TRIAGE, designs.get(base, tuple(bugs)), "keyed", runs=runs, model=model, seed=seed)
    for p, (kind, label) in enumerate(points(cfg), 1):
        for rec in run_chunk(cfg, Chunk(0, p, kind, label), 2).records[1:]:
            full = play(cfg, (p, rec.second_point), Options())
            assert (rec.duplicates, rec.missing, rec.model_calls, rec.status) == (
                full.duplicates,
                full.missing,
                full.model_calls,
                full.status,
            ), (p, rec)


@pytest.mark.parametrize("model", ["fresh-ids", "fickle"])
def test_kill_gives_the_records_of_panic_at_depth_1(model):
    panic, killed = (
        Config(TRIAGE, designs.get("loop", BUG), "keyed", model=model, seed=1, crash_model=m) for m in ("panic", "kill")
    )
    assert sweep([killed], depth=1, collect=True).records == sweep([panic], depth=1, collect=True).records


def test_a_fickle_sweep_gives_the_same_records_with_any_number_of_workers():
    cfg = Config(TRIAGE, designs.get("once-per-turn"), "keyed", model="fickle", seed=3)
    assert sweep([cfg], workers=2).records == sweep([cfg]).records
