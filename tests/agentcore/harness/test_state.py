"""The durable state (agentcore.harness.state.Durable), the world (World), play's options (scenario.Options)."""

import copy
import json
from collections.abc import Callable
from dataclasses import replace

import pytest

from agentcore import jobs, limits
from agentcore.config import Config
from agentcore.durable import designs
from agentcore.durable.checkpoint import CheckpointError
from agentcore.harness.scenario import Options, play
from agentcore.harness.state import Durable, World

TRIAGE = jobs.load("triage")
MARKERS = Config(TRIAGE, designs.get("markers"), "keyed", person="queue")


@pytest.fixture(scope="module")
def paused() -> dict:
    """A stored durable state: the markers design crashed at point 10 asks about call_1."""
    p = play(MARKERS, (10,), Options(timeline=True, notes=True))
    assert p.status == "waiting" and p.durable is not None
    return p.durable


# --- Durable: the stored shape ------------------------------------------------------------------


def test_a_stored_state_round_trips_key_for_key_and_in_order(paused):
    text = json.dumps(paused)
    again = Durable.from_dict(json.loads(text), "question 1").to_dict()
    assert json.dumps(again) == text
    assert list(paused) == [
        "tracker",
        "attempts",
        "model_calls",
        "answers",
        "asks",
        "prompts",
        "decisions",
        "files",
        "seq",
        "process",
        "plan",
        "timeline",
        "swept",
    ]


def test_a_noted_restart_state_carries_its_crash_and_no_swept():
    note = play(MARKERS, (10,), Options(points=True, notes=True)).restarts[0]
    d = note.to_dict()
    assert d["crash"].startswith("crash at point 1 of this process: ") and "swept" not in d
    assert list(d)[-1] == "crash"


def test_a_state_stored_before_process_was_stored_starts_as_process_0(paused):
    old = {k: v for k, v in paused.items() if k != "process"}
    assert Durable.from_dict(old, "q").process == 0


def _first_file(d: dict) -> str:
    return next(iter(d["files"]))


@pytest.mark.parametrize("data", [None, ["a", "list"], "text", 3])
def test_a_state_that_is_not_an_object_raises_checkpoint_error_naming_its_source(data):
    with pytest.raises(CheckpointError, match=r"^question 7: stored durable state is not an object$"):
        Durable.from_dict(data, "question 7")


CORRUPTIONS: list[tuple[str, Callable[[dict], object], str]] = [
    (
        "broken-json",
        lambda d: d["files"].update({_first_file(d): '{"run_id": "run-1", "turns": [tru'}),
        "corrupt or truncated checkpoint",
    ),
    ("empty-file", lambda d: d["files"].update({_first_file(d): ""}), "corrupt or truncated checkpoint"),
    ("not-a-checkpoint", lambda d: d["files"].update({_first_file(d): "[1, 2]"}), "not a checkpoint"),
    ("deeply-nested", lambda d: d["files"].update({_first_file(d): "[" * 100_000 + "]" * 100_000}), "checkpoint"),
    ("lone-surrogate", lambda d: d["files"].update({_first_file(d): '{"x": "\ud800"}'}), "checkpoint"),
    ("not-text", lambda d: d["files"].update({_first_file(d): 42}), "not text"),
    ("files-missing", lambda d: d.pop("files"), "files is missing or of the wrong type"),
    ("seq-a-string", lambda d: d.update(seq="1"), "seq is missing or of the wrong type"),
    ("plan-missing", lambda d: d.pop("plan"), "plan is missing or of the wrong type"),
    ("timeline-an-object", lambda d: d.update(timeline={}), "timeline is missing or of the wrong type"),
    ("process-a-string", lambda d: d.update(process="1"), "process is of the wrong type"),
    ("swept-a-list", lambda d: d.update(swept=[]), "swept is of the wrong type"),
    ("tracker-mode", lambda d: d["tracker"].update(mode="?"), "tracker records are corrupt"),
    ("tracker-effects", lambda d: d["tracker"].update(effects=1), "tracker records are corrupt"),
]


@pytest.mark.parametrize("how,phrase", [c[1:] for c in CORRUPTIONS], ids=[c[0] for c in CORRUPTIONS])
def test_each_corrupt_state_raises_checkpoint_error_naming_its_source(paused, how, phrase):
    data = copy.deepcopy(paused)
    how(data)
    with pytest.raises(CheckpointError) as e:
        Durable.from_dict(data, "question 7 (scenario 3)")
    assert str(e.value).startswith("question 7 (scenario 3): ") and phrase in str(e.value)


def test_resume_checks_a_stored_state_first(paused):
    from agentcore.harness.chunks import resume

    data = copy.deepcopy(paused)
    data["tracker"]["mode"] = "?"
    with pytest.raises(CheckpointError, match="tracker records are corrupt"):
        resume(MARKERS, data, {}, (10, "k", "l"), None)


# --- World: fresh, snapshot, restore ------------------------------------------------------------


def test_a_world_restored_from_its_snapshot_snapshots_the_same(paused):
    state = Durable.from_dict(paused, "q")
    world = World.restore(MARKERS, state, log=[])
    again = world.snapshot(state.files, state.process, state.plan)
    assert replace(again, swept=state.swept).to_dict() == paused
    # what the restored world holds is its own: changing it leaves the state alone
    world.tracker.effects.append({"origin": [9, "x"]})
    world.person.decisions["r"] = True
    assert world.snapshot({}, 0, []).to_dict() != again.to_dict() and state.to_dict() == paused


def test_a_fresh_world_snapshots_as_nothing_happened():
    w = World.fresh(Config(TRIAGE, designs.get("loop"), "keyless"))
    d = w.snapshot({}, 0, [3]).to_dict()
    assert d["tracker"]["effects"] == [] and d["attempts"] == [] and d["model_calls"] == 0
    assert (d["seq"], d["asks"], d["prompts"], d["plan"], d["timeline"]) == (0, 0, 0, [3], [])


def test_a_restored_world_continues_the_timeline_after_its_crash():
    cfg = replace(MARKERS, person="scripted")
    note = play(cfg, (10,), Options(points=True, timeline=True, notes=True)).restarts[2]
    w = World.restore(cfg, note, log=[("x", "y")])
    assert [e["kind"] for e in w.events()[-3:]] == ["crash", "restart", "x"]
    assert World.restore(cfg, note).events() == []  # no log: no timeline kept


def test_playing_from_a_restored_state_equals_playing_on():
    # A twice scenario started from a noted state gives what crashing a full replay gives.
    cfg = Config(TRIAGE, designs.get("keys-and-markers"), "keyed")
    once = play(cfg, (5,), Options(points=True, notes=True))
    for q, note in enumerate(once.restarts, 1):
        a, b = play(cfg, (), start=note), play(cfg, (5, q))
        assert (a.duplicates, a.missing, a.asks, a.model_calls) == (b.duplicates, b.missing, b.asks, b.model_calls)


# --- Options ------------------------------------------------------------------------------------


def test_options_keep_only_what_is_asked_for():
    cfg = Config(TRIAGE, designs.get("loop"), "keyed")
    bare = play(cfg, (3,))
    assert bare.processes[0].points is None and bare.timeline is None and bare.restarts is None
    full = play(cfg, (3,), Options(points=True, timeline=True, notes=True))
    assert full.processes[0].points and full.timeline and full.effects is not None
    assert len(full.restarts) == len(full.processes[1].points)
    assert (bare.duplicates, bare.model_calls, bare.saves) == (full.duplicates, full.model_calls, full.saves)


def test_options_are_immutable():
    with pytest.raises(AttributeError):
        Options().points = True  # type: ignore[misc]


# --- limits -------------------------------------------------------------------------------------


def test_the_limits_are_the_ones_enforced():
    assert limits.SWEEP_DEPTHS == (1, 2, 3) and limits.DEFAULT_SWEEP_DEPTH == 2
    assert (limits.MIN_RUNS, limits.MAX_RUNS) == (1, 100)
    assert jobs.MAX_BYTES == limits.MAX_JOB_BYTES and limits.MAX_NESTING == 20
    Config(TRIAGE, designs.get("loop"), "keyed", runs=limits.MAX_RUNS)
    with pytest.raises(ValueError, match="runs must be between 1 and 100"):
        Config(TRIAGE, designs.get("loop"), "keyed", runs=limits.MAX_RUNS + 1)


def test_a_stored_state_may_hold_torn_files_no_restart_reads(paused):
    # A power cut tears temp files and, without fsync, finished job runs' checkpoints: only the
    # checkpoint the restart loads must parse.
    d = copy.deepcopy(paused)
    d["files"]["run-1.json.tmp"] = '{"run_id": "ru'
    d["files"]["run-0.json"] = ""
    assert Durable.from_dict(d, "q").files == d["files"]
    d["files"]["run-1.json"] = '{"run_id": "ru'
    with pytest.raises(CheckpointError, match="q: checkpoint run-1.json: corrupt or truncated"):
        Durable.from_dict(d, "q")
