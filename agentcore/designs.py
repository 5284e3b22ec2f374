"""The loop designs the sweep compares, as data: one engine (loop.py) runs them all.

Rules: the first five are the chapter's simplified designs, each keeping the per-turn save and
ending with a done save; the real loop has no per-turn save and returns its final answer without a
save, saves twice at start ("started", then "pending calls settled") and settles pending markers in
between. The two harder situations are the real loop with a flaky tool server or an approval gate.
The last, `once-per-turn-keys` (save once per turn, with keys), is not in the chapter's table: it
shows that keys made of call IDs cannot stop a doubled effect when a model asked again about a turn
gives fresh ones.
Planted bugs are flags too, so a test can show that the sweep catches each of them; the last four
(`STORE_BUGS`) are bugs of the checkpoint store the design saves through.
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True, slots=True)
class Design:
    name: str
    title: str
    save_reply: bool
    keys: bool
    markers: bool
    save_results: bool
    turn_save: bool
    real_loop: bool = False  # two start saves, settle at start, final answer unsaved
    flaky: bool = False
    approval: bool = False
    # planted bugs
    tools_before_reply_save: bool = False
    marker_after_call: bool = False
    skip_failed: bool = False
    # Settling retries a failed call once: a second failure of the call in one process is recorded as
    # failed and the run moves on. Only a tracker that can crash fails a retry in the same process
    # (the flaky server fails a call's first attempt only), so only that sweep can catch it.
    retry_once: bool = False
    reuse_run_id: bool = False
    proposed_run_id: bool = False  # takes its process's proposed run ID over the checkpoint's
    # On restart asks the model again for the open turn instead of running the saved reply's calls
    # (what it already holds is kept for the call IDs the model gives again). A model that repeats
    # itself hides it (extra model calls only); one that gives fresh call IDs doubles effects.
    reask_open_turn: bool = False
    # planted bugs of the checkpoint store (agentcore.checkpoint)
    write_in_place: bool = False  # writes the checkpoint itself, no temp file and no rename
    remove_then_rename: bool = False  # removes the old checkpoint before renaming the new one over it
    skip_file_fsync: bool = False  # renames the temp file without syncing it first
    skip_dir_fsync: bool = False  # never syncs the folder after the rename


_LOOP = Design("loop", "real loop", save_reply=True, keys=True, markers=True, save_results=True,
               turn_save=False, real_loop=True)

DESIGNS: dict[str, Design] = {d.name: d for d in (
    Design("once-per-turn", "save once per turn", False, False, False, False, True),
    Design("after-reply", "save after the reply", True, False, False, True, True),
    Design("keys", "+ idempotency keys", True, True, False, True, True),
    Design("markers", "+ attempt markers, no keys", True, False, True, True, True),
    Design("keys-and-markers", "keys and markers", True, True, True, True, True),
    _LOOP,
    replace(_LOOP, name="tool-fails", title="tool fails after accept", flaky=True),
    replace(_LOOP, name="approval-gate", title="approval gate", approval=True),
    Design("once-per-turn-keys", "save once per turn, with keys", False, True, False, False, True),
)}

BUGS = ("tools_before_reply_save", "marker_after_call", "skip_failed", "retry_once", "reuse_run_id",
        "proposed_run_id", "reask_open_turn", "write_in_place", "remove_then_rename", "skip_file_fsync",
        "skip_dir_fsync")
STORE_BUGS = ("write_in_place", "remove_then_rename", "skip_file_fsync", "skip_dir_fsync")


def get(name: str, bugs: tuple[str, ...] = ()) -> Design:
    """A design by name, optionally with planted bugs (for tests of the sweep itself)."""
    if name not in DESIGNS:
        raise ValueError(f"unknown design {name!r} (choose from {', '.join(DESIGNS)})")
    for bug in bugs:
        if bug not in BUGS:
            raise ValueError(f"unknown bug {bug!r} (choose from {', '.join(BUGS)})")
    d = DESIGNS[name]
    return replace(d, name=d.name + "".join(f"+{b}" for b in bugs), **{b: True for b in bugs}) if bugs else d
