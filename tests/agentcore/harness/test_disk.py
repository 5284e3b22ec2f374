"""The simulated disks: what a crash may leave after each file operation (agentcore.harness.disk)."""

import random
import time
import zlib
from dataclasses import replace

import pytest

from agentcore.config import Config
from agentcore.durable import designs
from agentcore.harness.chunks import points, replay
from agentcore.harness.disk import (
    BLOCK,
    MAX_STATES,
    MAX_TEARS,
    MemoryFiles,
    OverBudget,
    PowerCutDisk,
    WorkBudget,
    tears,
)
from agentcore.harness.scenario import run_steps
from agentcore.jobs import load

OLD, NEW = b'{"old": 1}', b'{"new": 2}'


def _states(disk, file_op=False):
    return [s if s is not None else disk.files() for _, s in disk.crash_states(file_op)]


def _synced(files):
    return PowerCutDisk(read=["c"], data=files)


def test_panic_leaves_the_files_as_the_process_wrote_them():
    disk = MemoryFiles()
    disk.write("c.tmp", NEW)
    assert _states(disk) == [{"c.tmp": NEW}]


def test_panic_offers_no_new_point_for_an_fsync_within_a_save():
    disk = MemoryFiles()
    disk.begin_save()
    disk.write("c.tmp", NEW)
    assert len(disk.crash_states(True)) == 1
    disk.sync("c.tmp")
    assert disk.crash_states(True) == []
    disk.replace("c.tmp", "c")
    assert len(disk.crash_states(True)) == 1


def test_a_power_cut_after_a_full_save_with_fsync_leaves_one_state():
    disk = _synced({"c": OLD})
    disk.write("c.tmp", NEW)
    disk.sync("c.tmp")
    disk.replace("c.tmp", "c")
    disk.sync_dir("c")
    assert _states(disk) == [{"c": NEW}]


def test_a_rename_without_a_folder_fsync_may_be_undone():
    disk = _synced({"c": OLD})
    disk.write("c.tmp", NEW)
    disk.sync("c.tmp")
    disk.replace("c.tmp", "c")
    assert _states(disk) == [{"c": NEW}, {"c": OLD}]  # the old checkpoint back (the temp file's name too)


def test_a_rename_of_an_unsynced_file_may_leave_it_empty():
    # ext4's zero-length file: the rename reached the disk, the data did not.
    disk = _synced({"c": OLD})
    disk.write("c.tmp", NEW)
    disk.replace("c.tmp", "c")
    disk.sync_dir("c")
    assert {"c": b""} in _states(disk)


def test_a_write_in_place_may_be_lost_truncated_or_torn_at_a_block_boundary():
    big = b"x" * (2 * BLOCK + 10)
    disk = _synced({"c": OLD})
    disk.write("c", big)
    contents = [s["c"] for s in _states(disk)]
    assert contents[0] == big
    assert set(contents) == {big, OLD, b"", big[:BLOCK], big[: 2 * BLOCK]}


def test_an_unlink_without_a_folder_fsync_may_be_undone():
    disk = _synced({"c": OLD})
    disk.remove("c")
    assert _states(disk) == [{}, {"c": OLD}]


def test_a_new_file_s_name_is_lost_without_a_folder_fsync():
    disk = _synced({})
    disk.write("c", NEW)
    disk.sync("c")
    assert _states(disk) == [{"c": NEW}, {}]


def test_states_differing_only_in_temp_files_are_one():
    disk = _synced({"c": OLD})
    disk.write("c.tmp", NEW)  # the temp file: gone, empty or whole; the checkpoint: old in all
    assert _states(disk) == [{"c": OLD, "c.tmp": NEW}]


def test_the_panic_state_comes_first_then_the_durable_one():
    disk = _synced({"c": OLD})
    disk.write("c", NEW)
    disk.write("d", NEW)
    states = _states(disk)
    assert states[0] == {"c": NEW, "d": NEW}
    assert states[1] == {"c": OLD}


def _many():
    disk = PowerCutDisk(read=["c", "d", "e"])
    for i in range(6):  # six saves without any fsync: many legal states
        for name in ("c", "d", "e"):
            disk.write(name + ".tmp", b"%d" % i * 700)
            disk.replace(name + ".tmp", name)
    return disk


def test_too_many_states_are_a_sample_of_max_states_with_both_ends_kept():
    disk = _many()
    states = _states(disk)
    assert len(states) == MAX_STATES
    assert states[0] == disk.files()
    assert states[1] == {}  # nothing was ever made durable


def test_the_sample_is_the_same_every_time():
    assert _states(_many()) == _states(_many())


def test_a_save_s_later_point_does_not_offer_a_state_an_earlier_one_did():
    disk = _synced({"c": OLD})
    disk.begin_save()
    disk.write("c.tmp", NEW)
    assert len(disk.crash_states(True)) == 1
    disk.sync("c.tmp")
    assert disk.crash_states(True) == []  # the same states: nothing new to crash at
    disk.replace("c.tmp", "c")
    assert [s for _, s in disk.crash_states(True)] == [{"c": NEW}]  # the undone rename was offered


def test_a_state_is_described_by_how_it_differs_from_the_panic_state():
    disk = _synced({"c": OLD})
    disk.write("c", b"y" * (BLOCK + 1))
    descriptions = [d for d, _ in disk.crash_states(False)]
    assert descriptions[0] == ""
    assert " [power cut: c older]" in descriptions
    assert " [power cut: c empty]" in descriptions
    assert f" [power cut: c torn at {BLOCK} of {BLOCK + 1} bytes]" in descriptions


def test_after_a_crash_the_disk_holds_the_state_and_all_of_it_is_durable():
    disk = _synced({"c": OLD})
    disk.write("c", NEW)
    disk.reset({"c": b""})
    assert _states(disk) == [{"c": b""}]


def test_a_big_write_tears_at_most_max_tears_block_boundaries_from_its_first_to_its_last():
    assert tears(BLOCK) == [] and tears(BLOCK + 1) == [BLOCK]
    assert tears(BLOCK * MAX_TEARS + 1) == [BLOCK * n for n in range(1, MAX_TEARS + 1)]
    big = tears(BLOCK * 40 + 1)
    assert len(big) == MAX_TEARS and big[0] == BLOCK and big[-1] == BLOCK * 40
    assert all(c % BLOCK == 0 for c in big) and big == sorted(set(big))


def test_a_torn_big_checkpoint_offers_at_most_max_tears_torn_contents():
    disk = _synced({"c": OLD})
    disk.write("c", b"x" * (BLOCK * 40 + 7))
    torn = [s["c"] for s in _states(disk) if 0 < len(s["c"]) < BLOCK * 40 + 7 and s["c"] != OLD]
    assert 0 < len(torn) <= MAX_TEARS


def test_the_sample_s_seed_is_the_crc_of_the_states_repr_made_piece_by_piece():
    # The README's tables depend on the sample: the seed computed in pieces must be the very one
    # zlib.crc32(repr(...)) gave.
    disk, rnd = _synced({}), random.Random(7)
    for _ in range(200):
        keys = [
            frozenset(
                (f"run-{rnd.randint(1, 3)}.json'\\", rnd.randbytes(rnd.randint(0, 30)))
                for _ in range(rnd.randint(0, 3))
            )
            for _ in range(rnd.randint(0, 5))
        ]
        assert disk._seed(keys) == zlib.crc32(repr([sorted(k) for k in keys]).encode())


# Work budgets: a play counts its steps (a crash point, a block written, a power-cut state looked at).


def _no_fsync(runs):
    return Config(load("triage"), designs.get("loop"), "keyed", runs, crash_model="power-cut", fsync=False)


def test_a_power_cut_disk_charges_its_states_before_it_lists_them():
    budget = WorkBudget(10)
    disk = PowerCutDisk(read=["a", "b"], budget=budget)
    disk.write("a", b"x" * (3 * BLOCK))
    disk.write("b", b"y" * (3 * BLOCK))
    # 4 blocks written each; a file holds nothing, 1 or 2 blocks, or all 3, under each prefix of the
    # folder's creates: no file, a alone, both (1 + 4 + 4 * 4 states)
    assert budget.spent == 8 and disk.count() == 21
    with pytest.raises(OverBudget) as e:
        disk.crash_states(False)
    assert (e.value.spent, e.value.bound) == (29, 10) and disk.cached == []


def test_a_dry_count_of_the_run_is_what_playing_it_charges():
    for cfg in (_no_fsync(3), replace(_no_fsync(3), crash_model="panic"), replace(_no_fsync(2), fsync=True)):
        played = WorkBudget()
        assert points(cfg, budget=played) == points(cfg)  # a budget changes nothing it plays
        steps, n = run_steps(cfg)
        assert steps == played.spent
        assert n == len(points(cfg)) or (cfg.crash_model == "power-cut" and not cfg.fsync)


def test_a_budget_stops_a_play_whose_states_multiply_past_its_bound_at_once():
    start = time.perf_counter()
    with pytest.raises(OverBudget) as e:
        run_steps(_no_fsync(10), 400_000)  # about 16 million steps
    with pytest.raises(OverBudget):
        points(_no_fsync(10), budget=WorkBudget(100_000))
    with pytest.raises(OverBudget):
        replay(_no_fsync(10), 1, budget=WorkBudget(100_000))
    assert e.value.spent > 400_000 and time.perf_counter() - start < 10  # 2.5 s here; unbounded: minutes
