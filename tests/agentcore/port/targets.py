"""Targets the port's tests sweep: each misbehaves in one way a user's loop can."""

from __future__ import annotations

import os
import random
import socket
import threading
import time

from agentcore.port import Handle
from examples.plain_loop import keyed


def shifting(handle: Handle) -> str:
    """Names a point by its process ID: no two runs meet the same labels."""
    handle.point("step", f"pid={os.getpid()}")
    return keyed(handle)


def hangs_on_restart(handle: Handle) -> str:
    if handle.process > 1:
        time.sleep(3600)
    return keyed(handle)


def fails_on_restart(handle: Handle) -> str:
    if handle.process > 1:
        raise RuntimeError("the checkpoint is not what I wrote")
    return keyed(handle)


def prints(handle: Handle) -> str:
    print("a target's chatter on stdout\n" * 100)
    return keyed(handle)


def reaches_out(handle: Handle) -> str:
    """Tries the machine's PostgreSQL port from the child: its final answer says whether it could."""
    try:
        socket.create_connection(("127.0.0.1", 5432), timeout=2).close()
        reached = "reached the network"
    except OSError as e:
        reached = f"no network ({type(e).__name__})"
    keyed(handle)
    return reached


def threaded(handle: Handle) -> str:
    """Runs a turn's calls in threads that finish in a random order (as LangGraph's ToolNode may),
    keyed and with the reply saved first: its points' order changes from run to run. With
    THREADED_FLIP naming a file, each process flips the order the last one used (never the same
    order twice running, so a test knows the two uninterrupted runs differ)."""
    state = handle.store.load() or {"turn": 0, "reply": None, "results": {}}
    lock = threading.Lock()
    flip = os.environ.get("THREADED_FLIP")
    if flip:
        last = open(flip).read() if os.path.exists(flip) else "0"  # noqa: SIM115 - one read
        with open(flip, "w") as f:
            f.write("1" if last == "0" else "0")
    late = {}

    def run(call: dict) -> None:
        wait = late.get(call["id"])
        time.sleep(wait if wait is not None else random.SystemRandom().uniform(0, 0.005))
        result = handle.tools.call(call["tool"], call["args"], call_id=call["id"], key=handle.key(call["id"]))
        with lock:
            state["results"][call["id"]] = result
            handle.store.save(state, f"result {call['tool']}")

    while True:
        turn, reply = state["turn"], state["reply"]
        if reply is None:
            reply = handle.model.ask(turn, state["results"])
            if isinstance(reply, str):
                return reply
            state["reply"] = reply
            handle.store.save(state, f"reply turn={turn}")
        if flip:
            for i, c in enumerate(reply):
                late[c["id"]] = 0.02 * (i if last == "0" else len(reply) - i)
        threads = [threading.Thread(target=run, args=(c,)) for c in reply if c["id"] not in state["results"]]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        state["turn"], state["reply"] = turn + 1, None
        handle.store.save(state, f"turn={turn} closed")
