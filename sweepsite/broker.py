"""Kombu's filesystem transport (the embedded default broker), publishing each message atomically.

Kombu 5.7's filesystem `Channel._put` creates `<name>.msg` empty and then writes it, under a flock
that its consumer never takes: a worker polling the folder can move and read the file between the
two, find an empty or partial message, fail to decode it and lose it (seen here: a JSONDecodeError
in a worker, and a sweep left "running" with a chunk that never came). Here a message is written
under a name that no consumer reads (`.part` after the queue's suffix) and renamed into place; a
rename within a folder is atomic, so a consumer finds the whole message or nothing.

Its consumer takes the first name in sorted order: here a name starts with the message's priority
(0 first, as kombu's Redis transport pops its priority lists) and then the monotonic clock in
nanoseconds, zero-padded (kombu's unpadded milliseconds sort 1000000 before 999999, newer first,
and two messages of one millisecond by their random suffix), so the queue is first in, first out
within a priority and a chunk queued again after its worker died
(sweeps.workqueue.publish.FIRST) goes ahead of the rest.

Kombu also rewrites an exchange's table of bindings (control folder, `<exchange>.exchange`) in
place, and creates it with `open("wb")` before taking its lock: workers started together (`make
run`'s, on a fresh folder) truncate each other's table, and one reading it then finds it empty (a
JSONDecodeError, and that worker does not start). Here a table is read and rewritten under a lock
file of its own, and written whole under another name and renamed into place, so a reader finds
the old table or the new one.

settings.py selects this transport (CELERY_BROKER_TRANSPORT) for `filesystem://` URLs.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from time import monotonic_ns
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem, virtual
from kombu.utils.encoding import str_to_bytes


class Channel(filesystem.Channel):
    def _put(self, queue: str, payload: Any, **kwargs: Any) -> None:
        # The consumer sorts by the name and matches its `.<queue>.msg` suffix (no dot before it).
        priority = self._get_message_priority(payload)
        stamp = f"{monotonic_ns():020d}"
        name = os.path.join(self.data_folder_out, f"{priority}-{stamp}_{uuid.uuid4()}.{queue}.msg")
        data = str_to_bytes(filesystem.dumps(payload))
        try:
            with open(name + ".part", "wb") as f:
                f.write(data)
            os.replace(name + ".part", name)
        except OSError as exc:
            raise ChannelError(f"Cannot add file {name!r} to directory") from exc

    def _queue_bind(self, exchange: str, routing_key: str, pattern: str, queue: str) -> None:
        entry = filesystem.exchange_queue_t(routing_key or "", pattern or "", queue or "")
        with self._table(exchange) as queues:
            if entry not in queues:
                queues.insert(0, entry)

    def _delete(self, queue: str, exchange: str, routing_key: str, pattern: str, *args: Any, **kwargs: Any) -> None:
        virtual.Channel._delete(self, queue, exchange, routing_key, pattern, *args, **kwargs)  # not kombu's file part
        entry = filesystem.exchange_queue_t(routing_key or "", pattern or "", queue or "")
        with self._table(exchange) as queues:
            while entry in queues:
                queues.remove(entry)

    @contextmanager
    def _table(self, exchange: str) -> Iterator[list[Any]]:
        """An exchange's bindings to change in place, read and written back whole under its lock."""
        file = self._exchange_file(exchange)
        self.control_folder.mkdir(parents=True, exist_ok=True)
        try:
            with open(file.with_name(file.name + ".lock"), "a") as guard:
                filesystem.lock(guard, filesystem.LOCK_EX)
                queues = self.get_table(exchange)
                before = list(queues)
                yield queues
                if queues != before:
                    part = file.with_name(f"{file.name}.{uuid.uuid4()}.part")
                    part.write_bytes(str_to_bytes(filesystem.dumps(queues)))
                    os.replace(part, file)
        except OSError as exc:
            raise ChannelError(f"Cannot open {file}") from exc


class Transport(filesystem.Transport):
    Channel = Channel

    @property
    def default_connection_params(self) -> dict[str, Any]:
        # A folder has no host: with kombu's default ("localhost") every connection a worker, the
        # web process or a command made logged "No hostname was supplied. Reverting to default".
        return {"port": self.default_port}
