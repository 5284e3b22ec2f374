"""A fresh process identity at every start: each process proposes its own run ID
and names its number in the timeline; only a run ID read from the checkpoint continues a run."""

import csv

import pytest

from agentcore import jobs
from agentcore.cli import main
from agentcore.config import Config
from agentcore.durable import designs
from agentcore.harness.chunks import Chunk, points, run_chunk
from agentcore.harness.scenario import Options, play, proposed_run_id
from agentcore.harness.sweep import sweep

TRIAGE = jobs.load("triage")
KEYED_DESIGNS = ("keys", "keys-and-markers", "loop", "tool-fails", "approval-gate")


def starts(timeline):
    return [e["text"] for e in timeline if e["kind"] == "start"]


def test_each_process_proposes_its_own_run_id_the_first_as_ever():
    cfg = Config(TRIAGE, designs.get("loop"), "keyed")
    assert [proposed_run_id(cfg, 0, n) for n in (1, 2, 3)] == ["run-1", "run-1.p2", "run-1.p3"]
    assert proposed_run_id(cfg, 1, 1) == "run-2" and proposed_run_id(cfg, 1, 2) == "run-2.p2"
    reused = Config(TRIAGE, designs.get("loop", ("reuse_run_id",)), "keyed")
    assert {proposed_run_id(reused, s, n) for s in (0, 1) for n in (1, 2)} == {"run-1"}


def test_a_restart_continues_the_checkpoint_s_run_and_names_its_process():
    cfg = Config(TRIAGE, designs.get("loop"), "keyed")
    p = play(cfg, (11, 5), Options(timeline=True))  # call_1 accepted, its result unsaved
    assert starts(p.timeline) == [
        "fresh run run-1 (process 1)",
        "resumed run run-1 at turn 1 (process 2)",
        "resumed run run-1 at turn 1 (process 3)",
    ]
    assert (p.duplicates, p.missing) == (0, 0)


def test_a_job_run_started_after_a_restart_takes_the_restart_s_proposal():
    cfg = Config(TRIAGE, designs.get("loop"), "keyed", runs=2)
    p = play(cfg, (3,), Options(timeline=True))
    assert starts(p.timeline)[-1] == "fresh run run-2.p2 (process 2)"
    assert (p.duplicates, p.missing) == (0, 0)


def test_a_loop_that_takes_the_proposed_run_id_sends_new_keys_after_a_restart():
    cfg = Config(TRIAGE, designs.get("loop", ("proposed_run_id",)), "keyed")
    p = play(cfg, (11,), Options(timeline=True))  # call_1 accepted, its result unsaved
    assert starts(p.timeline) == ["fresh run run-1 (process 1)", "resumed run run-1.p2 at turn 1 (process 2)"]
    assert p.duplicates == 1  # call_1 made again under a key the tracker never saw


@pytest.mark.parametrize("design", KEYED_DESIGNS)
def test_the_sweep_catches_the_proposed_run_id_bug_on_a_keyed_tracker(design):
    sound = sweep([Config(TRIAGE, designs.get(design), "keyed")], depth=1).rows[0]
    buggy = sweep([Config(TRIAGE, designs.get(design, ("proposed_run_id",)), "keyed")], depth=1).rows[0]
    assert (sound.with_dups, sound.dups, sound.missing) == (0, 0, 0)
    assert buggy.with_dups > 0 and buggy.dups > 0
    assert buggy.once == sound.once  # the uninterrupted run is the same: only a restart shows it


def test_a_lookup_tracker_catches_it_too():
    # the lookup asks after the new key, hears "did not happen", and the call is made again
    sound = sweep([Config(TRIAGE, designs.get("loop"), "lookup")], depth=1).rows[0]
    buggy = sweep([Config(TRIAGE, designs.get("loop", ("proposed_run_id",)), "lookup")], depth=1).rows[0]
    assert (sound.with_dups, sound.dups) == (0, 0) and buggy.with_dups > 0


@pytest.mark.parametrize(
    "design,tracker", [("once-per-turn", "keyed"), ("after-reply", "keyed"), ("markers", "keyed"), ("loop", "keyless")]
)
def test_without_keys_or_a_tracker_that_honours_them_the_rows_are_the_correct_loop_s(design, tracker):
    sound = sweep([Config(TRIAGE, designs.get(design), tracker)], depth=1).rows[0]
    buggy = sweep([Config(TRIAGE, designs.get(design, ("proposed_run_id",)), tracker)], depth=1).rows[0]
    assert buggy.values() == sound.values()


def test_the_command_line_plants_the_bug(capsys):
    assert main(["sweep", "--design", "loop", "--tracker", "keyed", "--bug", "proposed_run_id", "--format", "csv"]) == 0
    row = next(csv.reader(capsys.readouterr().out.splitlines()[1:]))
    assert row[0] == "loop+proposed_run_id, keyed tracker"
    assert int(row[3]) > 0  # with dups (the CSV: name, once, twice, with_dups, ...)
    assert main(["sweep", "--design", "loop", "--tracker", "keyed", "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines()[1].endswith(",38,872,0,0,0,0,0,0,0,0,180")


@pytest.mark.parametrize("design,runs", [("loop", 1), ("loop+proposed_run_id", 1), ("approval-gate", 1), ("keys", 2)])
def test_a_twice_scenario_from_a_noted_state_numbers_its_process_as_a_full_replay(design, runs):
    # The noted state carries the number of the process it is for: the proposal, and so the keys,
    # the timeline and the effects, are those of a replay crashed at p and then q.
    base, *bugs = design.split("+")
    cfg = Config(TRIAGE, designs.get(base, tuple(bugs)), "keyed", runs=runs)
    for p, (kind, label) in list(enumerate(points(cfg), 1))[::3]:
        for rec in run_chunk(cfg, Chunk(0, p, kind, label), 2, collect=True).records[1:]:
            full = play(cfg, (p, rec.second_point), Options(timeline=True))
            assert (rec.timeline, rec.effects, rec.duplicates) == (full.timeline, full.effects, full.duplicates)
