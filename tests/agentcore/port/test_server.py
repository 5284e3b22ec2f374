"""The fork server plays scenarios in children and holds the world (tests run it in this process)."""

import io
import json

import pytest

from agentcore import jobs
from agentcore.port.server import Server, load_target, serve
from examples import plain_loop
from tests.agentcore.port import targets

TRIAGE = jobs.load("triage")


def server(target, **kw):
    return Server(target, TRIAGE, **kw)


def test_an_uninterrupted_run_meets_replies_effects_and_puts():
    out = server(plain_loop.naive).play([])
    labels = out["labels"][0]
    assert out["status"] == "done" and not out["missed"]
    assert [lab.split()[0] for lab in labels].count("reply") == 3  # the final answer is asked for, not a point
    assert "effect create_issue 'Login fails after password reset' #1" in labels
    assert len(out["tracker"]["effects"]) == 3 and out["model_calls"] == 3


def test_a_crash_after_an_effect_makes_the_naive_restart_act_again():
    s = server(plain_loop.naive)
    effect = next(lab for lab in s.play([])["labels"][0] if lab.startswith("effect create_issue"))
    out = s.play([effect])
    assert len(out["labels"]) == 2 and out["status"] == "done"
    assert [e["origin"] for e in out["tracker"]["effects"]].count([0, "call_1"]) == 2


def test_the_keyed_loop_sends_the_same_key_after_that_crash():
    s = server(plain_loop.keyed)
    effect = next(lab for lab in s.play([])["labels"][0] if lab.startswith("effect create_issue"))
    assert [e["origin"] for e in s.play([effect])["tracker"]["effects"]].count([0, "call_1"]) == 1


def test_a_label_the_process_never_meets_lets_it_finish_and_says_so():
    out = server(plain_loop.keyed).play(["put nowhere #1"])
    assert out["missed"] and len(out["labels"]) == 1 and out["status"] == "done"


def test_a_hung_restart_is_killed_at_its_timeout():
    s = server(targets.hangs_on_restart, timeout=1.0)
    first = s.play([])["labels"][0][0]
    out = s.play([first])
    assert out["status"] == "hung" and len(out["labels"]) == 2


def test_a_failing_restart_ends_the_scenario_with_its_error():
    s = server(targets.fails_on_restart)
    out = s.play([s.play([])["labels"][0][0]])
    assert out["status"] == "failed" and "the checkpoint is not what I wrote" in out["error"]


def test_a_targets_prints_do_not_reach_the_protocol(capfd):
    out = server(targets.prints).play([])
    assert out["status"] == "done"
    assert "chatter" not in capfd.readouterr().out


def test_the_child_has_no_network_when_the_machine_allows_it():
    s = server(targets.reaches_out)
    if s.network != "isolated":
        pytest.skip(f"this machine gives children no network namespace ({s.network})")
    assert s.play([])["final"].startswith("no network")


def test_serve_says_hello_then_answers_each_request_with_one_line():
    out = io.StringIO()
    serve(server(plain_loop.keyed), "examples.plain_loop:keyed", io.StringIO('{"plan": []}\n{"plan": []}\n'), out)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert lines[0]["ready"] and lines[0]["target"] == "examples.plain_loop:keyed"
    assert [line["status"] for line in lines[1:]] == ["done", "done"]


@pytest.mark.parametrize(
    "name, says",
    [
        ("plain_loop", "package.module:attribute"),
        ("nowhere.at_all:x", "cannot import nowhere"),
        ("examples.plain_loop:absent", "has no attribute absent"),
        ("examples.plain_loop:__doc__", "is not callable"),
    ],
)
def test_a_bad_target_name_is_refused_with_what_is_wrong(name, says):
    with pytest.raises(ValueError, match=says):
        load_target(name)
