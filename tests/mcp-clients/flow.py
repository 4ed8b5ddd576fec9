"""Drives muster's MCP gateway with the official MCP Python SDK (pip `mcp`),
as any agent host would, and prints what it saw as one JSON object for
tests/gateway.rs to judge. It asserts nothing itself.

Usage:
  flow.py stdio MUSTER_BINARY POLICIES   # starts `muster mcp --policies POLICIES`
  flow.py http URL                       # connects to a Streamable HTTP endpoint
"""

import asyncio
import json
import sys

from mcp import Client, StdioServerParameters
import mcp_types as types


def text_of(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def main():
    kind = sys.argv[1]
    if kind == "stdio":
        server = StdioServerParameters(command=sys.argv[2], args=["mcp", "--policies", sys.argv[3]])
    else:
        server = sys.argv[2]
    changed = asyncio.Event()
    seen = {"notifications": []}

    async def on_message(message):
        if isinstance(message, types.ToolListChangedNotification) or getattr(message, "method", None) == "notifications/tools/list_changed":
            seen["notifications"].append("tools/list_changed")
            changed.set()

    async with Client(server, message_handler=on_message, cache=None) as client:
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
    print(json.dumps(seen))


asyncio.run(main())
