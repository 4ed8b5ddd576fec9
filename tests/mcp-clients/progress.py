"""Calls a long-running tool with the official MCP Python SDK at its default
settings, asking for progress, and prints what it heard as one JSON object
for tests/gateway_progress.rs to judge. It asserts nothing itself.

Usage:
  progress.py TOOL stdio COMMAND [ARGS...]   # starts a stdio server (muster mcp, or a server itself)
  progress.py TOOL http URL                  # connects to a Streamable HTTP endpoint

TOOL is the long-running tool's name as the server lists it; it is called
with {"duration": 1.5, "steps": 3} twice: with a progress callback, then
without one.
"""

import asyncio
import json
import sys

from mcp import Client, StdioServerParameters


def text_of(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def main():
    tool, kind = sys.argv[1], sys.argv[2]
    if kind == "stdio":
        server = StdioServerParameters(command=sys.argv[3], args=sys.argv[4:])
    else:
        server = sys.argv[3]
    heard = []
    notified = []

    async def on_progress(progress, total, message):
        heard.append({"progress": progress, "total": total, "message": message})

    async def on_message(message):
        if getattr(message, "method", None) == "notifications/progress":
            notified.append(message.params.progress_token)

    seen = {}
    async with Client(server, cache=None, message_handler=on_message) as client:
        seen["protocol_version"] = client.protocol_version
        listed = await client.list_tools()
        seen["listed"] = tool in [t.name for t in listed.tools]
        done = await client.call_tool(
            tool, {"duration": 1.5, "steps": 3}, progress_callback=on_progress
        )
        seen["result"] = {"is_error": done.is_error, "text": text_of(done)}
        seen["progress"] = list(heard)
        quiet = await client.call_tool(tool, {"duration": 0.3, "steps": 3})
        seen["quiet_result"] = {"is_error": quiet.is_error, "text": text_of(quiet)}
        seen["heard_after"] = len(heard)
    # Every progress notification that arrived, by token: only the call
    # that asked may have any.
    seen["notified"] = len(notified)
    seen["tokens"] = len(set(notified))
    print(json.dumps(seen))


asyncio.run(main())
