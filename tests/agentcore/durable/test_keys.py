import hashlib

from agentcore.durable.keys import key, new_run_id


def test_known_answer():
    assert key("run-1", "call_1") == "ba09e991b6ea3f35e4d62b6164c4a689"


def test_empty_ids():
    assert key("", "") == "390feabc786e369e55b904251d643b52"


def test_length_prefixes_keep_the_collision_pair_apart():
    assert key("a:b", "c") == "1c2de18a3ef3c0cdcce3495f7903aff9"
    assert key("a", "b:c") == "804536b63b049b4dcd2bcfedd2982e9b"


def test_utf8_length_is_in_bytes():
    # "é" is 2 bytes in UTF-8: the prefix must say 2, where a character count would say 1.
    expected = hashlib.sha256("2:é1:x".encode()).digest()[:16].hex()
    assert key("é", "x") == expected
    assert key("é", "x") != hashlib.sha256("1:é1:x".encode()).digest()[:16].hex()


def test_run_ids_are_fresh():
    assert len({new_run_id() for _ in range(1000)}) == 1000
