"""Keeps one chat open through muster's gateway with the official MCP Python
SDK at its default settings, while tests/chat_follow.rs changes the policy
under it. After each line on stdin (the test's "go on") it lists the tools,
calls `get-sum` and `echo`, and prints what it saw as one JSON line. It
asserts nothing itself.

Usage:
  follow.py stdio MUSTER_BINARY POLICIES [CHAT]   # `muster mcp --policies POLICIES [--chat CHAT]`
  follow.py http URL                              # a Streamable HTTP endpoint
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
        args = ["mcp", "--policies", sys.argv[3]]
        if len(sys.argv) > 5:
            args += ["--sessions", sys.argv[5]]
        if len(sys.argv) > 4:
            args += ["--chat", sys.argv[4]]
        server = StdioServerParameters(command=sys.argv[2], args=args)
    else:
        server = sys.argv[2]
    changes = []

    async def on_message(message):
        if isinstance(message, types.ToolListChangedNotification) or getattr(message, "method", None) == "notifications/tools/list_changed":
            changes.append("tools/list_changed")

    async def listen(client, ready):
        async with client.listen(tools_list_changed=True) as sub:
            ready.set()
            async for event in sub:
                changes.append(type(event).__name__)

    loop = asyncio.get_running_loop()
    async with Client(server, message_handler=on_message, cache=None) as client:
        listener = None
        if client.protocol_version == "2026-07-28":
            ready = asyncio.Event()
            listener = asyncio.create_task(listen(client, ready))
            await asyncio.wait_for(ready.wait(), 10)
        step = 0
        while True:
            step += 1
            seen = {"step": step, "protocol_version": client.protocol_version}
            try:
                listed = await client.list_tools()
                seen["tools"] = [t.name for t in listed.tools]
                seen["list_meta"] = (listed.meta or {}).get("dev.muster/gateway")
                summed = await client.call_tool("mcp__everything__get-sum", {"a": 2, "b": 3})
                seen["sum"] = {"is_error": summed.is_error, "text": text_of(summed)}
                echo = await client.call_tool("mcp__everything__echo", {})
                seen["echo"] = {"is_error": echo.is_error, "text": text_of(echo)}
            except Exception as e:  # the SDK raises a JSON-RPC error
                seen["error"] = {"code": getattr(getattr(e, "error", None), "code", None), "text": str(e)}
            await asyncio.sleep(0.3)
            seen["changes"] = list(changes)
            print(json.dumps(seen), flush=True)
            line = await loop.run_in_executor(None, sys.stdin.readline)
            if not line.strip():
                break
        if listener is not None:
            listener.cancel()


asyncio.run(main())
