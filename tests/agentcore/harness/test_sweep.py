import json
from dataclasses import replace

import pytest

from agentcore import jobs
from agentcore.config import Config, table_configs
from agentcore.durable import designs
from agentcore.harness.chunks import Chunk, points, resume, run_chunk
from agentcore.harness.scenario import Options, play
from agentcore.harness.sweep import sweep
from agentcore.records import CHAPTER_COLUMNS, EXTRA_COLUMNS, ScenarioRecord

TRIAGE = jobs.load("triage")

CHAPTER = {
    "save once per turn": (18, 225, 164, 294, 0, 0, 338),
    "save after the reply": (34, 654, 306, 360, 0, 0, 234),
    "+ idempotency keys": (34, 654, 0, 0, 0, 0, 234),
    "+ attempt markers, no keys": (43, 996, 0, 0, 0, 669, 288),
    "keys and markers": (43, 1014, 0, 0, 0, 0, 288),
    "real loop, keyed tracker": (38, 872, 0, 0, 0, 0, 180),
    "real loop, keyless tracker": (38, 854, 0, 0, 0, 624, 180),
}
HARDER = [
    n
    for n in (
        "tool fails after accept, keyed tracker",
        "tool fails after accept, keyless tracker",
        "approval gate, keyed tracker",
        "approval gate, keyless tracker",
    )
]


@pytest.fixture(scope="module")
def table():
    return sweep(table_configs(TRIAGE), collect=False)


@pytest.mark.parametrize(
    ("design", "tracker", "name"),
    [
        ("loop", "keyless", "real loop, keyless tracker"),  # in the table: the table's name
        ("once-per-turn", "keyed", "save once per turn"),
        ("loop", "lookup", "loop, lookup tracker"),  # not in the table
        ("loop+reuse_run_id", "keyed", "loop+reuse_run_id, keyed tracker"),  # a planted bug is not the table's row
    ],
)
def test_a_configuration_is_named_as_the_table_names_it(design, tracker, name):
    base, *bugs = design.split("+")
    assert Config(jobs.load("triage"), designs.get(base, tuple(bugs)), tracker).label == name


def test_table_has_the_eleven_rows_in_order(table):
    assert [r.name for r in table.rows] == list(CHAPTER) + HARDER


@pytest.mark.parametrize("name", list(CHAPTER))
def test_table_equals_the_chapter(table, name):
    row = next(r for r in table.rows if r.name == name)
    assert row.values(CHAPTER_COLUMNS) == CHAPTER[name]
    outcomes = tuple(c for c in EXTRA_COLUMNS if c != "avoidable")
    assert row.values(outcomes) == (0,) * len(outcomes)  # none in the chapter's world
    # Every triage tool sends a key: a keyed tracker (or, with keys sent, a lookup) settles any ask.
    assert row.avoidable == row.asks


@pytest.mark.parametrize("name", HARDER)
def test_harder_situations_lose_and_double_nothing(table, name):
    row = next(r for r in table.rows if r.name == name)
    assert (row.with_dups, row.dups, row.missing) == (0, 0, 0)
    if "keyed" in name:
        assert row.asks == 0


def test_approval_gate_asks_the_person_once_per_gated_call(table):
    gated = len(TRIAGE.changing_calls())
    for recs in table.records[9:11]:
        assert {r.approvals for r in recs} == {gated}


def test_two_workers_give_the_same_records(table):
    again = sweep(table_configs(TRIAGE), workers=2)
    assert [r.values() for r in again.rows] == [r.values() for r in table.rows]
    assert again.records == table.records


def test_real_checkpoint_files_give_the_same_records_as_memory(table, tmp_path, monkeypatch):
    # The sweep keeps checkpoint files in memory by default; the same save code over real files
    # (in a temp dir) must give every scenario the very same outcome.
    import agentcore.harness.files as scenario  # where a play makes its Files
    from agentcore.durable.checkpoint import OsFiles

    wrote = tmp_path / "a real file was written"

    class Watched(OsFiles):  # pool processes are forked: they see this class too
        __slots__ = ()

        def write(self, path: str, data: bytes) -> None:
            super().write(path, data)
            if not wrote.exists():
                wrote.touch()

    monkeypatch.setattr(scenario, "OsFiles", Watched)
    on_disk = sweep(table_configs(TRIAGE), workers=2, disk="files")
    assert wrote.exists()
    assert on_disk.records == table.records
    assert on_disk.saves == table.saves


def test_an_unknown_disk_is_refused():
    with pytest.raises(ValueError, match="unknown disk 'floppy'"):
        sweep(table_configs(TRIAGE)[:1], disk="floppy")


def test_same_sweep_twice_gives_the_same_records():
    cfg = [Config(TRIAGE, designs.get("markers"), "keyed")]
    a = sweep(cfg, collect=True)
    b = sweep(cfg, collect=True)
    assert a.records == b.records


def test_records_are_json_and_round_trip():
    res = sweep([Config(TRIAGE, designs.get("loop"), "keyless")], depth=1, collect=True)
    rec = res.records[0][10]
    back = ScenarioRecord.from_dict(json.loads(json.dumps(rec.to_dict())))
    assert back == rec
    kinds = [e["kind"] for e in rec.timeline]
    assert "crash" in kinds and "restart" in kinds


def test_timeline_shows_the_ladder_decision():
    res = sweep([Config(TRIAGE, designs.get("loop"), "keyless")], depth=1, collect=True)
    rec = next(r for r in res.records[0] if r.asks)
    assert any(e["kind"] == "ladder" and "ask" in e["text"] for e in rec.timeline)


SMALL = jobs.parse(
    json.dumps(
        {
            "name": "one-issue",
            "tools": {"create_issue": {"op": "create_issue", "sends_key": True}},
            "turns": [{"calls": [{"id": "a", "tool": "create_issue", "args": {"title": "t"}}]}, {"final": "ok"}],
        }
    ),
    "small",
)


def test_small_job_counts_checked_by_hand():
    # Points: start[s] R A T turn[s] R final[s] = 10. Restarts from points 1-6 replay the whole
    # job (10 points), from 7-9 only the final (5), from 10 nothing (done): twice = 60 + 15 = 75.
    # Once: crashes at A, T, turn half-done (4, 5, 6) file the issue again: 3 dups.
    # Twice: after a first crash at 4-6, a second crash at 1-3 or 7-10 of the restart leaves 1 dup
    # (7 scenarios) and at 4-6 leaves 2 (3 scenarios): 13 dups in 10 scenarios, x3 = 39 in 30.
    # After a first crash at 1-3, the restart's 4-6 add one dup: 3 x 3 = 9 in 9.
    row = sweep([Config(SMALL, designs.get("once-per-turn"), "keyed")]).rows[0]
    assert (row.once, row.twice, row.with_dups, row.dups, row.missing, row.asks) == (10, 75, 42, 51, 0, 0)


def test_small_job_once_calls_plus_checked_by_hand():
    # Repeated model calls: crashes at 3-6 ask turn 1 again (4), at 8 and 9 ask the final again (2).
    row = sweep([Config(SMALL, designs.get("once-per-turn"), "keyed")], depth=1).rows[0]
    assert row.calls_plus == 6


LABELS = jobs.parse(
    json.dumps(
        {
            "name": "labels",
            "tools": {
                "create_issue": {"op": "create_issue", "sends_key": True, "lookup": True},
                "label": {"op": "label"},
                "search": {"op": "search", "read_only": True},
                "comment": {"op": "comment", "sends_key": True, "lookup": True},
            },
            "turns": [
                {
                    "calls": [
                        {"id": "c1", "tool": "search", "args": {"query": "flaky"}},
                        {"id": "c2", "tool": "create_issue", "args": {"title": "flaky test"}},
                    ]
                },
                {
                    "calls": [
                        {
                            "id": "c3",
                            "tool": "label",
                            "args": {"issue": {"$result": "c2", "field": "number"}, "label": "ci"},
                        },
                        {
                            "id": "c4",
                            "tool": "comment",
                            "args": {"issue": {"$result": "c2", "field": "number"}, "body": "seen twice"},
                        },
                    ]
                },
                {"calls": [{"id": "c5", "tool": "create_issue", "args": {"title": "follow-up"}}]},
                {"final": "done"},
            ],
        }
    ),
    "labels",
)


@pytest.mark.parametrize(
    "design,tracker",
    [
        ("keys-and-markers", "keyed"),
        ("loop", "keyed"),
        ("loop", "keyless"),
        ("loop", "lookup"),
        ("tool-fails", "lookup"),
    ],
)
def test_another_job_sound_designs_lose_and_double_nothing(design, tracker):
    row = sweep([Config(LABELS, designs.get(design), tracker)]).rows[0]
    assert (row.dups, row.missing) == (0, 0)
    assert row.once > 0 and row.twice > row.once


def test_another_job_lookup_tracker_settles_without_asking():
    row = sweep([Config(LABELS, designs.get("loop"), "lookup")]).rows[0]
    assert row.asks == 0


def test_another_job_save_once_per_turn_doubles_but_never_the_label():
    res = sweep([Config(LABELS, designs.get("once-per-turn"), "keyed")], depth=1, collect=True)
    assert res.rows[0].dups > 0
    for rec in res.records[0]:
        assert sum(1 for e in rec.effects if e["op"] == "label") <= 1


@pytest.mark.parametrize(
    "bug,tracker,design",
    [
        ("tools_before_reply_save", "keyless", "loop"),
        ("marker_after_call", "keyless", "loop"),
        ("skip_failed", "keyed", "tool-fails"),
    ],
)
def test_the_sweep_catches_each_planted_bug(bug, tracker, design):
    sound = sweep([Config(TRIAGE, designs.get(design), tracker)], depth=1).rows[0]
    buggy = sweep([Config(TRIAGE, designs.get(design, (bug,)), tracker)], depth=1).rows[0]
    assert (sound.dups, sound.missing) == (0, 0)
    assert buggy.dups + buggy.missing > 0


def test_daily_runs_with_fresh_run_ids_lose_nothing():
    row = sweep([Config(TRIAGE, designs.get("loop"), "keyed", runs=2)], depth=1).rows[0]
    assert (row.once, row.dups, row.missing) == (76, 0, 0)


def test_a_reused_run_id_shows_the_second_runs_effects_missing():
    res = sweep([Config(TRIAGE, designs.get("loop", ("reuse_run_id",)), "keyed", runs=2)], depth=1)
    assert all(r.missing == len(TRIAGE.changing_calls()) for r in res.records[0])


def test_bad_configuration_is_refused():
    with pytest.raises(ValueError, match="unknown tracker mode"):
        Config(TRIAGE, designs.get("loop"), "sometimes")
    with pytest.raises(ValueError, match="unknown design"):
        designs.get("yolo")
    with pytest.raises(ValueError, match="depth"):
        sweep([Config(TRIAGE, designs.get("loop"), "keyed")], depth=4)


def _waiting(tmp_path, point=10):
    from agentcore.harness.scenario import play

    cfg = Config(TRIAGE, designs.get("markers"), "keyed", person="queue")
    p = play(cfg, (point,), Options(timeline=True), str(tmp_path))
    return cfg, p


def test_queue_person_suspends_a_scenario_with_its_durable_state(tmp_path):
    cfg, p = _waiting(tmp_path)
    assert p.status == "waiting"
    assert p.question["call"]["id"] == "call_1"
    assert "run-1.json" in p.durable["files"]


@pytest.mark.parametrize("answer,dups,missing", [(True, 0, 0), (False, 1, 0)])
def test_resuming_with_an_answer_finishes_and_shows_if_it_was_right(tmp_path, answer, dups, missing):
    from agentcore.harness.chunks import resume

    cfg, p = _waiting(tmp_path)  # crash at point 10: call_1 accepted, its result not saved: it happened
    rec = resume(cfg, p.durable, {p.question["id"]: answer}, (10, "k", "l"), None, str(tmp_path)).record
    assert rec.status == "done"
    assert (rec.duplicates, rec.missing) == (dups, missing)
    assert rec.asks == 1


@pytest.mark.parametrize(
    "design,tracker,runs",
    [
        ("markers", "keyed", 1),
        ("loop", "keyless", 1),
        ("tool-fails", "keyless", 1),
        ("approval-gate", "keyed", 1),
        ("once-per-turn", "keyed", 2),
    ],
)
def test_twice_scenarios_equal_a_full_replay_crashed_twice(design, tracker, runs):
    # The sweep starts each twice scenario from the state noted at the restart's point q; crashing
    # a replay of the whole scenario at p and then q must give the very same outcome. (In memory:
    # real files give the same records, test_real_checkpoint_files_give_the_same_records_as_memory,
    # and cost 36 times as much here.)
    from agentcore.harness.chunks import Chunk, points, run_chunk
    from agentcore.harness.scenario import play

    cfg = Config(TRIAGE, designs.get(design), tracker, runs=runs)
    for p, (kind, label) in enumerate(points(cfg), 1):
        noted = run_chunk(cfg, Chunk(0, p, kind, label), 2).records[1:]
        for rec in noted:
            full = play(cfg, (p, rec.second_point), Options())
            assert (rec.duplicates, rec.missing, rec.asks, rec.approvals, rec.model_calls, rec.status) == (
                full.duplicates,
                full.missing,
                full.asks,
                full.approvals,
                full.model_calls,
                full.status,
            ), (p, rec)
            assert len(full.crashes) == 2


def test_twice_timeline_shows_both_crashes():
    res = sweep([Config(TRIAGE, designs.get("loop"), "keyed")], collect=True)
    rec = next(r for r in res.records[0] if r.second_point == 5)
    assert [e["kind"] for e in rec.timeline].count("crash") == 2
    assert rec.timeline[0]["kind"] == "start"


# --- a queue person answered truthfully is the scripted person --------------------------------


def _queue_sweep_answered_truthfully(cfg, depth):
    """A queue sweep of one configuration, every question answered with its truth, resumed, and the
    chunks of the restart points reached after an answer run, until nothing waits. Its records,
    ordered by (first, second) point, and how many chunks it ran."""
    cfg = replace(cfg, person="queue")
    todo = [Chunk(0, n, kind, label) for n, (kind, label) in enumerate(points(replace(cfg, person="scripted")), 1)]
    records, waiting, chunks = {}, [], 0
    while todo or waiting:
        for chunk in todo:
            chunks += 1
            res = run_chunk(cfg, chunk, depth, collect=True)
            for r in res.records:
                assert (r.first_point, r.second_point) not in records  # no scenario is played twice
                records[r.first_point, r.second_point] = r
            waiting += [(res.records[i], q, d) for i, q, d in res.waiting]
        todo, still = [], []
        for r, q, d in waiting:
            second = (r.second_point, r.second_kind, r.second_label) if r.second_point else None
            res = resume(
                cfg, d, {q["id"]: q["truth"]}, (r.first_point, r.first_kind, r.first_label), second, depth=depth
            )
            records[r.first_point, r.second_point] = res.record
            if res.chunk(0) is not None:
                todo.append(res.chunk(0))
            if res.played.durable is not None:
                still.append((res.record, res.played.question, res.played.durable))
        waiting = still
    return [records[k] for k in sorted(records, key=lambda k: (k[0], k[1] or 0))], chunks


def _comparable(records):
    # A paused scenario's timeline shows its questions and answers besides; all else must be equal.
    return [replace(r, timeline=[e for e in r.timeline if e["kind"] not in ("question", "answer")]) for r in records]


@pytest.mark.parametrize("depth", [1, 2])
@pytest.mark.parametrize("name", list(CHAPTER) + HARDER)
def test_a_queue_sweep_answered_truthfully_is_the_scripted_sweep_record_for_record(name, depth):
    cfg = next(c for c in table_configs(TRIAGE) if c.label == name)
    scripted = sweep([cfg], depth=depth, collect=True).records[0]
    queued, _ = _queue_sweep_answered_truthfully(cfg, depth)
    assert _comparable(queued) == _comparable(scripted)


def test_a_resumed_scenario_passes_the_points_of_the_scripted_restart():
    # Crash at point 10 of the markers design: the restart asks about call_1. Answered, the paused
    # process goes on as if the answer had come at once: no second start save, the same points.
    cfg = Config(TRIAGE, designs.get("markers"), "keyed")
    scripted = play(cfg, (10,), Options(points=True))
    queue = replace(cfg, person="queue")
    paused = play(queue, (10,), Options(points=True))
    assert paused.status == "waiting" and paused.durable["process"] == 1
    done = resume(
        queue, paused.durable, {paused.question["id"]: paused.question["truth"]}, (10, "k", "l"), None, depth=2
    )
    assert done.record.status == "done"
    assert done.played.processes[0].points == scripted.processes[1].points


def test_a_resumed_scenario_s_timeline_shows_the_question_and_its_answer_where_it_was_asked():
    cfg = Config(TRIAGE, designs.get("markers"), "keyed", person="queue")
    paused = play(cfg, (10,), Options(timeline=True))
    done = resume(cfg, paused.durable, {paused.question["id"]: True}, (10, "k", "l"), None)
    kinds = [e["kind"] for e in done.record.timeline]
    assert paused.timeline[-1]["kind"] == "question"
    assert kinds[: len(paused.timeline)] == [e["kind"] for e in paused.timeline]
    assert kinds[len(paused.timeline)] == "answer" and kinds.count("question") == 1
    assert kinds.count("start") == 2  # the first process and the restart: the answer starts no process


def test_a_resume_hands_on_the_restart_points_it_reached_as_a_chunk_of_twice_scenarios():
    cfg = replace(next(c for c in table_configs(TRIAGE) if c.label == "real loop, keyless tracker"), person="queue")
    p, (kind, label) = next(
        (n, pt)
        for n, pt in enumerate(points(replace(cfg, person="scripted")), 1)
        if (res := run_chunk(cfg, Chunk(0, n, *pt), 2)).waiting and res.waiting[0][0] == 0 and len(res.records) > 1
    )
    first = run_chunk(cfg, Chunk(0, p, kind, label), 2)
    _, question, durable = first.waiting[0]
    swept = len(first.records) - 1  # the twice scenarios of the points reached before the question
    res = resume(cfg, durable, {question["id"]: question["truth"]}, (p, kind, label), None, depth=2)
    chunk = res.chunk(0)
    assert chunk is not None and (chunk.second_from, chunk.first) == (swept + 1, p)
    later = run_chunk(cfg, chunk, 2)
    assert [r.second_point for r in later.records] == list(range(swept + 1, chunk.second_to + 1))


def test_replaying_a_twice_scenario_past_an_answer_gives_the_sweep_s_record():
    from agentcore.harness.chunks import replay

    cfg = replace(next(c for c in table_configs(TRIAGE) if c.label == "real loop, keyless tracker"), person="queue")
    paused = play(cfg, (10,), Options(points=True, notes=True))
    assert paused.status == "waiting" and paused.durable["process"] == 1
    first = (10, "k", "l")
    chunk = resume(cfg, paused.durable, {paused.question["id"]: paused.question["truth"]}, first, None, depth=2).chunk(
        0
    )
    assert chunk is not None
    for rec in run_chunk(cfg, chunk, 2, collect=True).records:
        again = replay(cfg, 10, rec.second_point, {}, chunk.answers)
        assert (again.timeline, again.effects, again.status) == (rec.timeline, rec.effects, rec.status)


def test_a_resume_at_depth_one_hands_on_no_chunk():
    cfg = Config(TRIAGE, designs.get("markers"), "keyed", person="queue")
    paused = play(cfg, (10,))
    assert resume(cfg, paused.durable, {paused.question["id"]: True}, (10, "k", "l"), None).chunk(0) is None
