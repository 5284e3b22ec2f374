import pytest

from agentcore.crash import CrashPlan
from agentcore.jobs import Call, load
from agentcore.standins.person import QueuePerson, ScriptedPerson, Suspended
from agentcore.standins.tools import ToolFailed, ToolServer
from agentcore.standins.tracker import Tracker


def request(t, key, origin=(0, "c1"), hook=None):
    return t.request("create_issue", {"title": "x"}, key, origin, hook or CrashPlan(), "create_issue c1")


def test_keyed_tracker_answers_a_known_key_with_the_first_answer_and_records_nothing():
    t = Tracker("keyed")
    first = request(t, "k1")
    again = request(t, "k1")
    assert again == first
    assert len(t.effects) == 1


def test_keyed_tracker_fires_accepted_for_a_repeat_too():
    t = Tracker("keyed")
    request(t, "k1")
    hook = CrashPlan(record=True)
    request(t, "k1", hook=hook)
    assert [k for k, _ in hook.points] == ["tracker-accepted"]


def test_keyless_tracker_ignores_keys():
    t = Tracker("keyless")
    request(t, "k1")
    request(t, "k1")
    assert len(t.effects) == 2
    assert t.lookup("k1") is None


def test_lookup_tracker_duplicates_but_can_say_what_happened():
    t = Tracker("lookup")
    a = request(t, "k1")
    request(t, "k1")
    assert len(t.effects) == 2
    assert t.lookup("k1") == a
    assert t.lookup("k2") is None


def test_search_changes_nothing():
    t = Tracker("keyed")
    request(t, "k1")
    assert t.search({"query": "X"}) == {"issues": [1]}
    assert len(t.effects) == 1


def test_tally_counts_extra_and_missing_effects():
    t = Tracker("keyless")
    request(t, None, (0, "a"))
    request(t, None, (0, "a"))
    assert t.tally([(0, "a"), (0, "b")]) == (1, 1)


def test_person_answers_truthfully_from_the_tracker():
    t = Tracker("keyless")
    p = ScriptedPerson(t)
    call = Call("c1", "create_issue", {})
    assert p.did_it_happen((0, "c1"), call, None, "") is None
    answer = request(t, None, (0, "c1"))
    assert p.did_it_happen((0, "c1"), call, None, "") == answer
    assert p.asks == 2


def test_person_decides_an_approval_request_once():
    p = ScriptedPerson(Tracker("keyed"))
    call = Call("c1", "create_issue", {})
    assert p.approve("req", call, (0, "c1")) and p.approve("req", call, (0, "c1"))
    assert p.prompts == 1


def test_queue_person_suspends_until_answered():
    t = Tracker("keyless")
    call = Call("c1", "create_issue", {})
    with pytest.raises(Suspended) as e:
        QueuePerson(t).did_it_happen((0, "c1"), call, None, "tried nothing")
    assert e.value.question["id"] == "0:c1#1"
    assert e.value.question["truth"] is False
    assert QueuePerson(t, {"0:c1#1": False}).did_it_happen((0, "c1"), call, None, "") is None


def test_queue_person_answers_each_ask_with_its_own_answer_and_counts_every_ask():
    # The truth changes between two asks about one call: "no", the call is made, then "yes".
    t = Tracker("keyless")
    call = Call("c1", "create_issue", {})
    p = QueuePerson(t, {"0:c1#1": False})
    assert p.did_it_happen((0, "c1"), call, None, "") is None
    answer = request(t, None, (0, "c1"))
    with pytest.raises(Suspended) as e:
        p.did_it_happen((0, "c1"), call, None, "")
    assert e.value.question["id"] == "0:c1#2" and e.value.question["truth"] is True
    assert p.asks == 2
    p = QueuePerson(t, {"0:c1#1": True, "0:c1#2": False})
    assert p.did_it_happen((0, "c1"), call, None, "") == answer
    assert p.given() == {"0:c1#1": True}  # the answer for the second ask is not given yet


def test_flaky_server_fails_first_attempts_after_then_before_accept():
    job = load("triage")
    t = Tracker("keyless")
    s = ToolServer(t, job, failures=1)
    tool = job.tools["create_issue"]
    with pytest.raises(ToolFailed):
        s.call(tool, {}, None, (0, "call_1"), CrashPlan(), "d")
    assert len(t.effects) == 1  # accepted, then died
    with pytest.raises(ToolFailed):
        s.call(tool, {}, None, (0, "call_2"), CrashPlan(), "d")
    assert len(t.effects) == 1  # died before the request arrived
    s.call(tool, {}, None, (0, "call_2"), CrashPlan(), "d")
    assert len(t.effects) == 2
