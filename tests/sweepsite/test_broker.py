"""The embedded default broker publishes a message whole before a worker can see it (sweepsite/broker.py)."""

from __future__ import annotations

from pathlib import Path
from queue import Empty

import pytest
from kombu import Connection
from kombu.transport import filesystem

from sweepsite import broker
from sweepsite.celery import app


def channel(folder: Path, transport: type) -> object:
    options = {"data_folder_in": str(folder), "data_folder_out": str(folder), "store_processed": False}
    return Connection("filesystem://", transport=transport, transport_options=options).channel()


def test_kombu_s_own_put_lets_a_polling_worker_read_a_message_not_yet_written(tmp_path, monkeypatch):
    # Why sweepsite/broker.py exists: if this starts failing, kombu has mended _put and the subclass can go.
    ch = channel(tmp_path, filesystem.Transport)
    real = filesystem.dumps
    seen = []

    def dumps_while_a_worker_polls(payload):
        try:
            seen.append(ch._get("q"))
        except Exception as e:  # noqa: BLE001 - what the worker meets
            seen.append(e)
        return real(payload)

    monkeypatch.setattr(filesystem, "dumps", dumps_while_a_worker_polls)
    ch._put("q", {"body": "chunk 7"})
    assert isinstance(seen[0], ValueError)  # an empty file: the message is lost
    with pytest.raises(Empty):
        ch._get("q")


def test_a_worker_polling_while_a_message_is_published_finds_nothing_then_the_whole_message(tmp_path, monkeypatch):
    ch = channel(tmp_path, broker.Transport)
    real = broker.os.replace
    seen = []

    def replace_after_a_poll(src, dst):
        assert Path(src).read_bytes()  # written in full under its .part name...
        try:
            seen.append(ch._get("q"))
        except Empty:
            seen.append("nothing")  # ...which no worker reads
        real(src, dst)

    monkeypatch.setattr(broker.os, "replace", replace_after_a_poll)
    ch._put("q", {"body": "chunk 7"})
    assert seen == ["nothing"]
    assert ch._get("q") == {"body": "chunk 7"}
    assert list(tmp_path.iterdir()) == []


def test_the_celery_app_uses_it_for_the_filesystem_broker():
    if not str(app.conf.broker_url).startswith("filesystem"):
        pytest.skip("the services pass runs on Redis")
    with app.connection_for_write() as conn:
        assert isinstance(conn.transport, broker.Transport)
