"""Points the official MCP Python SDK, at its default settings, at plain
`/mcp` (no chat in the path) and prints what it saw as one JSON object for
tests/mcp_plain.rs to judge. It asserts nothing itself.

Usage: plain.py URL
"""

import asyncio
import json
import sys

from mcp import Client


def text_of(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def main():
    seen = {}
    async with Client(sys.argv[1], cache=None) as client:
        seen["protocol_version"] = client.protocol_version
        listed = await client.list_tools()
        seen["tools"] = [t.name for t in listed.tools]
        summed = await client.call_tool("mcp__everything__get-sum", {"a": 2, "b": 3})
        seen["sum"] = {"is_error": summed.is_error, "text": text_of(summed)}
        # Deferred tools, called by name: each message loads what it calls.
        made = await client.call_tool(
            "mcp__memory__create_entities",
            {"entities": [{"name": "Ada", "entityType": "person", "observations": ["wrote the first program"]}]},
        )
        seen["created"] = {"is_error": made.is_error, "text": text_of(made)}
        graph = await client.call_tool("mcp__memory__read_graph", {})
        seen["graph"] = {"is_error": graph.is_error, "text": text_of(graph)}
        bad = await client.call_tool("mcp__memory__create_entities", {"entities": "Bob"})
        seen["refused"] = {"is_error": bad.is_error, "meta": (bad.meta or {}).get("dev.muster/gateway")}
        again = await client.list_tools()
        seen["tools_after"] = [t.name for t in again.tools]
    print(json.dumps(seen))


asyncio.run(main())
