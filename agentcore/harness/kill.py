"""The kill crash model: each process of a scenario runs in a child process that is really SIGKILLed.

Rules:
- The child is forked for one process of the scenario and runs its job runs against the checkpoint
  in a real folder. Everything that outlives a crash stays in the parent: the world's stand-ins
  (tracker, tool server, model with its count of asks per turn, person), the timeline, the crash
  plan and the count of job runs finished. The child reaches them through a pipe, one request at a
  time, and waits for each answer.
- Every crash point is a request too. When the parent's crash plan says "crash here", the parent
  answers with SIGKILL: the child dies between two system calls, holding whatever it held, with
  nothing flushed or cleaned up; the next process starts from the folder as the kill left it.
- A point the tracker fires inside a tool call happens in the parent, where the tracker lives; a
  crash there kills the child, which is waiting for the call's answer.
- The saves a process made are counted from its points (`checkpoint.completes_save`): a killed
  child cannot report them.
- So the in-process panic model and this one differ only in how the process dies; a test checks
  that they give the same records.
"""

from __future__ import annotations

import os
import signal
from typing import TYPE_CHECKING, Any, Protocol

from agentcore.durable.checkpoint import OsFiles, completes_save

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

    from agentcore.config import Config
    from agentcore.harness.state import World


class Process(Protocol):
    """What this module needs of a scenario's play (agentcore.harness.scenario): its world, its
    current process's hook and disk, and a way to run that process's job runs."""

    cfg: Config
    world: World
    saves: int
    hook: Any
    disk: Any
    remote: Any

    def point(self, kind: str, detail: str) -> None: ...

    def run_jobs(self) -> None: ...


class ChildDied(Exception):
    """The child process ended without a word: a bug, not a crash the sweep planted."""


def run_process(scn: Process) -> None:
    """Run the scenario's current process in a child; raise in the parent what ended it (a Crash
    from the parent's plan, or the child's ToolGaveUp, Suspended, CheckpointError)."""
    from multiprocessing.connection import Pipe  # here: only the kill model needs it, every command starts

    parent, child = Pipe()
    pid = os.fork()
    if pid == 0:  # the child
        parent.close()
        code = 0
        try:
            _child(scn, child)
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    child.close()
    finished = False
    try:
        _serve(scn, parent)
        finished = True
    finally:
        # A child that said "done" exits by itself: killing it too could beat its exit on a busy machine.
        if not finished:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        os.waitpid(pid, 0)
        parent.close()


def _serve(scn: Process, conn: Connection) -> None:
    w = scn.world
    targets: dict[str, Any] = {"server": w.server, "tracker": w.tracker, "model": w.model, "person": w.person}
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            raise ChildDied("the child process ended without finishing or failing") from None
        what = msg[0]
        if what == "point":
            _, kind, detail = msg
            if completes_save(kind, scn.cfg.design):
                scn.saves += 1
            scn.hook(kind, detail)  # a Crash here: run_process's finally kills the child
            conn.send(("ok", None))
        elif what == "call":
            _, target, method, args = msg
            if target == "server" and method == "call":
                args = (*args[:4], scn.point, *args[5:])  # the tracker's points are the parent's
            try:
                result = getattr(targets[target], method)(*args)
            except Exception as e:  # ToolFailed, Suspended: the child's loop handles or ends on them
                conn.send(("raise", e))
            else:
                conn.send(("ok", result))
        elif what == "log":
            assert w.log is not None
            w.log.append(msg[1])
        elif what == "run-finished":
            w.seq += 1
        elif what == "error":
            raise msg[1]
        else:  # "done"
            return


def _child(scn: Process, conn: Connection) -> None:
    w = scn.world
    w.server = _Remote(conn, "server")  # type: ignore[assignment]
    w.server.tracker = _Remote(conn, "tracker", mode=w.tracker.mode)
    w.model = _Remote(conn, "model")  # type: ignore[assignment]
    w.person = _Remote(conn, "person")  # type: ignore[assignment]
    if w.log is not None:
        w.log = _Log(conn)  # type: ignore[assignment]
    scn.hook = _Remote(conn, "point").ask_point  # type: ignore[assignment]
    scn.disk = OsFiles()
    scn.remote = conn
    try:
        scn.run_jobs()
    except BaseException as e:
        conn.send(("error", e))
    else:
        conn.send(("done",))


class _Remote:
    """A stand-in in the parent, seen from the child: every method call is a request."""

    def __init__(self, conn: Connection, target: str, **attrs: Any) -> None:
        self._conn, self._target = conn, target
        self.__dict__.update(attrs)

    def __getattr__(self, method: str) -> Any:
        def call(*args: Any) -> Any:
            if self._target == "server" and method == "call":
                args = (*args[:4], None, *args[5:])  # the hook stays here: the parent puts its own
            self._conn.send(("call", self._target, method, args))
            return self._answer()

        return call

    def ask_point(self, kind: str, detail: str) -> None:
        self._conn.send(("point", kind, detail))
        self._answer()

    def _answer(self) -> Any:
        status, value = self._conn.recv()
        if status == "raise":
            raise value
        return value


class _Log:
    """The timeline, seen from the child: an append is a message."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def append(self, event: tuple[str, str]) -> None:
        self._conn.send(("log", event))
