"""Calls tools through `muster mcp` with the official MCP Python SDK and
prints what each call's result looked like, as one JSON list, for
tests/results.rs to judge. It asserts nothing itself.

Usage: results.py MUSTER_BINARY POLICIES CALLS_JSON
  CALLS_JSON: [[tool, {arguments}], ...]
"""

import asyncio
import json
import sys

from mcp import Client, StdioServerParameters


async def main():
    server = StdioServerParameters(command=sys.argv[1], args=["mcp", "--policies", sys.argv[2]])
    calls = json.loads(sys.argv[3])
    seen = []
    async with Client(server, cache=None) as client:
        await client.list_tools()
        for name, arguments in calls:
            result = await client.call_tool(name, arguments)
            seen.append(
                {
                    "is_error": result.is_error,
                    "texts": [c.text for c in result.content if getattr(c, "type", "") == "text"],
                    "types": [getattr(c, "type", "") for c in result.content],
                    "structured": result.structured_content,
                    "meta": (result.meta or {}).get("dev.muster/gateway"),
                }
            )
    print(json.dumps(seen))


asyncio.run(main())
