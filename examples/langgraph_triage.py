"""The triage agent on LangGraph (a StateGraph: an agent node and a ToolNode), swept through agentcore's
LangGraph adapter. Needs the extra: `.venv/bin/pip install -r requirements-langgraph.txt`.

    python -m agentcore sweep --target examples.langgraph_triage:naive_sync
    python -m agentcore sweep --target examples.langgraph_triage:keyed_exit

Targets: naive_* send no key, keyed_* send the chapter's key of (thread ID, tool-call ID); *_sync
saves every step before the next runs, *_exit only at the end (LangGraph's durability modes). With
exit, nothing is durable before the end: a restart asks the model again, a real model mints new
tool-call IDs, and the key made from them changes: keyed_exit doubles what naive_exit doubles.
ToolNode runs a turn's two tool calls in threads, so every sweep here is a sample (its points come
from more than one thread: five passes unasked, rates with Wilson intervals). *_async saves each step
in the background while the next one runs, and keyed_async with a fresh-IDs model can double too (a
tool may act before the write holding its reply lands).
*_functional is the agent on the functional API (@entrypoint, a @task per model and tool call): even
with sync durability a task's writes go to a background executor, so it is sampled as async is.
"""

from __future__ import annotations

from typing import Any

from langgraph.func import entrypoint, task
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from agentcore import jobs
from agentcore.adapters.langgraph import PortChatModel, port_tools, run_graph
from agentcore.port import Handle

JOB = jobs.load("triage")


def graph(handle: Handle, keyed: bool) -> Any:
    model = PortChatModel(handle=handle)
    tools = port_tools(handle, JOB, keyed=keyed)

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    def build(saver: Any) -> Any:
        g = StateGraph(MessagesState)
        g.add_node("agent", agent)
        g.add_node("tools", ToolNode(tools))
        g.add_edge(START, "agent")
        g.add_conditional_edges("agent", tools_condition)
        g.add_edge("tools", "agent")
        return g.compile(checkpointer=saver)

    return build


def naive_sync(handle: Handle) -> str:
    return run_graph(handle, graph(handle, keyed=False), "sync")


def keyed_sync(handle: Handle) -> str:
    return run_graph(handle, graph(handle, keyed=True), "sync")


def naive_exit(handle: Handle) -> str:
    return run_graph(handle, graph(handle, keyed=False), "exit")


def keyed_exit(handle: Handle) -> str:
    return run_graph(handle, graph(handle, keyed=True), "exit")


def naive_async(handle: Handle) -> str:
    return run_graph(handle, graph(handle, keyed=False), "async")


def keyed_async(handle: Handle) -> str:
    return run_graph(handle, graph(handle, keyed=True), "async")


def functional(handle: Handle, keyed: bool) -> Any:
    """The same agent on LangGraph's functional API: an @entrypoint whose model and tool calls are @tasks."""
    model = PortChatModel(handle=handle)
    tools = {t.name: t for t in port_tools(handle, JOB, keyed=keyed)}

    @task
    def ask(messages: list[Any]) -> Any:
        return model.invoke(messages)

    @task
    def act(call: dict[str, Any]) -> Any:
        return tools[call["name"]].invoke({**call, "type": "tool_call"})

    def build(saver: Any) -> Any:
        @entrypoint(checkpointer=saver)
        def agent(state: dict[str, Any]) -> dict[str, Any]:
            messages = list(state["messages"])
            while True:
                reply = ask(messages).result()
                messages.append(reply)
                if not reply.tool_calls:
                    return {"messages": messages}
                messages += [f.result() for f in [act(c) for c in reply.tool_calls]]

        return agent

    return build


def naive_functional(handle: Handle) -> str:
    return run_graph(handle, functional(handle, keyed=False), "sync")


def keyed_functional(handle: Handle) -> str:
    return run_graph(handle, functional(handle, keyed=True), "sync")
