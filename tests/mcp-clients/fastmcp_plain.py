"""Points fastmcp's client, at its default settings, at a muster `/mcp` URL
and prints what it saw as one JSON object for tests/mcp_plain.rs to judge.
It asserts nothing itself.

Usage: fastmcp_plain.py URL
"""

import asyncio
import json
import sys

from fastmcp import Client


def text_of(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def main():
    seen = {}
    async with Client(sys.argv[1]) as client:
        tools = await client.list_tools()
        seen["tools"] = [t.name for t in tools]
        summed = await client.call_tool("mcp__everything__get-sum", {"a": 2, "b": 3})
        seen["sum"] = text_of(summed)
        graph = await client.call_tool("mcp__memory__read_graph", {})
        seen["graph"] = text_of(graph)
    print(json.dumps(seen))


asyncio.run(main())
