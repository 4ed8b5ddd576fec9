"""fastmcp's client at its default settings, with an elicitation and a
sampling handler, calls server-everything's `trigger-elicitation-request`
and `trigger-sampling-request` and prints what it saw as one JSON object for
tests/gateway_relay.rs to judge. It asserts nothing itself.

Usage:
  fastmcp_relay.py stdio COMMAND [ARGS...]
  fastmcp_relay.py http URL
"""

import asyncio
import json
import sys

from fastmcp import Client
from fastmcp.client.transports import StdioTransport


def text_of(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def main():
    if sys.argv[1] == "stdio":
        transport = StdioTransport(command=sys.argv[2], args=sys.argv[3:])
    else:
        transport = sys.argv[2]
    asked = []

    async def on_elicit(message, response_type, params, context):
        asked.append({"kind": "elicitation", "message": message})
        return {"name": "Ada Lovelace", "check": True}

    async def on_sample(messages, params, context):
        asked.append({"kind": "sampling", "max_tokens": params.max_tokens})
        return "forty-two, from the client's model"

    seen = {"calls": {}}
    async with Client(transport, elicitation_handler=on_elicit, sampling_handler=on_sample) as client:
        names = [t.name for t in await client.list_tools()]
        for short, arguments in [
            ("trigger-elicitation-request", {}),
            ("trigger-sampling-request", {"prompt": "What is six times seven?", "maxTokens": 50}),
        ]:
            name = next((n for n in names if n.endswith(short)), None)
            if name is None:
                seen["calls"][short] = None
                continue
            done = await client.call_tool(name, arguments, raise_on_error=False)
            seen["calls"][short] = {"is_error": done.is_error, "text": text_of(done)}
    seen["asked"] = asked
    print(json.dumps(seen))


asyncio.run(main())
