from agentcore.durable.ladder import Rung, choose


def test_read_only_reruns():
    assert choose(True, False, False, False) is Rung.RERUN


def test_idempotent_reruns():
    assert choose(False, True, False, True) is Rung.RERUN


def test_honoured_key_reruns():
    assert choose(False, False, True, True) is Rung.RERUN


def test_lookup_before_the_person():
    assert choose(False, False, False, True) is Rung.LOOKUP


def test_the_person_is_the_last_rung():
    assert choose(False, False, False, False) is Rung.ASK
