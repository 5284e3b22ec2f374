"""An agent loop in plain Python, swept through agentcore's port (four targets: one planted bug each in
the first two).

    python -m agentcore sweep --target examples.plain_loop:naive
    python -m agentcore sweep --target examples.plain_loop:keyed_late
    python -m agentcore sweep --target examples.plain_loop:keyed
    python -m agentcore sweep --target examples.plain_loop:asking --person-faults wrong:0.3

The loop asks the model for a turn, runs its tool calls, saves each result, and closes the turn.
- `naive` sends no idempotency key: a crash after a tool acted and before its result was saved
  makes the restart act again (a duplicate).
- `keyed_late` sends the chapter's key (thread ID, tool-call ID) but saves the model's reply only
  with the turn's results: a restart mid-turn asks the model again, a real model answers with new
  tool-call IDs, and the key changes with them. Swept with `--model fixed` (a model that repeats its
  IDs) it looks clean: the bug only a fresh-IDs model shows.
- `keyed` saves the reply before running any of its calls: the key's call ID is durable before the
  tool acts, so every restart sends the same key.
- `asking` sends no key (a tracker that takes none): it saves the reply, then an attempt marker
  before each call, and a restart that finds a marker without a result asks the person "did it
  happen?" (the chapter's last rung) instead of calling again. Clean with a truthful person; a wrong
  or lying one makes it double or lose, which the audit counts as the world's, not the loop's.
"""

from __future__ import annotations

from typing import Any

from agentcore.port import Handle


def loop(handle: Handle, *, keyed: bool, save_reply: bool, asks: bool = False) -> str:
    state: dict[str, Any] = handle.store.load() or {"turn": 0, "reply": None, "results": {}, "tried": []}
    while True:
        turn, reply = state["turn"], state["reply"]
        if reply is None:
            reply = handle.model.ask(turn, state["results"])
            if isinstance(reply, str):
                return reply
            if save_reply:
                state["reply"] = reply
                handle.store.save(state, f"reply turn={turn}")
        for call in reply:
            if call["id"] in state["results"]:
                continue
            result = handle.person.did_it_happen(call["id"]) if call["id"] in state["tried"] else None
            if result is None:
                if asks:  # the attempt marker: a restart that finds it asks before calling again
                    state["tried"].append(call["id"])
                    handle.store.save(state, f"tried {call['id']}")
                key = handle.key(call["id"]) if keyed else None
                result = handle.tools.call(call["tool"], call["args"], call_id=call["id"], key=key)
            state["results"][call["id"]] = result
            handle.store.save(state, f"result {call['id']}")
        state["turn"], state["reply"] = turn + 1, None
        handle.store.save(state, f"turn={turn} closed")


def naive(handle: Handle) -> str:
    return loop(handle, keyed=False, save_reply=False)


def keyed_late(handle: Handle) -> str:
    return loop(handle, keyed=True, save_reply=False)


def keyed(handle: Handle) -> str:
    return loop(handle, keyed=True, save_reply=True)


def asking(handle: Handle) -> str:
    return loop(handle, keyed=False, save_reply=True, asks=True)
