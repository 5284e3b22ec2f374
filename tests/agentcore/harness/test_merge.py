"""agentcore.harness.merge: merging equal states gives the unmerged sweep's records, field by field, with
fewer plays; depth 3 and the bug only it can see."""

import pytest

from agentcore import jobs
from agentcore.config import Config, table_configs
from agentcore.durable import designs
from agentcore.harness import merge
from agentcore.harness.chunks import Chunk, merged, run_chunk
from agentcore.harness.pool import BY_CONFIGURATION
from agentcore.harness.scenario import Options, play
from agentcore.harness.sweep import plan_chunks, run_chunks, sweep
from agentcore.records import COLUMNS, table_row

TRIAGE = jobs.load("triage")


def both(configs, depth=2):
    merged = sweep(configs, depth=depth)
    unmerged = sweep(configs, depth=depth, merge=False)
    return merged, unmerged


def assert_same(merged, unmerged):
    assert merged.scenarios == unmerged.scenarios
    for a, b in zip(merged.records, unmerged.records, strict=True):
        assert a == b
    assert merged.rows == unmerged.rows
    assert merged.saves == unmerged.saves


def test_the_triage_table_is_the_same_merged_with_fewer_plays():
    merged, unmerged = both(table_configs(TRIAGE))
    assert_same(merged, unmerged)
    assert unmerged.explored == unmerged.scenarios == 9663
    assert merged.explored < unmerged.scenarios / 5


def test_a_generated_job_is_the_same_merged():
    assert_same(
        *both(
            [
                Config(jobs.turn_pairs(3), designs.get(d), t)
                for d, t in (("loop", "keyed"), ("keys", "keyed"), ("markers", "keyless"), ("once-per-turn", "lookup"))
            ]
        )
    )


@pytest.mark.parametrize(
    "conditions",
    [
        {"crash_model": "power-cut", "fsync": False},
        {"tool_faults": "k:3"},
        {"tool_faults": "always"},
        {"person_faults": "wrong:0.3"},
        {"person_faults": "deny:0.5", "seed": 2},
        {"model": "fickle", "seed": 1},
        {"model": "fresh-ids"},
        {"tracker_fault": "ttl:3"},
        {"tracker_fault": "strict-params"},
    ],
    ids=str,
)
def test_every_world_is_the_same_merged(conditions):
    # Without fsync a power cut tears writes into many more states (the five designs took 110 s
    # unmerged): there one design that doubles and loses keeps the case near 8 s.
    names = (
        ("keys",) if conditions.get("fsync") is False else ("loop", "keys", "markers", "tool-fails", "approval-gate")
    )
    configs = [c for c in table_configs(TRIAGE, **conditions) if c.design.name in names]
    assert_same(*both(configs))


def test_two_job_runs_in_sequence_are_the_same_merged():
    assert_same(*both([Config(TRIAGE, designs.get("loop"), t, runs=2) for t in ("keyed", "keyless")]))


def test_a_tracker_that_can_crash_is_never_merged():
    cfg = Config(TRIAGE, designs.get("loop"), "keyed", tracker_fault="crash")
    assert not merge.mergeable(cfg, collect=False)
    merged, unmerged = both([cfg])
    assert_same(merged, unmerged)
    assert merged.explored == merged.scenarios


@pytest.mark.parametrize(
    "cfg",
    [
        Config(TRIAGE, designs.get("loop"), "keyed", person="queue"),
        Config(TRIAGE, designs.get("loop"), "keyed", crash_model="kill"),
    ],
    ids=["queue person", "kill"],
)
def test_a_queue_person_or_real_processes_are_never_merged(cfg):
    assert not merge.mergeable(cfg, collect=False)


def test_timelines_are_never_merged():
    assert not merge.mergeable(Config(TRIAGE, designs.get("loop"), "keyed"), collect=True)


def test_depth_3_is_the_same_merged_on_a_small_job():
    configs = [
        Config(jobs.turn_pairs(1), designs.get(d), t)
        for d, t in (("loop", "keyed"), ("keys", "keyed"), ("markers", "keyless"))
    ]
    merged, unmerged = both(configs, depth=3)
    assert_same(merged, unmerged)
    assert merged.rows[0].thrice > 0 and merged.explored < merged.scenarios / 10


def test_a_thrice_scenario_crashes_the_second_restart_as_a_full_replay_does():
    cfg = Config(TRIAGE, designs.get("keys"), "keyed")
    chunk = plan_chunks([cfg])[4]
    records = run_chunk(cfg, chunk, 3, merge=False).records
    thrice = [r for r in records if r.third_point is not None]
    assert thrice
    for r in thrice[::7]:
        full = play(cfg, (r.first_point, r.second_point, r.third_point), Options())
        assert (full.duplicates, full.missing, full.model_calls, full.status) == (
            r.duplicates,
            r.missing,
            r.model_calls,
            r.status,
        )


def test_the_bug_that_needs_three_crashes_shows_only_at_depth_3():
    bug = Config(TRIAGE, designs.get("loop", ("skip_third_restart",)), "keyed")
    at2 = sweep([bug], depth=2).rows[0]
    at3 = sweep([bug], depth=3).rows[0]
    assert at2.missing == at2.dups == at2.wrong == 0
    assert at3.missing > 0


def test_the_correct_loop_stays_clean_at_depth_3():
    row = sweep([Config(TRIAGE, designs.get("loop"), "keyed")], depth=3).rows[0]
    assert row.thrice > 0 and (row.dups, row.missing, row.wrong) == (0, 0, 0)


def test_a_memo_belongs_to_one_configuration_object():
    a = Config(TRIAGE, designs.get("loop"), "keyed")
    b = Config(TRIAGE, designs.get("loop"), "keyless")
    assert merge.memo(a) is merge.memo(a)
    assert merge.memo(a) is not merge.memo(b)


def test_the_key_leaves_out_counters_that_only_add_up():
    cfg = Config(TRIAGE, designs.get("loop"), "keyed")
    state = merge.Memo(cfg).first(3)[0]
    more = type(state)(**{**{f: getattr(state, f) for f in state.__slots__}, "model_calls": 99, "asks": 5})
    assert merge.key(cfg, state, 1) == merge.key(cfg, more, 1)
    assert merge.key(cfg, state, 1) != merge.key(cfg, state, 0)


def test_a_person_who_draws_by_ask_number_keys_the_asks():
    cfg = Config(TRIAGE, designs.get("loop"), "keyless", person_faults="wrong:0.3")
    state = merge.Memo(cfg).first(3)[0]
    more = type(state)(**{**{f: getattr(state, f) for f in state.__slots__}, "asks": state.asks + 1})
    assert merge.key(cfg, state, 1) != merge.key(cfg, more, 1)


def test_a_later_chunk_of_a_queue_sweep_is_played_unmerged():
    cfg = Config(TRIAGE, designs.get("loop"), "keyed")
    res = run_chunk(cfg, Chunk(0, 1, "k", "l", 1, 2, {}), 2)
    assert res.explored == len(res.records) == 2


def test_a_step_is_one_play_of_a_tree_s_root_with_the_states_of_its_children():
    cfg = Config(jobs.turn_pairs(2), designs.get("loop"), "keyed")
    m = merge.Memo(cfg)
    state = m.first(3)[0]
    tree = merge.explore(m, state, 1)
    done, points = merge.step(cfg, state, 1)
    assert done == tree.outcome
    assert [p[:3] for p in points] == [c[:3] for c in tree.children]
    assert [merge.explore(m, p[3], 0) for p in points] == [c[3] for c in tree.children]
    assert merge.step(cfg, state, 0) == (tree.outcome, [])
    # Against what does not go through step: the unmerged chunk's once and twice scenarios at point 3.
    once, *twice = run_chunk(
        Config(jobs.turn_pairs(2), designs.get("loop"), "keyed"), plan_chunks([cfg])[2], 2, merge=False
    ).records
    base = merge.counters(state)
    assert (done.duplicates, done.missing, done.status) == (once.duplicates, once.missing, once.status)
    assert merge.plus(base, done.added) == (once.asks, once.avoidable, once.approvals, once.model_calls)
    assert [p[:2] for p in points] == [(r.second_kind, r.second_label) for r in twice] and len(twice) > 3
    leaves = [merge.step(cfg, p[3], 0)[0] for p in points]
    assert [(o.duplicates, o.missing, o.status) for o in leaves] == [(r.duplicates, r.missing, r.status) for r in twice]
    assert [merge.plus(merge.plus(base, p[2]), o.added) for p, o in zip(points, leaves, strict=True)] == [
        (r.asks, r.avoidable, r.approvals, r.model_calls) for r in twice
    ]


def test_only_a_chunk_of_first_scenarios_merges():
    cfg = Config(TRIAGE, designs.get("loop"), "keyed")
    assert merged(cfg, Chunk(0, 1, "k", "l"), collect=False, merge=True)
    assert not merged(cfg, Chunk(0, 1, "k", "l"), collect=False, merge=False)
    assert not merged(cfg, Chunk(0, 1, "k", "l", 1, 2), collect=False, merge=True)
    assert not merged(cfg, Chunk(0, 1, "k", "l", answers={"1": True}), collect=False, merge=True)
    assert not merged(cfg, Chunk(0, 1, "k", "l"), collect=True, merge=True)


def generated(depth_3=False):
    pairs = jobs.turn_pairs(1 if depth_3 else 3)
    return [Config(pairs, designs.get(d), t) for d, t in (("loop", "keyed"), ("markers", "keyless"))]


@pytest.mark.parametrize("depth", [2, 3])
def test_two_workers_play_each_distinct_restart_once_as_one_worker_does(depth):
    # Fresh configuration objects each: a memo belongs to one (a second sweep of it plays nothing).
    one = list(run_chunks(generated(), plan_chunks(generated()), depth))
    configs = generated()
    two = list(run_chunks(configs, plan_chunks(configs), depth, workers=2))
    assert [r.records for r in two] == [r.records for r in one]
    assert [(r.config, r.first, r.saves, r.explored) for r in two] == [
        (r.config, r.first, r.saves, r.explored) for r in one
    ]
    assert sum(r.explored for r in two) < sum(len(r.records) for r in two) / 5


def test_a_sweep_of_merged_and_unmerged_chunks_on_two_workers_is_one_worker_s():
    def configs():
        return [
            Config(TRIAGE, designs.get("loop"), "keyed", tracker_fault="crash"),
            Config(TRIAGE, designs.get("keys"), "keyed"),
        ]

    one, two = sweep(configs()), sweep(configs(), workers=2)
    assert_same(two, one)
    assert two.explored == one.explored < one.scenarios


def rows_of(result):
    return [(r.name, r.values(COLUMNS + ("thrice",))) for r in result.rows]


@pytest.mark.parametrize("depth", [1, 2, 3])
@pytest.mark.parametrize("merge_on", [True, False], ids=["merged", "unmerged"])
def test_a_chunk_s_row_without_its_records_is_the_row_of_its_records(depth, merge_on):
    cfg, other = generated(depth_3=True)[1], generated(depth_3=True)[1]  # a memo each
    chunks, scenarios = plan_chunks([cfg]), 0
    for chunk in chunks:
        kept = run_chunk(cfg, chunk, depth, merge=merge_on)
        counted = run_chunk(other, chunk, depth, merge=merge_on, keep=False)
        assert counted.records == [] and kept.row is None
        assert counted.row == table_row(cfg.label, kept.records)
        # And against the other way of counting (a tree's tally, or the records summed), so that an
        # unmerged row is not table_row checked against itself.
        assert counted.row == run_chunk(generated(depth_3=True)[1], chunk, depth, merge=not merge_on, keep=False).row
        assert type(counted.row.with_dups) is int  # the JSON table prints a number
        assert counted.row.once == 1 and counted.row.scenarios == len(kept.records)
        assert (counted.saves, counted.explored) == (kept.saves, kept.explored)
        scenarios += counted.row.scenarios
    assert scenarios > len(chunks) if depth > 1 else scenarios == len(chunks)


@pytest.mark.parametrize("workers", [1, 2])
def test_the_table_without_records_is_the_table_with_them(workers):
    kept = sweep(table_configs(TRIAGE), workers=workers)
    counted = sweep(table_configs(TRIAGE), workers=workers, keep=False)
    assert rows_of(counted) == rows_of(kept)
    assert counted.records == [[] for _ in counted.rows]
    assert (
        (counted.scenarios, counted.saves, counted.explored)
        == (kept.scenarios, kept.saves, kept.explored)
        == (9663, 53986, 1041)
    )  # saves: the unmerged table's too


@pytest.mark.parametrize("workers", [2, 3])
@pytest.mark.parametrize("depth", [2, 3])
def test_a_generated_job_without_records_is_the_same_on_workers(depth, workers):
    # Two configurations: the workers share their restarts, and the tallies are summed here.
    kept = sweep(generated(depth_3=True), depth=depth)
    counted = sweep(generated(depth_3=True), depth=depth, workers=workers, keep=False)
    assert rows_of(counted) == rows_of(kept) and kept.rows[0].twice > 0
    assert (kept.rows[0].thrice > 0) == (depth == 3)
    assert (counted.scenarios, counted.saves, counted.explored) == (kept.scenarios, kept.saves, kept.explored)


def outcome(dups=0, missing=0, added=(0, 0, 0, 0), saves=1):
    return merge.Outcome(dups, missing, 0, 0, 0, "done", added, saves)


def test_a_tally_sums_a_restart_and_the_points_below_it_each_with_the_counters_added_there():
    # Two points: a crash at the first leaves a leaf (2 duplicates, 1 ask of its own), at the second
    # a restart with one point below it; the counters added at a point count once per scenario below.
    leaf = merge.grown(outcome(dups=2, added=(1, 0, 0, 3)), ())
    deeper_leaf = merge.grown(outcome(missing=1, added=(0, 1, 0, 2)), ())
    middle = merge.grown(outcome(added=(0, 0, 0, 1)), (("k", "l", (1, 1, 0, 1), deeper_leaf),))
    root = merge.grown(outcome(added=(0, 0, 0, 5)), (("k", "a", (2, 0, 0, 1), leaf), ("k", "b", (0, 0, 0, 4), middle)))
    once, twice, thrice, with_dups, dups, missing, wrong, gave_up, denied, saves, asks, avoidable, calls = root.tally
    assert (once, twice, thrice) == (1, 2, 1)
    assert (with_dups, dups, missing, wrong, gave_up, denied, saves) == (1, 2, 1, 0, 0, 0, 4)
    # asks: the leaf's 1 + 2 added where it was crashed; the deeper leaf's 1 added at its point
    assert asks == (1 + 2) + (1 + 0)
    assert avoidable == (1 + 1)
    # model calls: root 5; leaf 3 + 1; middle 1 + 4; deeper leaf 2 + 1 (its point) + 4 (middle's point)
    assert calls == 5 + (3 + 1) + (1 + 4) + (2 + 1 + 4)


def test_a_tally_refuses_a_fourth_level():
    three = merge.grown(outcome(), ())
    for _ in range(2):
        three = merge.grown(outcome(), (("k", "l", (0, 0, 0, 0), three),))
    assert three.tally[:3] == (1, 1, 1)
    with pytest.raises(AssertionError, match="deeper than three"):
        merge.grown(outcome(), (("k", "l", (0, 0, 0, 0), three),))


def test_a_sweep_that_keeps_no_records_collects_no_timelines():
    with pytest.raises(ValueError, match="timelines"):
        sweep(generated(), collect=True, keep=False)


def test_many_configurations_go_to_workers_whole_and_play_what_one_process_plays():
    # 11 configurations on 2 workers: each goes to one worker with all its chunks.
    one = list(run_chunks(table_configs(TRIAGE), plan_chunks(table_configs(TRIAGE)), 2))
    configs = table_configs(TRIAGE)
    assert len(configs) >= BY_CONFIGURATION * 2
    two = list(run_chunks(configs, plan_chunks(configs), 2, workers=2))
    assert [(r.config, r.first, r.saves, r.explored) for r in two] == [
        (r.config, r.first, r.saves, r.explored) for r in one
    ]
    assert [r.records for r in two] == [r.records for r in one]
    # This process played none of their runs (sharing restarts, it plays each run to its first points).
    assert all(merge.memo(c)._first is None for c in configs)


def test_few_configurations_share_their_restarts_among_the_workers():
    configs = generated()
    assert len(configs) < BY_CONFIGURATION * 2
    list(run_chunks(configs, plan_chunks(configs), 2, workers=2))
    assert all(merge.memo(c)._first is not None for c in configs)


def test_the_unmerged_table_on_two_workers_is_one_worker_s_record_for_record():
    # Every chunk whole, a few to a task (agentcore.harness.pool.WHOLE_PER_TASK), fewer toward the end.
    one = sweep(table_configs(TRIAGE), merge=False)
    two = sweep(table_configs(TRIAGE), workers=2, merge=False)
    assert_same(two, one)
    assert two.explored == one.explored == 9663


def test_a_chunk_that_fails_in_a_worker_fails_the_sweep_with_its_error(caplog):
    cfg = Config(TRIAGE, designs.get("loop"), "keyed")
    bad = Chunk(0, 1, "k", "l", second_from=1, second_to=999)  # its restart reaches far fewer points
    with pytest.raises(ValueError, match="not 999"):
        list(run_chunks([cfg], [*plan_chunks([cfg])[:3], bad], 2, workers=2))
    table = [Config(TRIAGE, designs.get(d), "keyed") for d in ("loop", "keys", "markers")]
    with pytest.raises(ValueError, match="not 999"):  # the work it cancels logs nothing
        list(run_chunks(table, [bad, *plan_chunks(table)], 2, workers=2))
    assert "exception calling callback" not in caplog.text
