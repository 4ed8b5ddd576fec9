"""Calls a server's tools that ask the client for input (elicitation) and for
a model's answer (sampling) with the official MCP Python SDK, and prints what
happened as one JSON object for tests/gateway_relay.rs to judge. It asserts
nothing itself.

Usage:
  relay.py MODE stdio COMMAND [ARGS...]   # starts a stdio server (muster mcp, or a server itself)
  relay.py MODE http URL                  # connects to a Streamable HTTP endpoint

MODE is `auto` (the SDK's default: 2026-07-28 where the server offers it),
`legacy` (the initialize handshake, 2025-11-25), or `none` (the default mode
with no elicitation or sampling callback: the client declares neither).
Each of server-everything's two tools and asking_server.py's `greet` is
called when listed (else its entry is null). Tools are found by the end of their listed name, so a name muster gives
(`mcp__everything__trigger-elicitation-request`) and the server's own match.
"""

import asyncio
import json
import sys

from mcp import Client, StdioServerParameters, types

ELICIT = "trigger-elicitation-request"
SAMPLE = "trigger-sampling-request"
GREET = "greet"  # tests/mcp-clients/asking_server.py
ANSWER = {
    "name": "Ada Lovelace",
    "check": True,
    "email": "ada@example.com",
    "integer": 7,
}


def text_of(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def main():
    mode, kind = sys.argv[1], sys.argv[2]
    if kind == "stdio":
        server = StdioServerParameters(command=sys.argv[3], args=sys.argv[4:])
    else:
        server = sys.argv[3]
    asked = []

    async def on_elicit(context, params):
        schema = params.requested_schema or {}
        asked.append({
            "kind": "elicitation",
            "message": params.message,
            "fields": sorted((schema.get("properties") or {}).keys()),
        })
        fields = (schema.get("properties") or {}).keys()
        return types.ElicitResult(
            action="accept", content={k: v for k, v in ANSWER.items() if k in fields}
        )

    async def on_sample(context, params):
        first = params.messages[0].content
        asked.append({
            "kind": "sampling",
            "prompt": getattr(first, "text", None),
            "max_tokens": params.max_tokens,
        })
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="forty-two, from the client's model"),
            model="test-model",
            stop_reason="endTurn",
        )

    options = {}
    if mode != "none":
        options["elicitation_callback"] = on_elicit
        options["sampling_callback"] = on_sample
    if mode == "legacy":
        options["mode"] = "legacy"
    seen = {"calls": {}}
    async with Client(server, cache=None, **options) as client:
        seen["protocol_version"] = client.protocol_version
        names = [t.name for t in (await client.list_tools()).tools]
        asks = [
            (ELICIT, {}),
            (SAMPLE, {"prompt": "What is six times seven?", "maxTokens": 50}),
            (GREET, {"greeting": "Hi"}),
        ]
        for short, arguments in asks:
            name = next((n for n in names if n.endswith(short)), None)
            if name is None:
                seen["calls"][short] = None
                continue
            try:
                done = await client.call_tool(name, arguments)
                seen["calls"][short] = {"is_error": done.is_error, "text": text_of(done)}
            except Exception as e:  # what a refusal looks like to the client
                seen["calls"][short] = {"raised": type(e).__name__, "text": str(e)}
    seen["asked"] = asked
    print(json.dumps(seen))


asyncio.run(main())
