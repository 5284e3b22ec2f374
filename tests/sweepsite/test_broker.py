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


@pytest.mark.parametrize(
    ("transport", "warned"), [(filesystem.Transport, True), (broker.Transport, False)], ids=["kombu", "sweepsite"]
)
def test_a_connection_to_the_folder_logs_no_hostname_warning(tmp_path, caplog, transport, warned):
    # kombu's default connection parameters name a host, so every connection (each worker, the web
    # process, each command) logged "No hostname was supplied. Reverting to default 'localhost'".
    options = {"data_folder_in": str(tmp_path), "data_folder_out": str(tmp_path)}
    with Connection("filesystem://", transport=transport, transport_options=options) as conn:
        conn.info()
    assert ("No hostname was supplied" in caplog.text) is warned


def control_channel(folder: Path, transport: type) -> object:
    options = {
        "data_folder_in": str(folder / "out"),
        "data_folder_out": str(folder / "out"),
        "control_folder": str(folder / "control"),
        "store_processed": False,
    }
    (folder / "out").mkdir(exist_ok=True)
    return Connection("filesystem://", transport=transport, transport_options=options).channel()


@pytest.mark.parametrize("transport", [filesystem.Transport, broker.Transport], ids=["kombu", "sweepsite"])
def test_two_workers_binding_at_once_keep_both_bindings(tmp_path, monkeypatch, transport):
    # Worker a creates the exchange's table; worker b binds between a's creating it and a's lock.
    a, b = control_channel(tmp_path, transport), control_channel(tmp_path, transport)
    real = filesystem.lock
    met: list[object] = []

    def lock_after_the_other_worker(f, flags):
        if not met:
            met.append("b binds")
            try:
                b._queue_bind("celery.pidbox", "", "", "b.pidbox")
            except ValueError as e:  # kombu: b read the table a had created and not written yet
                met.append(e)
        real(f, flags)

    monkeypatch.setattr(filesystem, "lock", lock_after_the_other_worker)
    a._queue_bind("celery.pidbox", "", "", "a.pidbox")
    queues = sorted(q.queue for q in a.get_table("celery.pidbox"))
    if transport is filesystem.Transport:  # why sweepsite/broker.py binds on its own: if this fails, drop it
        assert isinstance(met[1], ValueError) and queues == ["a.pidbox"]
    else:
        assert met == ["b binds"] and queues == ["a.pidbox", "b.pidbox"]
        b._delete("b.pidbox", "celery.pidbox", "", "")
        assert [q.queue for q in a.get_table("celery.pidbox")] == ["a.pidbox"]


def test_a_message_of_a_higher_priority_is_taken_first_then_first_in_first_out(tmp_path):
    ch = channel(tmp_path, broker.Transport)
    for body, priority in (("a", 5), ("b", 5), ("first", 0), ("c", 5)):
        ch._put("q", {"body": body, "properties": {"priority": priority}})
    assert [ch._get("q")["body"] for _ in range(4)] == ["first", "a", "b", "c"]
