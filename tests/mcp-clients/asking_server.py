"""A tiny stdio MCP server on the official MCP Python SDK (`MCPServer`)
whose `greet` tool asks its client for a name (elicitation) before it
answers. At 2026-07-28 the SDK asks by answering `input_required` and
resumes on the client's retry; at 2025-11-25 it sends `elicitation/create`
mid-call. For tests/gateway_relay.rs.

Usage: asking_server.py
"""

from typing import Annotated

from pydantic import BaseModel

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.resolve import Elicit, Resolve

server = MCPServer("asking")


class Person(BaseModel):
    name: str


def ask_name() -> Elicit[Person]:
    return Elicit("Who is asking?", Person)


@server.tool(description="Greets whoever the client says is asking.")
def greet(person: Annotated[Person, Resolve(ask_name)], greeting: str = "Hello") -> str:
    return f"{greeting}, {person.name}!"


if __name__ == "__main__":
    server.run()
