"""agentcore/port/audit.py: a target under every world that applies, one verdict."""

import json
import subprocess
import sys

import pytest

from agentcore import jobs
from agentcore.checker.worlds import WORLDS, world
from agentcore.port import TargetError, sweep_target
from agentcore.port.audit import audit_target, render, verdict, why_not
from agentcore.records import table_row

TRIAGE = jobs.load("triage")


def audit(target, **kw):
    return audit_target(f"examples.plain_loop:{target}", TRIAGE, "triage", workers=2, **kw)


def test_the_worlds_a_target_cannot_be_put_in_are_named_with_the_reason():
    left_out = {w.name: why_not(w) for w in WORLDS if why_not(w)}
    assert set(left_out) == {
        "power-cut",
        "power-cut-no-fsync",
        "tracker-crash",
        "tool-faults-k:4",
        "tool-faults-always",
        "person-deny:0.5",
    }
    assert "store is its own" in left_out["power-cut"] and "never crashed" in left_out["tracker-crash"]


def test_the_correct_loop_is_safe_under_every_world_that_applies():
    a = audit("keyed", depth=1)  # ttl's depth 2: test_the_tracker_s_fault_is_the_server_s...
    assert [r.world for r in a.rows] == [
        "panic",
        "ttl:3",
        "strict-params",
        "person-wrong:0.3",
        "person-adversarial",
        "model-fresh-ids",
        "model-fickle",
    ]
    assert verdict(a) == "safe" and all(not r.breaks for r in a.rows)


def test_a_key_from_an_unsaved_reply_is_broken_by_fresh_ids_and_not_before():
    a = audit("keyed_late", depth=1)
    assert [bool(r.breaks) for r in a.rows] == [False, False, False, False, False, True, True]
    assert verdict(a).startswith('broken under model-fresh-ids: crash at "effect create_issue')
    out = json.loads(render(a, "json"))
    assert out["worlds"][5]["witness"] and out["not_applicable"]["person-deny:0.5"]


def test_the_tracker_s_fault_is_the_server_s_a_key_forgotten_too_soon_doubles():
    forgets = sweep_target("examples.plain_loop:keyed", TRIAGE, "triage", depth=2, tracker_fault="ttl:1")
    keeps = sweep_target("examples.plain_loop:keyed", TRIAGE, "triage", depth=2, tracker_fault="ttl:3")
    # ttl:3 (the audit's world: depth + 1) keeps a key as long as the correct loop repeats it.
    assert table_row("k", forgets.records).with_dups > 0 and table_row("k", keeps.records).with_dups == 0


def test_a_tracker_that_would_crash_is_refused_as_the_server_starts():
    with pytest.raises(TargetError, match="never crashed"):
        sweep_target("examples.plain_loop:keyed", TRIAGE, "triage", tracker_fault="crash")


def test_only_the_named_worlds_are_swept():
    a = audit("keyed", depth=1, worlds=(world("model-fickle"), world("power-cut")))
    assert [r.world for r in a.rows] == ["model-fickle"] and [w for w, _ in a.skipped] == ["power-cut"]


def cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "agentcore", "audit", *args], capture_output=True, text=True, timeout=300
    )


def test_the_command_line_audits_a_target_and_prints_its_verdict():
    p = cli(
        "--target", "examples.plain_loop:keyed_late", "--depth", "1", "--format", "json", "--world", "model-fresh-ids"
    )
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["verdict"].startswith("broken under model-fresh-ids")


def test_the_command_line_refuses_a_design_beside_a_target():
    p = cli("--target", "examples.plain_loop:keyed", "--design", "keys")
    assert p.returncode == 2 and "audit --target takes no --design" in p.stderr


def test_the_person_is_the_server_s_truthful_it_settles_every_marked_call():
    result = sweep_target("examples.plain_loop:asking", TRIAGE, "triage", depth=2)
    row = table_row("asking", result.records)
    assert row.asks > 0 and row.with_dups == 0 and row.missing == 0


def test_a_wrong_person_s_losses_are_the_world_s_and_a_deny_is_refused():
    wrong = sweep_target("examples.plain_loop:asking", TRIAGE, "triage", depth=1, person_faults="adversarial")
    row = table_row("asking", wrong.records)
    assert row.with_dups + row.missing > 0  # every "did it happen?" answered wrongly
    a = audit("asking", depth=1, worlds=(world("person-adversarial"), world("person-deny:0.5")))
    assert verdict(a).startswith("safe (losses the world made unavoidable, the loop asking: ")
    assert [w for w, _ in a.skipped] == ["person-deny:0.5"]
