"""Drives muster's MCP gateway with the official MCP Python SDK (pip `mcp`),
as any agent host would, and prints what it saw as one JSON object for
tests/gateway.rs to judge. It asserts nothing itself.

Usage:
  flow.py MODE stdio MUSTER_BINARY POLICIES   # starts `muster mcp --policies POLICIES`
  flow.py MODE http URL                       # connects to a Streamable HTTP endpoint

MODE is `legacy` (the initialize handshake; list changes arrive unasked) or
`auto` (the SDK's default: it probes server/discover and speaks 2026-07-28
when offered; list changes arrive on a `subscriptions/listen` stream the
flow opens before loading).
"""

import asyncio
import json
import sys

from mcp import Client, StdioServerParameters
import mcp_types as types


def text_of(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def main():
    mode, kind = sys.argv[1], sys.argv[2]
    if kind == "stdio":
        server = StdioServerParameters(command=sys.argv[3], args=["mcp", "--policies", sys.argv[4]])
    else:
        server = sys.argv[3]
    changed = asyncio.Event()
    seen = {"notifications": []}

    async def on_message(message):
        if isinstance(message, types.ToolListChangedNotification) or getattr(message, "method", None) == "notifications/tools/list_changed":
            seen["notifications"].append("tools/list_changed")
            changed.set()

    async def listen(client, ready):
        async with client.listen(tools_list_changed=True) as sub:
            seen["honored"] = sorted(k for k, v in sub.honored.model_dump(by_alias=True).items() if v)
            ready.set()
            async for event in sub:
                seen.setdefault("subscription", []).append(type(event).__name__)
                changed.set()

    async with Client(server, message_handler=on_message, cache=None, mode=mode) as client:
        listener = None
        if client.protocol_version == "2026-07-28":
            ready = asyncio.Event()
            listener = asyncio.create_task(listen(client, ready))
            await asyncio.wait_for(ready.wait(), 10)
        seen["protocol_version"] = client.protocol_version
        seen["instructions"] = client.instructions
        first = await client.list_tools()
        seen["first_list"] = [t.name for t in first.tools]
        control = next(t.name for t in first.tools if t.name.endswith("load"))
        seen["control"] = control

        # A deferred tool called before it is loaded: told to load it.
        early = await client.call_tool("mcp__memory__read_graph", {})
        seen["early"] = {"is_error": early.is_error, "text": text_of(early)}

        loaded = await client.call_tool(control, {"query": "mcp__memory__create_entities, mcp__memory__read_graph"})
        seen["load"] = {"is_error": loaded.is_error, "text": text_of(loaded)}
        try:
            await asyncio.wait_for(changed.wait(), 10)
        except asyncio.TimeoutError:
            pass
        second = await client.list_tools()
        seen["second_list"] = [t.name for t in second.tools]

        # Refused by muster: entities must be a list. It must never reach
        # the server, so the graph stays empty.
        bad = await client.call_tool("mcp__memory__create_entities", {"entities": "Ada"})
        seen["refused"] = {"is_error": bad.is_error, "text": text_of(bad), "meta": (bad.meta or {}).get("dev.muster/gateway")}
        graph = await client.call_tool("mcp__memory__read_graph", {})
        seen["graph_after_refused"] = text_of(graph)

        good = await client.call_tool(
            "mcp__memory__create_entities",
            {"entities": [{"name": "Ada", "entityType": "person", "observations": ["wrote the first program"]}]},
        )
        seen["created"] = {"is_error": good.is_error, "text": text_of(good)}
        graph = await client.call_tool("mcp__memory__read_graph", {})
        seen["graph_after_created"] = text_of(graph)

        # A fixed `params` value: the model sends nothing, the server gets it.
        echo = await client.call_tool("mcp__everything__echo", {})
        seen["echo"] = {"is_error": echo.is_error, "text": text_of(echo)}

        # The server's structured result comes back as it sent it.
        summed = await client.call_tool("mcp__everything__get-sum", {"a": 2, "b": 3})
        seen["sum"] = {"is_error": summed.is_error, "text": text_of(summed)}

        try:
            await client.call_tool("no_such_tool", {})
            seen["unknown"] = "answered"
        except Exception as e:  # the SDK raises the JSON-RPC error
            seen["unknown"] = {"error": type(e).__name__, "code": getattr(getattr(e, "error", None), "code", None), "text": str(e)}
        if listener is not None:
            listener.cancel()
    print(json.dumps(seen))


asyncio.run(main())
