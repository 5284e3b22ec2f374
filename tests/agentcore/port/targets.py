"""Targets the port's tests sweep: each misbehaves in one way a user's loop can."""

from __future__ import annotations

import os
import socket
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
