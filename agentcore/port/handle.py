"""The handle a target receives: the world it acts on, seen from the crashed process.

Rules:
- Everything the target does to the world goes through the handle, and each call is one request
  to the fork server, which holds the world (agentcore.port.server): the crashed child holds
  nothing that outlives it but the files it wrote.
- `model.ask(turn, results)` is the scripted model's reply to turn `turn` (0-based: how many
  replies the conversation already holds), arguments filled from `results` (call ID -> result). By
  default a repeated ask gets fresh provider call IDs, as a real provider mints them.
- `tools.call(name, args, call_id=..., key=None)` runs a tool on the tracker stand-in; `key` is
  what an idempotent tool would send (`handle.key(call_id)`: the chapter's key of the thread ID and
  the call ID).
- `store` is a JSON file store (temp file, fsync, rename) whose every save is a point (`put`);
  `instrument(obj, methods, kind)` makes the target's own store's writes points instead.
- `point(kind, detail)` is a point of the target's own; the server answers each point with "go
  on" or "die", and a dying child ends with os._exit: no exception handler, no `finally`, no
  runtime's error write runs, as in a process killed there.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import threading
from collections.abc import Callable, Iterable
from typing import IO, Any

from agentcore.durable.keys import key as chapter_key
from agentcore.port.labels import detail_text

CRASHED = 86  # a child's exit status when it died at its point


class Channel:
    """The child's end of its socket to the server: one JSON line out, one back, one exchange at a
    time (a runtime runs tools in threads: two asks must not interleave on the socket)."""

    __slots__ = ("rfile", "wfile", "lock", "threads")

    def __init__(self, rfile: IO[str], wfile: IO[str]) -> None:
        self.rfile, self.wfile = rfile, wfile
        self.lock = threading.Lock()
        self.threads: set[int] = set()  # the threads that asked: more than one, and the order is the scheduler's

    def ask(self, message: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self.threads.add(threading.get_ident())
            self.wfile.write(json.dumps(message) + "\n")
            self.wfile.flush()
            answer = json.loads(self.rfile.readline() or '{"die": true}')  # a server gone: die as at a point
        if answer.get("die"):
            os._exit(CRASHED)
        return answer


class Model:
    """The scripted model, asked through the server."""

    def __init__(self, channel: Channel) -> None:
        self._channel = channel

    def ask(self, turn: int, results: dict[str, Any] | None = None) -> list[dict[str, Any]] | str:
        """Turn `turn`'s calls [{"id", "tool", "args"}], or the final answer (a str)."""
        return self._channel.ask({"op": "ask", "turn": turn, "results": results or {}})["reply"]


class Tools:
    """The job's tools, run on the tracker stand-in through the server."""

    def __init__(self, channel: Channel) -> None:
        self._channel = channel

    def call(self, name: str, args: dict[str, Any], *, call_id: str, key: str | None = None) -> Any:
        answer = self._channel.ask({"op": "tool", "tool": name, "args": args, "call_id": call_id, "key": key})
        if "error" in answer:
            raise ToolError(answer["error"])
        return answer["result"]


class Person:
    """The scripted person, asked through the server: the last rung of the chapter's ladder, for a
    call whose effect no key or lookup can settle."""

    def __init__(self, channel: Channel) -> None:
        self._channel = channel

    def did_it_happen(self, call_id: str) -> Any:
        """What the person says of the call `call_id` sent earlier: its result if it happened (what the
        tracker shows, or a bare confirmation), None if it did not. A person can be wrong (the
        sweep's --person-faults)."""
        return self._channel.ask({"op": "person", "call_id": call_id})["result"]


class ToolError(Exception):
    """A tool refused the call (its message says why)."""


class Store:
    """A JSON file store in the scenario's folder: `load()`, then `save(state, detail)`, each save a
    `put` point once the file is in place."""

    def __init__(self, path: str, point: Callable[[str, str], None]) -> None:
        self.path = path
        self._point = point

    def load(self) -> Any:
        try:
            with open(self.path, encoding="utf-8") as f:
                return json.load(f)
        except FileNotFoundError:
            return None

    def save(self, state: Any, detail: str = "") -> None:
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        self._point("put", detail)


class Handle:
    """What a target is called with; see the module's rules."""

    def __init__(self, channel: Channel, *, thread_id: str, process: int, workdir: str) -> None:
        self._channel = channel
        self.thread_id = thread_id  # the job run's identity, the same in every process of it
        self.process = process  # 1 for the first process of a scenario, 2 for its restart, ...
        self.workdir = workdir  # the scenario's own folder: it outlives the crashes, not the scenario
        self.model = Model(channel)
        self.tools = Tools(channel)
        self.person = Person(channel)
        self.store = Store(os.path.join(workdir, "store.json"), self.point)

    def point(self, kind: str, detail: str = "") -> None:
        """A crash point of the target's own: the process may die here."""
        self._channel.ask({"op": "point", "kind": kind, "detail": detail_text(detail)})

    def key(self, call_id: str) -> str:
        """The chapter's idempotency key of a call of this thread."""
        return chapter_key(self.thread_id, call_id)


def instrument(
    obj: object, methods: Iterable[str], kind: str, handle: Handle, detail: Callable[..., str] | None = None
) -> None:
    """Make each of `methods` of `obj` a point of `kind` once it has returned (the write is done):
    wrapped on the instance with functools.wraps, so a runtime that inspects its signature still
    sees the original's. `detail(*args, **kwargs)` names the point (default: the method's name)."""
    for name in methods:
        setattr(obj, name, _wrapped(getattr(obj, name), name, kind, handle, detail))


def _wrapped(
    original: Callable[..., Any], name: str, kind: str, handle: Handle, detail: Callable[..., str] | None
) -> Callable[..., Any]:
    def named(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
        return detail(*args, **kwargs) if detail else name

    if inspect.iscoroutinefunction(original):

        async def awrapper(*args: Any, **kwargs: Any) -> Any:
            result = await original(*args, **kwargs)
            handle.point(kind, named(args, kwargs))
            return result

        return functools.wraps(original)(awrapper)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        handle.point(kind, named(args, kwargs))
        return result

    return functools.wraps(original)(wrapper)
