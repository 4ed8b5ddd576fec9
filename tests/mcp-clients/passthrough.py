"""Lists and reads a server's prompts, resources and resource templates with
the official MCP Python SDK, and prints what it saw as one JSON object for
tests/gateway_passthrough.rs to judge. It asserts nothing itself.

Usage:
  passthrough.py MODE PREFIX stdio COMMAND [ARGS...]   # starts a stdio server (muster mcp, or the server itself)
  passthrough.py MODE PREFIX http URL                  # connects to a Streamable HTTP endpoint

MODE is `legacy` (the initialize handshake) or `auto` (the SDK's default).
PREFIX is what the names are asked for with: empty for the server itself,
`mcp__everything__` through muster. Dynamic text (server-everything puts the
time in its template resources) is reported up to the time.
"""

import asyncio
import json
import sys

from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError


def contents_of(result):
    out = []
    for c in result.contents:
        entry = {"uri": str(c.uri), "mime_type": c.mime_type}
        text = getattr(c, "text", None)
        if text is not None:
            entry["text"] = text.split(" created at ")[0]
        else:
            entry["blob_bytes"] = len(c.blob)
        out.append(entry)
    return out


def messages_of(result):
    out = []
    for m in result.messages:
        entry = {"role": m.role, "type": m.content.type}
        if m.content.type == "text":
            entry["text"] = m.content.text
        elif m.content.type == "resource":
            entry["uri"] = str(m.content.resource.uri)
        out.append(entry)
    return out


async def refused(call):
    try:
        await call
    except MCPError as e:
        return {"code": e.code, "data": e.data, "message": e.message}
    return None


async def main():
    mode, prefix, kind = sys.argv[1], sys.argv[2], sys.argv[3]
    if kind == "stdio":
        server = StdioServerParameters(command=sys.argv[4], args=sys.argv[5:])
    else:
        server = sys.argv[4]
    seen = {}
    async with Client(server, cache=None, mode=mode) as client:
        seen["protocol_version"] = client.protocol_version
        caps = client.server_capabilities
        seen["capabilities"] = {
            "prompts": caps.prompts is not None,
            "resources": caps.resources is not None,
        }
        prompts = await client.list_prompts()
        seen["prompts"] = [
            {
                "name": p.name,
                "title": p.title,
                "description": p.description,
                "arguments": [(a.name, bool(a.required)) for a in (p.arguments or [])],
            }
            for p in prompts.prompts
        ]
        got = await client.get_prompt(prefix + "args-prompt", {"city": "Paris", "state": "Texas"})
        seen["args_prompt"] = {"description": got.description, "messages": messages_of(got)}
        got = await client.get_prompt(prefix + "simple-prompt")
        seen["simple_prompt"] = messages_of(got)
        got = await client.get_prompt(prefix + "resource-prompt", {"resourceType": "Text", "resourceId": "2"})
        seen["resource_prompt"] = messages_of(got)
        resources = await client.list_resources()
        seen["resources"] = [
            {"name": r.name, "uri": str(r.uri), "mime_type": r.mime_type} for r in resources.resources
        ]
        templates = await client.list_resource_templates()
        seen["templates"] = [
            {"name": t.name, "uri_template": t.uri_template} for t in templates.resource_templates
        ]
        first = next(r for r in resources.resources if str(r.uri).endswith(".md"))
        seen["read_listed"] = contents_of(await client.read_resource(str(first.uri)))
        seen["read_template"] = contents_of(await client.read_resource("demo://resource/dynamic/text/3"))
        seen["read_blob_template"] = contents_of(await client.read_resource("demo://resource/dynamic/blob/4"))
        seen["unknown_resource"] = await refused(client.read_resource("demo://nowhere/x"))
        seen["unknown_prompt"] = await refused(client.get_prompt(prefix + "no-such-prompt"))
    print(json.dumps(seen))


asyncio.run(main())
