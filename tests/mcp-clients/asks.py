"""Asks muster's control tool in words through the official MCP Python SDK
(pip `mcp`), over stdio in one chat, and prints each answer as one JSON
object for tests/gateway_asks.rs to judge. It asserts nothing itself.

Usage: asks.py MUSTER_BINARY POLICIES QUERY...   # starts `muster mcp --policies POLICIES`
"""

import asyncio
import json
import sys

from mcp import Client, StdioServerParameters


def text_of(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def main():
    server = StdioServerParameters(command=sys.argv[1], args=["mcp", "--policies", sys.argv[2]])
    seen = {"answers": []}
    async with Client(server, cache=None) as client:
        listed = await client.list_tools()
        seen["tools"] = [t.name for t in listed.tools]
        control = next(t.name for t in listed.tools if t.name.endswith("load"))
        for query in sys.argv[3:]:
            result = await client.call_tool(control, {"query": query})
            seen["answers"].append({
                "query": query,
                "is_error": bool(result.is_error),
                "text": text_of(result),
                "load": (result.meta or {}).get("dev.muster/gateway", {}).get("load"),
            })
    print(json.dumps(seen))


asyncio.run(main())
