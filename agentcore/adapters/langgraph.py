"""LangGraph over the port: a chat model and tools over the handle's, a saver whose writes are points,
and the run of a graph that resumes as LangGraph resumes.

Rules:
- The chat model is the port's scripted model: the turn it is asked about is the number of AI
  messages the conversation holds, the results it fills arguments from are the tool messages'. A
  repeated ask gets fresh tool-call IDs unless the sweep says `--model fixed`.
- A tool sends the chapter's key of (thread ID, tool-call ID) when the target is keyed; the tool
  call ID comes from LangGraph (InjectedToolCallId).
- The saver's `put`, `put_writes` (and their async twins) are wrapped on the instance with
  functools.wraps (LangGraph reads put_writes' signature for `task_path`; a bare wrapper loses it).
  A put's detail is its step (`metadata["step"]`), a put_writes' the task's node and the channels it
  writes: names a reordering runtime keeps (never a position).
- Resume: `invoke(None, cfg)` when the saver holds a checkpoint of the thread, else the input.
- The saver is a SqliteSaver in the scenario's folder, or, with AGENTCORE_LANGGRAPH_POSTGRES set to
  a PostgreSQL URL (a throwaway database: nothing is dropped), a PostgresSaver in a schema of its
  own per scenario (named from the scenario's folder, so a restart finds its process's saves;
  emptied by the scenario's first process).
  PostgresSaver is imported where the fork server imports the target (its version is in the rows;
  no child pays the import) and connects in the child (a forked connection is never shared).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Callable, Sequence
from typing import Annotated, Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool
from langgraph.checkpoint.sqlite import SqliteSaver
from pydantic import ConfigDict, create_model

from agentcore.jobs import Job
from agentcore.port import Handle, instrument

POSTGRES = "AGENTCORE_LANGGRAPH_POSTGRES"
if os.environ.get(POSTGRES):
    from langgraph.checkpoint.postgres import PostgresSaver

VERSIONS = {
    "langgraph": "1.2.24",
    "langgraph-checkpoint": "4.3.2",
    "langgraph-checkpoint-sqlite": "3.1.2",
    "langchain-core": "1.8.3",
}  # pinned in requirements-langgraph.txt; a sweep prints what it ran on (its hello's versions)
TASK = "Triage the new reports."


class PortChatModel(BaseChatModel):
    """The port's scripted model as a LangChain chat model."""

    handle: Any

    @property
    def _llm_type(self) -> str:
        return "agentcore-port"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> PortChatModel:
        return self  # the script knows the job's tools

    def _generate(
        self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        turn = sum(isinstance(m, AIMessage) for m in messages)
        results = {m.tool_call_id: _parsed(m.content) for m in messages if isinstance(m, ToolMessage)}
        reply = self.handle.model.ask(turn, results)
        if isinstance(reply, str):
            message = AIMessage(content=reply)
        else:
            message = AIMessage(
                content="", tool_calls=[{"id": c["id"], "name": c["tool"], "args": c["args"]} for c in reply]
            )
        return ChatResult(generations=[ChatGeneration(message=message)])


def _parsed(content: Any) -> Any:
    try:
        return json.loads(content) if isinstance(content, str) else content
    except ValueError:
        return content


def port_tools(handle: Handle, job: Job, *, keyed: bool) -> list[BaseTool]:
    """The job's tools as LangChain tools over the handle's (keyed: each sends the chapter's key)."""
    names: dict[str, set[str]] = {t: set() for t in job.tools}
    for turn in job.turns:
        for c in turn:
            names[c.tool].update(c.args)
    return [_tool(handle, name, sorted(args), keyed) for name, args in names.items()]


def _tool(handle: Handle, name: str, args: list[str], keyed: bool) -> BaseTool:
    fields: dict[str, Any] = {a: (Any, None) for a in args}
    schema = create_model(
        f"{name}_args",
        __config__=ConfigDict(arbitrary_types_allowed=True),
        tool_call_id=(Annotated[str, InjectedToolCallId], ...),
        **fields,
    )

    def run(tool_call_id: str, **kwargs: Any) -> str:
        given = {k: v for k, v in kwargs.items() if v is not None}
        key = handle.key(tool_call_id) if keyed else None
        return json.dumps(handle.tools.call(name, given, call_id=tool_call_id, key=key))

    return StructuredTool.from_function(run, name=name, description=f"the job's {name}", args_schema=schema)


def _put_detail(config: Any, checkpoint: Any, metadata: Any, *rest: Any, **kw: Any) -> str:
    return f"step={(metadata or {}).get('step')}"


def _writes_detail(config: Any, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = "", **kw: Any) -> str:
    node = str(task_path).split(",")[-1].strip(" ()'~") if task_path else ""
    return " ".join([node or "task", *sorted({str(channel) for channel, _ in writes})])


def schema_of(workdir: str) -> str:
    """The PostgreSQL schema of a scenario's saves (one per scenario folder)."""
    return "agentcore_" + hashlib.sha256(os.path.abspath(workdir).encode()).hexdigest()[:20]


def _postgres_saver(url: str, handle: Handle) -> Any:
    import psycopg
    from psycopg.rows import dict_row

    schema = schema_of(handle.workdir)
    conn = psycopg.connect(
        url, autocommit=True, prepare_threshold=0, row_factory=dict_row, options=f"-c search_path={schema}"
    )
    if handle.process == 1:  # a scenario starts with no saves, even where an old folder's name came back
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    conn.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
    saver = PostgresSaver(conn)
    saver.setup()
    return saver


def port_saver(handle: Handle) -> Any:
    """A saver of the scenario (SqliteSaver, or PostgresSaver: see the rules) whose every write is a point."""
    url = os.environ.get(POSTGRES)
    if url:
        saver = _postgres_saver(url, handle)
    else:
        conn = sqlite3.connect(os.path.join(handle.workdir, "graph.sqlite"), check_same_thread=False)
        saver = SqliteSaver(conn)
    instrument(saver, ["put"], "put", handle, _put_detail)
    instrument(saver, ["put_writes"], "put_writes", handle, _writes_detail)
    return saver


def run_graph(handle: Handle, build: Callable[[Any], Any], durability: str = "sync") -> str:
    """Build the graph over a port saver, resume it or start it, and return the final answer."""
    saver = port_saver(handle)
    graph = build(saver)
    cfg = {"configurable": {"thread_id": handle.thread_id}}
    start = None if saver.get_tuple(cfg) is not None else {"messages": [HumanMessage(TASK)]}
    out = graph.invoke(start, cfg, durability=durability)
    return str(out["messages"][-1].content)
