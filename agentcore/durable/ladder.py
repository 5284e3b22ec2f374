"""The resolution ladder: settling a call whose outcome is unknown.

Rules: a call has an unknown outcome when its attempt marker was saved and its result was not (a
crash in between), or when a changing call failed mid-call. Settle it on the first rung that fits:
1. RERUN when a repeat is harmless: the tool is read-only or idempotent, or the call carries a key
   to a tracker that honours keys (it answers a repeat with the first answer).
2. LOOKUP when the tracker can be asked whether the request with this key happened.
3. ASK the person, who can look.
After a lookup or an answer: if it happened, its answer becomes the call's result without calling
again; if not, the call is made again (no new marker: the old one still stands).
Every ASK is graded: avoidable when a key or a lookup would have settled it (the tool can send a
key: sent to a tracker that honours keys it makes a repeat harmless, and a tracker that answers
lookups can say whether it happened), whatever this design and tracker did with it; necessary
when nothing else could (the tool sends no key: a repeat may double, and a lookup goes by key).
"""

from __future__ import annotations

from enum import StrEnum


class Rung(StrEnum):
    RERUN = "rerun"
    LOOKUP = "lookup"
    ASK = "ask"


def choose(read_only: bool, idempotent: bool, key_honoured: bool, can_lookup: bool) -> Rung:
    if read_only or idempotent or key_honoured:
        return Rung.RERUN
    if can_lookup:
        return Rung.LOOKUP
    return Rung.ASK


def why(read_only: bool, idempotent: bool, key_honoured: bool, can_lookup: bool) -> str:
    """What the ladder tried before the rung it chose, for the person being asked."""
    if read_only or idempotent or key_honoured:
        return "a repeat is harmless"
    tried = "rerun refused: the call changes something, is not idempotent and carries no key the tracker honours"
    if can_lookup:
        return tried
    return tried + "; lookup refused: the tracker cannot say whether a request happened"


def avoidable(sends_key: bool) -> bool:
    """The grade of an ASK about a call of a tool that can (or cannot) send a key: True for
    avoidable, False for necessary (the module says why the key alone decides)."""
    return sends_key
