"""A tiny stdio MCP server on the official MCP Python SDK (`MCPServer`, once
FastMCP) for tests/results.rs: its `weather` tool declares an outputSchema
asking a number for `temp` and returns `{"temp": "hot"}` (argument
`good = true`: `{"temp": 21.5}`). The SDK validates a declared schema only
when it derived the schema from a model, so this one is published by hand,
as a server that breaks its own promise would.

Usage: weather_server.py
"""

import json

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, TextContent

server = MCPServer("weather")


@server.tool(description="The temperature in a city, in degrees Celsius.")
def weather(city: str, good: bool = False) -> CallToolResult:
    structured = {"temp": 21.5} if good else {"temp": "hot"}
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(structured))],
        structured_content=structured,
    )


server._tool_manager.get_tool("weather").fn_metadata.output_schema = {
    "type": "object",
    "properties": {"temp": {"type": "number"}},
    "required": ["temp"],
}

if __name__ == "__main__":
    server.run()
