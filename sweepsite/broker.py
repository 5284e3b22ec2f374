"""Kombu's filesystem transport (the embedded default broker), publishing each message atomically.

Kombu 5.7's filesystem `Channel._put` creates `<name>.msg` empty and then writes it, under a flock
that its consumer never takes: a worker polling the folder can move and read the file between the
two, find an empty or partial message, fail to decode it and lose it (seen here: a JSONDecodeError
in a worker, and a sweep left "running" with a chunk that never came). Here a message is written
under a name that no consumer reads (`.part` after the queue's suffix) and renamed into place; a
rename within a folder is atomic, so a consumer finds the whole message or nothing.

Its consumer takes the first name in sorted order: here a name starts with the message's priority
(0 first, as kombu's Redis transport pops its priority lists) and then kombu's monotonic
milliseconds, zero-padded (kombu's unpadded number sorts 1000000 before 999999: newer first), so
the queue is first in, first out within a priority and a chunk queued again after its worker died
(services.taskqueue.FIRST) goes ahead of the rest.

settings.py selects this transport (CELERY_BROKER_TRANSPORT) for `filesystem://` URLs.
"""

from __future__ import annotations

import os
import uuid
from time import monotonic
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import str_to_bytes


class Channel(filesystem.Channel):
    def _put(self, queue: str, payload: Any, **kwargs: Any) -> None:
        # The consumer sorts by the name and matches its `.<queue>.msg` suffix (no dot before it).
        priority = self._get_message_priority(payload)
        stamp = f"{int(round(monotonic() * 1000)):015d}"
        name = os.path.join(self.data_folder_out, f"{priority}-{stamp}_{uuid.uuid4()}.{queue}.msg")
        data = str_to_bytes(filesystem.dumps(payload))
        try:
            with open(name + ".part", "wb") as f:
                f.write(data)
            os.replace(name + ".part", name)
        except OSError as exc:
            raise ChannelError(f"Cannot add file {name!r} to directory") from exc


class Transport(filesystem.Transport):
    Channel = Channel
