"""The loop designs the sweep compares, as data: one engine (loop.py) runs them all.

Rules: the first five are the chapter's simplified designs, each keeping the per-turn save and
ending with a done save; the real loop has no per-turn save and returns its final answer without a
save, saves twice at start ("started", then "pending calls settled") and settles pending markers in
between. The two harder situations are the real loop with a flaky tool server or an approval gate.
The last, `once-per-turn-keys` (save once per turn, with keys), is not in the chapter's table: it
shows that keys made of call IDs cannot stop a doubled effect when a model asked again about a turn
gives fresh ones.
Planted bugs are flags too, so a test can show that the sweep catches each of them; the last four
(`STORE_BUGS`) are bugs of the checkpoint store the design saves through. A design's `sound` self has
none (agentcore.checker.effects checks effects against its uninterrupted run).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from agentcore.errors import ConfigError


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
    # failed and the run moves on. Under the chapter's tool faults (`first`: the flaky server fails a
    # call's first attempt only) only a tracker that can crash fails a retry in the same process.
    retry_once: bool = False
    # Giving up on a call (MAX_ATTEMPTS tries failed in one process) records it as failed and moves on
    # instead of stopping: seen only when a tool fails MAX_ATTEMPTS times (tool faults k:N, always).
    skip_given_up: bool = False
    reuse_run_id: bool = False
    # A retry flags itself in the request ("retry": true added to the arguments, as some clients do)
    # under the same key: a tracker that honours keys answers it from the first request, so only one
    # that compares a key's arguments (tracker fault strict-params) refuses it, and the loop moves on
    # with an error where the first request had succeeded. (Where the first request never reached
    # the tracker, the retry makes the effect, flag and all: no count of the table shows that.)
    retry_edits_args: bool = False
    proposed_run_id: bool = False  # takes its process's proposed run ID over the checkpoint's
    # When the ladder hears "it happened" (a lookup or the person) it records a bare confirmation
    # instead of the call's answer: a later call built on that result (the comment on the issue) goes
    # to issue None, an effect that exists but is wrong (agentcore.checker.effects). Only a ladder that asks
    # or looks up hears "it happened": a keyed tracker's reruns never do.
    happened_without_result: bool = False
    # approval gate: a call the person denied runs anyway (only a person who denies can catch it)
    denied_still_runs: bool = False
    # approval gate: the approval request ID is the call ID alone, so the next job run's request is
    # one the person already decided (only a person who denies, over two job runs, can catch it)
    approval_id_reused: bool = False
    # On restart asks the model again for the open turn instead of running the saved reply's calls
    # (what it already holds is kept for the call IDs the model gives again). A model that repeats
    # itself hides it (extra model calls only); one that gives fresh call IDs doubles effects.
    reask_open_turn: bool = False
    # A poison-call guard: each start that finds a call unsettled counts it in the checkpoint, and the
    # third restart to find it so takes it for a call that crashes the loop and records it as failed
    # without settling it. Only three crashes inside one call reach that count: a depth-3 sweep.
    skip_third_restart: bool = False
    # planted bugs of the checkpoint store (agentcore.durable.checkpoint)
    write_in_place: bool = False  # writes the checkpoint itself, no temp file and no rename
    remove_then_rename: bool = False  # removes the old checkpoint before renaming the new one over it
    skip_file_fsync: bool = False  # renames the temp file without syncing it first
    skip_dir_fsync: bool = False  # never syncs the folder after the rename


_LOOP = Design(
    "loop", "real loop", save_reply=True, keys=True, markers=True, save_results=True, turn_save=False, real_loop=True
)

DESIGNS: dict[str, Design] = {
    d.name: d
    for d in (
        Design("once-per-turn", "save once per turn", False, False, False, False, True),
        Design("after-reply", "save after the reply", True, False, False, True, True),
        Design("keys", "+ idempotency keys", True, True, False, True, True),
        Design("markers", "+ attempt markers, no keys", True, False, True, True, True),
        Design("keys-and-markers", "keys and markers", True, True, True, True, True),
        _LOOP,
        replace(_LOOP, name="tool-fails", title="tool fails after accept", flaky=True),
        replace(_LOOP, name="approval-gate", title="approval gate", approval=True),
        Design("once-per-turn-keys", "save once per turn, with keys", False, True, False, False, True),
    )
}

BUGS = (
    "tools_before_reply_save",
    "marker_after_call",
    "skip_failed",
    "retry_once",
    "reuse_run_id",
    "proposed_run_id",
    "happened_without_result",
    "retry_edits_args",
    "skip_given_up",
    "denied_still_runs",
    "approval_id_reused",
    "reask_open_turn",
    "skip_third_restart",
    "write_in_place",
    "remove_then_rename",
    "skip_file_fsync",
    "skip_dir_fsync",
)
STORE_BUGS = ("write_in_place", "remove_then_rename", "skip_file_fsync", "skip_dir_fsync")


def get(name: str, bugs: tuple[str, ...] = ()) -> Design:
    """A design by name, optionally with planted bugs (for tests of the sweep itself)."""
    if name not in DESIGNS:
        raise ConfigError(f"unknown design {name!r} (choose from {', '.join(DESIGNS)})")
    for bug in bugs:
        if bug not in BUGS:
            raise ConfigError(f"unknown bug {bug!r} (choose from {', '.join(BUGS)})")
    d = DESIGNS[name]
    return replace(d, name=d.name + "".join(f"+{b}" for b in bugs), **{b: True for b in bugs}) if bugs else d


def sound(design: Design) -> Design:
    """The design without its planted bugs (named as the design it plants them in)."""
    if not any(getattr(design, b) for b in BUGS):
        return design
    return replace(design, name=design.name.split("+")[0], **dict.fromkeys(BUGS, False))
