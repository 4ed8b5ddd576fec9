"""A Streamable HTTP MCP server on the official MCP Python SDK (`MCPServer`)
for tests/traces.rs: its `seen` tool answers, as JSON, the W3C trace
context the request that called it carried: the `traceparent`,
`tracestate` and `baggage` HTTP headers, the same keys in the request's
`_meta`, and the span context the SDK itself made current for the call
(its OpenTelemetry middleware reads `_meta`), so the test sees what a real
server got.

Usage: trace_server.py PORT   (listens on 127.0.0.1:PORT/mcp)
       trace_server.py stdio  (the same server over stdio: `_meta` only)
"""

import json
import sys

from mcp.server.mcpserver import Context, MCPServer
from opentelemetry import trace

server = MCPServer("traced", log_level="WARNING")


@server.tool(description="The trace context this call arrived with.")
def seen(ctx: Context) -> str:
    rc = ctx.request_context
    headers = rc.request.headers if rc.request is not None else {}
    meta = dict(rc.meta or {})
    span = trace.get_current_span().get_span_context()
    return json.dumps({
        "header": {k: headers.get(k) for k in ("traceparent", "tracestate", "baggage")},
        "meta": {k: meta.get(k) for k in ("traceparent", "tracestate", "baggage")},
        "sdk": {
            "trace_id": format(span.trace_id, "032x"),
            "span_id": format(span.span_id, "016x"),
        } if span.is_valid else None,
    })


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        server.run()
    else:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
