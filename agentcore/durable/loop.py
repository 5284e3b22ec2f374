"""The durable agent loop: one engine that runs every design in designs.py.

Rules (the crash points are where SEED-MODEL.md puts them; each rule was needed for the chapter's
counts):
- Start: load the checkpoint (a leftover temp file is ignored). If it says done, stop: no point, no
  save. Otherwise save before anything else; the real loop saves "started", settles every marker
  that has no result on the ladder, then saves "settled".
- A turn: resume the checkpoint's open turn, else ask the model (`reply-arrived`) and save the reply
  (with its call IDs) if the design saves replies. A saved reply is never asked for again: a model
  asked again may give other call IDs or other calls (agentcore.standins.model). Run, in order, each call
  without a result. Close the turn with the per-turn save (the five designs; the real loop has
  none: a turn whose calls all have results is closed).
- The final answer: the five designs fire `reply-arrived`, mark the run done and save; the real
  loop hands the answer back with no point and no save (nothing after it can be lost).
- A call that changes something gets an attempt marker (a save, then `marker-saved`) before it runs,
  in designs with markers. The tool server fires `tracker-accepted`; then `tool-returned`. Designs
  that save results save now (`result-saved`).
- A marker without a result, or a changing call that failed mid-call, has an unknown outcome and is
  settled on the ladder (ladder.py) - never "failed, move on", never a blind keyless retry.
- A request the tracker refuses (strict-params: its key was sent with other arguments) has a known
  outcome: it did not happen, and sent again it would be refused again. The refusal is the call's
  result (an error, saved as any result) and the run moves on: no ladder, no retry.
- A call gets at most MAX_ATTEMPTS tries in one process, the fresh one included. When they all fail
  the loop gives up: it tells the tool server (bookkeeping: the scenario counts give-ups) and stops
  with ToolGaveUp, the call unsettled; a new process settles it from the checkpoint (its marker
  stands) with tries of its own (agentcore.harness.scenario bounds those restarts).
- An approval-gated call asks the person under request ID key(run ID, call ID) (`approval-pending`
  while the decision is unsaved), then saves the decision, which is also its attempt marker
  (`decision-saved`); after a crash the same request ID is sent again and the person, who keeps one
  decision per request, is not asked twice. A denied call is recorded as denied and never runs.
- A question to the person carries its grade (ladder.avoidable): whether a key or a lookup would
  have settled it.
- The key of a call is key(run ID, call ID). Each process proposes a run ID of its own; only a
  fresh run takes it and saves it at start: a run ID read from the checkpoint continues its run.
"""

from __future__ import annotations

from typing import Any

from agentcore.crash import Hook, Kind
from agentcore.durable import ladder
from agentcore.durable.checkpoint import Store
from agentcore.durable.designs import Design
from agentcore.durable.keys import key
from agentcore.jobs import Call, Job, Tool
from agentcore.limits import MAX_ATTEMPTS
from agentcore.standins.model import ScriptedModel
from agentcore.standins.person import Person
from agentcore.standins.tools import ToolFailed, ToolServer
from agentcore.standins.tracker import Refused


class ToolGaveUp(Exception):
    """A call kept failing on the ladder; the process stops with the call unsettled."""


class Loop:
    """One run of one process: built fresh after every crash from the checkpoint and the world."""

    def __init__(
        self,
        design: Design,
        job: Job,
        store: Store,
        server: ToolServer,
        model: ScriptedModel,
        person: Person,
        hook: Hook,
        run_id: str,
        seq: int = 0,
        log: list[tuple[str, str]] | None = None,
        process: int = 1,
    ) -> None:
        self.design = design
        self.job = job
        self.store = store
        self.server = server
        self.model = model
        self.person = person
        self.hook = hook
        self.new_run_id = run_id  # this process's proposal: used only when there is no checkpoint
        self.process = process  # this process's number in the scenario (1: the first), for the timeline
        self.seq = seq
        self.log = log
        self.honours_keys = server.tracker.mode == "keyed"
        self.can_lookup = server.tracker.mode == "lookup"
        self.state: dict[str, Any] = {}

    def run(self) -> str | None:
        """Run to the final answer; None if the checkpoint says the run was already done."""
        state = self._start()
        if state is None:
            return None
        if self.design.real_loop:
            turn = self._open_turn()
            if turn is not None:
                unsettled = [c for c in turn["calls"] if c["id"] in turn["markers"] and c["id"] not in turn["results"]]
                if unsettled and self.design.skip_third_restart:
                    self._count_restarts(turn, unsettled)
                for call in unsettled:
                    if self.design.skip_third_restart and turn["restarts"][call["id"]] >= 3:
                        self._record(
                            turn,
                            call["id"],
                            {"error": "poison call: skipped after 3 restarts"},
                            f"{call['tool']} {call['id']}",
                        )
                        continue
                    self._settle(turn, call, self.job.tools[call["tool"]])
            self._save("settled")
        reask = self.design.reask_open_turn
        while True:
            turn = self._open_turn()
            if turn is not None and reask:  # planted bug: the saved reply is not trusted
                self._reask(turn)
            reask = False
            if turn is None:
                n = len(state["turns"])
                reply = self._ask(n)
                if isinstance(reply, str):
                    if self.design.real_loop:
                        return reply
                    self.hook(Kind.REPLY_ARRIVED, f"turn {n + 1}")
                    state["done"] = True
                    state["answer"] = reply
                    self._save("final")
                    return reply
                self.hook(Kind.REPLY_ARRIVED, f"turn {n + 1}")
                turn = {"calls": reply, "results": {}, "markers": [], "closed": False}
                if self.design.approval:
                    turn["approvals"] = {}
                if self.design.tools_before_reply_save:
                    self._run_calls(turn)  # planted bug: the reply is not durable while tools run
                    state["turns"].append(turn)
                    self._save(f"reply turn {n + 1}")
                else:
                    state["turns"].append(turn)
                    if self.design.save_reply:
                        self._save(f"reply turn {n + 1}")
            self._run_calls(turn)
            if self.design.turn_save:
                turn["closed"] = True
                self._save(f"turn {len(state['turns'])}")

    def _ask(self, n: int) -> list[dict[str, Any]] | str:
        """The model's reply for turn `n` (0-based), given the results of the turns before it."""
        results = {cid: r for t in self.state["turns"][:n] for cid, r in t["results"].items()}
        reply = self.model.reply(self.seq, n, results)
        if self.log is not None:
            self._log(
                "model",
                f"turn {n + 1}: "
                + (reply if isinstance(reply, str) else ", ".join(f"{c['tool']} {c['id']}" for c in reply)),
            )
        return reply

    def _reask(self, turn: dict[str, Any]) -> None:
        """Planted bug `reask_open_turn`: the open turn's calls become the model's new reply for it;
        results and markers are kept for the call IDs it gives again (all of them, if the model
        repeats itself exactly), so the new calls run as if never tried."""
        n = len(self.state["turns"]) - 1
        reply = self._ask(n)
        assert not isinstance(reply, str)  # an open turn has calls: the final answer is no turn
        self.hook(Kind.REPLY_ARRIVED, f"turn {n + 1}")
        ids = {c["id"] for c in reply}
        turn["calls"] = reply
        turn["results"] = {cid: r for cid, r in turn["results"].items() if cid in ids}
        turn["markers"] = [cid for cid in turn["markers"] if cid in ids]
        if self.design.save_reply:
            self._save(f"reply turn {n + 1}")

    def _start(self) -> dict[str, Any] | None:
        """Load the checkpoint and save "start"; None if it says the run is done. Only a run ID
        read from the checkpoint continues a run: this process's proposal starts a fresh one."""
        state = self.store.load()
        where = f" (process {self.process})"
        if state is not None and state.get("done"):
            self._log("start", "checkpoint says done: nothing to do" + where)
            return None
        if state is None:
            state = {"run_id": self.new_run_id, "done": False, "turns": []}
            self._log("start", f"fresh run {state['run_id']}{where}")
        else:
            if self.design.proposed_run_id:  # planted bug: the proposal replaces the saved run ID
                state["run_id"] = self.new_run_id
            self._log("start", f"resumed run {state['run_id']} at turn {len(state['turns'])}{where}")
        self.state = state
        self._save("start")
        return state

    def _count_restarts(self, turn: dict[str, Any], unsettled: list[dict[str, Any]]) -> None:
        """Planted bug skip_third_restart: the starts that found each call unsettled, saved."""
        counts = turn.setdefault("restarts", {})
        for call in unsettled:
            counts[call["id"]] = counts.get(call["id"], 0) + 1
        self._save("restarts counted")

    def _open_turn(self) -> dict[str, Any] | None:
        turns = self.state["turns"]
        if not turns:
            return None
        t = turns[-1]
        if t["closed"] or (not self.design.turn_save and len(t["results"]) == len(t["calls"])):
            return None
        return t

    def _run_calls(self, turn: dict[str, Any]) -> None:
        for call in turn["calls"]:
            cid = call["id"]
            if cid in turn["results"]:
                continue
            tool = self.job.tools[call["tool"]]
            if cid in turn["markers"]:
                self._settle(turn, call, tool)
            else:
                self._fresh(turn, call, tool)

    def _fresh(self, turn: dict[str, Any], call: dict[str, Any], tool: Tool) -> None:
        cid = call["id"]
        detail = f"{tool.name} {cid}"
        changing = not tool.read_only
        if changing and self.design.approval and not self._approved(turn, call, detail):
            return
        marked = changing and self.design.markers and not self.design.approval
        if marked and not self.design.marker_after_call:
            self._mark(turn, cid, detail)
        try:
            result = self._invoke(call, tool, detail)
        except ToolFailed as e:
            self.hook(Kind.TOOL_FAILED, detail)
            self._log("tool", f"{detail} failed: {e}")
            if self.design.skip_failed:  # planted bug: an unknown outcome taken for "did not happen"
                self._record(turn, cid, {"error": str(e)}, detail)
            else:
                self._settle(turn, call, tool, failures=1)
            return
        if marked and self.design.marker_after_call:  # planted bug: the marker comes too late
            self._mark(turn, cid, detail)
        self._record(turn, cid, result, detail)

    def _settle(self, turn: dict[str, Any], call: dict[str, Any], tool: Tool, failures: int = 0) -> None:
        """Settle a call of unknown outcome on the ladder; `failures`: its failed tries in this process."""
        cid = call["id"]
        detail = f"{tool.name} {cid}"
        k = self._key(tool, cid)
        facts = (
            tool.read_only,
            tool.idempotent,
            k is not None and self.honours_keys,
            k is not None and tool.lookup and self.can_lookup,
        )
        rung = ladder.choose(*facts)
        self._log("ladder", f"{detail}: unknown outcome -> {rung}")
        for _ in range(MAX_ATTEMPTS - failures):
            try:
                if rung is not ladder.Rung.RERUN:
                    if rung is ladder.Rung.LOOKUP:
                        assert k is not None
                        answer = self.server.tracker.lookup(k)
                        self.hook(Kind.LOOKUP_ANSWERED, detail)
                    else:
                        answer = self.person.did_it_happen(
                            (self.seq, cid), _call(call), k, ladder.why(*facts), ladder.avoidable(tool.sends_key)
                        )
                    self._log(
                        "ladder",
                        f"{detail}: {rung} says " + ("it happened" if answer is not None else "it did not happen"),
                    )
                    if answer is not None:
                        if self.design.happened_without_result:  # planted bug: the answer is dropped
                            answer = {"confirmed": True}
                        self._record(turn, cid, answer, detail)
                        return
                result = self._invoke(call, tool, detail, retry=True)
            except ToolFailed as e:
                self.hook(Kind.TOOL_FAILED, detail)
                self._log("tool", f"{detail} failed again: {e}")
                failures += 1
                if self.design.retry_once and failures >= 2:  # planted bug: gives up, taking it for "failed"
                    self._record(turn, cid, {"error": str(e)}, detail)
                    return
                continue
            self._record(turn, cid, result, detail)
            return
        self.server.give_up((self.seq, cid))
        if self.design.skip_given_up:  # planted bug: "failed, move on", the call's effect left unknown
            self._log("tool", f"{detail}: failed {MAX_ATTEMPTS} times, recorded as failed")
            self._record(turn, cid, {"error": f"failed {MAX_ATTEMPTS} times"}, detail)
            return
        raise ToolGaveUp(f"{detail}: failed {MAX_ATTEMPTS} times in this process")

    def _approved(self, turn: dict[str, Any], call: dict[str, Any], detail: str) -> bool:
        # The request needs no save of its own: its ID, key(run ID, call ID), is already durable
        # with the reply, and the person keeps one decision per request ID. The saved decision is
        # the call's attempt marker.
        cid = call["id"]
        approvals = turn["approvals"]
        if cid not in approvals:
            # planted bug approval_id_reused: the call ID alone, which the next job run sends again
            request = cid if self.design.approval_id_reused else key(self.state["run_id"], cid)
            ok = self.person.approve(request, _call(call), (self.seq, cid))
            self.hook(Kind.APPROVAL_PENDING, detail)
            approvals[cid] = "approved" if ok else "denied"
            if ok:
                turn["markers"].append(cid)
            self._save(f"decision {detail}")
            self.hook(Kind.DECISION_SAVED, detail)
            self._log("approval", f"{detail}: {approvals[cid]}")
        if approvals[cid] == "denied" and not self.design.denied_still_runs:  # planted bug: it runs anyway
            self._record(turn, cid, {"denied": True}, detail)
            return False
        return True

    def _mark(self, turn: dict[str, Any], cid: str, detail: str) -> None:
        turn["markers"].append(cid)
        self._save(f"marker {detail}")
        self.hook(Kind.MARKER_SAVED, detail)

    def _invoke(self, call: dict[str, Any], tool: Tool, detail: str, retry: bool = False) -> dict[str, Any]:
        k = self._key(tool, call["id"])
        args = call["args"]
        if retry and self.design.retry_edits_args:  # planted bug: a retry is another request under the key
            args = {**args, "retry": True}
        if self.log is not None:
            self._log("tracker", f"request {detail} {args}" + (f" key {k}" if k else ""))
        try:
            result = self.server.call(tool, args, k, (self.seq, call["id"]), self.hook, detail)
        except Refused as e:
            result = {"error": f"refused: {e}"}
        if self.log is not None:
            self._log("tracker", f"answer {detail} {result}")
        self.hook(Kind.TOOL_RETURNED, detail)
        return result

    def _record(self, turn: dict[str, Any], cid: str, result: dict[str, Any], detail: str) -> None:
        turn["results"][cid] = result
        if self.design.save_results:
            self._save(f"result {detail}")
            self.hook(Kind.RESULT_SAVED, detail)

    def _key(self, tool: Tool, cid: str) -> str | None:
        return key(self.state["run_id"], cid) if self.design.keys and tool.sends_key else None

    def _save(self, what: str) -> None:
        self._log("save", what)
        self.store.save(self.state, what)

    def _log(self, kind: str, text: str) -> None:
        if self.log is not None:
            self.log.append((kind, text))


def _call(call: dict[str, Any]) -> Call:
    return Call(call["id"], call["tool"], call["args"])
