"""The fork server: runs in the target's own interpreter, imports the target once, and plays each
scenario it is sent by forking one child per process of it, holding the world itself.

Rules:
- Protocol on stdin/stdout, one JSON object per line: the server first says hello (its Python, the
  target, the versions of the distributions the target imported, whether children run without
  network); then each request {"plan": [label, ...], "seed": N (optional: the server's)}
  gets one outcome (`play`'s; its `threads`: how many threads of the last process met points).
  Nothing else is written to stdout: a child's stdout goes to stderr.
- The world of a scenario (the scripted model, the tracker stand-in with its fault: ttl:N or
  strict-params, never crash, as this process is not crashed; the scripted person, truthful, wrong:P
  or adversarial, asked "did it happen?" only) is made fresh for it and lives here, in the server: a
  crash loses only what the child held. The child asks for every model reply, tool call, person's
  answer and point over its socket, and the server names each point
  (agentcore.port.labels) and answers "die" at the plan's label for that process. So a reply
  dies after the model was paid, an effect after the tracker recorded it, a put after the file is
  in place: the points where a crash loses or doubles something.
- Start nothing in this process but the import: a runtime's threads do not survive fork.
- Bounds: each process of a scenario gets `timeout` seconds (then SIGKILL and the outcome
  `hung`), an address-space cap, and a fresh folder per scenario (removed after). Where the
  machine allows a network namespace the child has no network (`network` in the hello says which),
  so a tool that bypasses the stand-ins cannot reach the world.
"""

from __future__ import annotations

import ctypes
import importlib
import json
import os
import resource
import select
import shutil
import signal
import socket
import sys
import tempfile
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agentcore.jobs import Job
from agentcore.port.handle import CRASHED, Channel, Handle
from agentcore.port.labels import Labeller, detail_text
from agentcore.standins.model import ScriptedModel, job_origin
from agentcore.standins.person import ScriptedPerson
from agentcore.standins.tracker import Refused, Tracker

THREAD_ID = "thread-1"  # the one job run's identity
_CLONE_NEWUSER, _CLONE_NEWNET = 0x10000000, 0x40000000
Target = Callable[[Handle], Any]


def load_target(name: str) -> Target:
    """`package.module:attribute` -> the callable; a clear error for a bad name."""
    module, sep, attribute = name.partition(":")
    if not (sep and module and attribute):
        raise ValueError(f"a target is package.module:attribute, not {name!r}")
    try:
        obj: Any = importlib.import_module(module)
    except ImportError as e:
        raise ValueError(f"target {name}: cannot import {module} ({e})") from None
    for part in attribute.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"target {name}: {module} has no attribute {attribute}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ValueError(f"target {name} is not callable")
    return obj


def isolate_network() -> str:
    """Leave the network in this process ("" on success, else why not)."""
    libc = ctypes.CDLL(None, use_errno=True)
    for flags in (_CLONE_NEWNET, _CLONE_NEWUSER | _CLONE_NEWNET):
        if libc.unshare(flags) == 0:
            return ""
    return os.strerror(ctypes.get_errno())


def probe_network() -> str:
    """ "isolated" when a child can leave the network here, else "not isolated: why"."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.write(w, isolate_network().encode()[:200])
        os._exit(0)
    os.close(w)
    why = os.read(r, 200).decode()
    os.close(r)
    os.waitpid(pid, 0)
    return f"not isolated: {why}" if why else "isolated"


@dataclass
class World:
    """One scenario's world: the model and the tracker, fresh per scenario."""

    job: Job
    model: ScriptedModel
    tracker: Tracker = field(default_factory=lambda: Tracker("keyed"))
    person: ScriptedPerson | None = None

    @classmethod
    def fresh(
        cls, job: Job, model: str, seed: int, tracker_fault: str = "none", person_faults: str = "truthful"
    ) -> World:
        tracker = Tracker("keyed", tracker_fault)
        person = ScriptedPerson(tracker, person_faults, seed)
        return cls(job, ScriptedModel(job, model, seed, effect=tracker.find), tracker, person)


def answer(world: World, message: dict[str, Any]) -> tuple[dict[str, Any], tuple[str, str] | None]:
    """The server's answer to one child message and the point it is, as (kind, detail), if any."""
    op = message.get("op")
    if op == "ask":
        turn = int(message["turn"])
        return {"reply": world.model.reply(0, turn, message.get("results") or {})}, ("reply", f"turn={turn}")
    if op == "point":
        return {}, (str(message["kind"]), str(message.get("detail", "")))
    if op == "tool":
        return _tool(world, message)
    if op == "person" and world.person is not None:
        origin = job_origin((0, str(message["call_id"])))
        return {"result": world.person.did_it_happen(origin, None, None, "asked by the target")}, None
    return {"error": f"unknown request {op!r}"}, None


def _tool(world: World, m: dict[str, Any]) -> tuple[dict[str, Any], tuple[str, str] | None]:
    tool = world.job.tools.get(m.get("tool"))
    if tool is None:
        return {"error": f"no tool {m.get('tool')!r} in job {world.job.name}"}, None
    args = m.get("args") or {}
    if tool.op == "search":
        return {"result": world.tracker.search(args)}, None
    words = [repr(args[k]) for k in sorted(args) if isinstance(args[k], str)]
    try:
        result = world.tracker.request(
            tool.op, args, m.get("key"), job_origin((0, str(m["call_id"]))), lambda *_: None, tool.name
        )
    except Refused as e:
        return {"error": str(e)}, None
    return {"result": result}, ("effect", detail_text(tool.name, *words[:1]))


class Server:
    """Plays scenarios of one target on one job; see the module's rules."""

    def __init__(
        self,
        target: Target,
        job: Job,
        *,
        model: str = "fresh-ids",
        seed: int = 0,
        timeout: float = 30.0,
        memory: int = 2 << 30,
        network: bool = True,
        tracker_fault: str = "none",
        person_faults: str = "truthful",
    ) -> None:
        if tracker_fault.partition(":")[0] == "crash":
            raise ValueError("the tracker stand-in lives in the fork server, which is never crashed: no fault crash")
        if person_faults.partition(":")[0] == "deny":
            raise ValueError("the port's person answers 'did it happen?' only: it decides no approvals (no deny:P)")
        World.fresh(job, model, seed, tracker_fault, person_faults)  # an unknown fault: ConfigError now
        self.target, self.job, self.model, self.seed = target, job, model, seed
        self.tracker_fault, self.person_faults = tracker_fault, person_faults
        self.timeout, self.memory = timeout, memory
        self.network = probe_network() if network else "not isolated: not asked"

    def play(self, plan: list[str], seed: int | None = None) -> dict[str, Any]:
        """One scenario: the processes of `plan`, then one to the end; what each met and the world after.
        `seed`: the world's seed for this scenario (a sampled sweep's pass), else the server's."""
        world = World.fresh(
            self.job, self.model, self.seed if seed is None else seed, self.tracker_fault, self.person_faults
        )
        workdir = tempfile.mkdtemp(prefix="agentcore-port-")
        out: dict[str, Any] = {
            "plan": plan,
            "labels": [],
            "status": "done",
            "missed": False,
            "error": "",
            "final": None,
            "threads": 1,
        }
        try:
            for process in range(1, len(plan) + 2):
                crash_at = plan[process - 1] if process <= len(plan) else None
                status, labels, said = self._process(world, process, crash_at, workdir)
                out["labels"].append(labels)
                if status == "finished" and crash_at is not None:
                    out["missed"] = True  # its label never came: the scenario ends with this process
                if status != "crashed":
                    out["status"] = "done" if status == "finished" else status
                    out["final"], out["error"] = said.get("final"), said.get("error", "")
                    out["threads"] = said.get("threads", 1)  # how many threads met the last process's points
                    break
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        out["tracker"] = world.tracker.snapshot()
        out["model_calls"] = world.model.calls
        out["asks"] = world.person.asks if world.person else 0
        return out

    def _process(
        self, world: World, process: int, crash_at: str | None, workdir: str
    ) -> tuple[str, list[str], dict[str, Any]]:
        """Run one child to its end: ("finished" | "crashed" | "failed" | "hung", its labels, its last word)."""
        ours, theirs = socket.socketpair()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            ours.close()
            self._child(theirs, process, workdir)
        theirs.close()
        labeller, said, status = Labeller(), {}, "failed"
        rfile, wfile = ours.makefile("r", encoding="utf-8"), ours.makefile("w", encoding="utf-8")
        try:
            while True:
                if not select.select([ours], [], [], self.timeout)[0]:
                    os.kill(pid, signal.SIGKILL)
                    status = "hung"
                    break
                line = rfile.readline()
                if not line:
                    break  # the child is gone: a crash answered "die", or it died by itself
                message = json.loads(line)
                if message.get("op") in ("done", "error"):
                    said = message
                    status = "finished" if message["op"] == "done" else "failed"
                    break
                reply, point = answer(world, message)
                if point is not None and labeller.name(*point) == crash_at:
                    reply = {"die": True}
                    status = "crashed"
                wfile.write(json.dumps(reply) + "\n")
                wfile.flush()
        finally:
            rfile.close()
            wfile.close()
            ours.close()
            _, code = os.waitpid(pid, 0)
        if status == "failed" and not said:
            said = {"error": f"the process ended without finishing (wait status {code})"}
        if status == "crashed" and os.waitstatus_to_exitcode(code) != CRASHED:
            status, said = "failed", {"error": f"the process did not die at its point (wait status {code})"}
        return status, labeller.labels, said

    def _child(self, sock: socket.socket, process: int, workdir: str) -> None:
        code = 1
        try:
            os.dup2(2, 1)  # stdout is the protocol's: a target's prints go to stderr
            sys.stdout = sys.stderr
            resource.setrlimit(resource.RLIMIT_AS, (self.memory, self.memory))
            if self.network == "isolated":
                isolate_network()
            channel = Channel(sock.makefile("r", encoding="utf-8"), sock.makefile("w", encoding="utf-8"))
            try:
                final = self.target(Handle(channel, thread_id=THREAD_ID, process=process, workdir=workdir))
                done = {"op": "done", "final": None if final is None else str(final), "threads": len(channel.threads)}
                channel.wfile.write(json.dumps(done) + "\n")
                code = 0
            except Exception as e:  # the target's own failure: reported, the scenario ends
                line = traceback.format_exception_only(type(e), e)[-1].strip()
                channel.wfile.write(json.dumps({"op": "error", "error": line}) + "\n")
            channel.wfile.flush()
        finally:
            os._exit(code)


def imported_versions() -> dict[str, str]:
    """The installed distributions whose packages this process has imported, with their versions: what
    a row of the target's sweep was measured on (its runtime's, once the target is imported)."""
    from importlib import metadata

    owners = metadata.packages_distributions()
    modules = list(sys.modules.values())
    names = {d for top in {m.partition(".")[0] for m in list(sys.modules)} for d in owners.get(top, ())}
    # A namespace package (langgraph.*) is shared by several distributions: those count whose own
    # files were imported, not every one installed under the name.
    shared = {d for ds in owners.values() if len(ds) > 1 for d in ds}
    loaded = {os.path.realpath(f) for m in modules if isinstance(f := getattr(m, "__file__", None), str)}
    found = {}
    for name in sorted(names, key=str.lower):
        try:
            if name in shared and not _imported_from(metadata.distribution(name), loaded):
                continue
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:  # a package owned by no installed distribution's record
            continue
    return found


def _imported_from(dist: Any, loaded: set[str]) -> bool:
    return any(os.path.realpath(str(dist.locate_file(f))) in loaded for f in dist.files or () if f.suffix == ".py")


def serve(server: Server, target_name: str, rfile: Any = None, wfile: Any = None) -> None:
    """The protocol loop: hello, then one outcome per request line, until stdin ends."""
    rfile, wfile = rfile or sys.stdin, wfile or sys.stdout
    hello = {
        "ready": True,
        "target": target_name,
        "python": sys.version.split()[0],
        "network": server.network,
        "versions": imported_versions(),
    }
    wfile.write(json.dumps(hello) + "\n")
    wfile.flush()
    for line in rfile:
        request = json.loads(line)
        wfile.write(json.dumps(server.play(list(request["plan"]), request.get("seed"))) + "\n")
        wfile.flush()
