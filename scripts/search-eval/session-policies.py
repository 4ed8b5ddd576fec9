#!/usr/bin/env python3
"""Writes a policy directory whose one MCP server lists N real tools (from an
extracted tools.jsonl, extract.py's shape), with deferral on and caps of 30
items and 9,000 tokens, so nearly all of them are deferred: the sessions
behind docs/search-cost.md's per-query costs. Past the set's size the tools repeat
under servers seal2, seal3, ... (same text, other names).

  session-policies.py TOOLS_JSONL OUT_DIR N
"""
import json, os, sys

tools_file, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
tools = [json.loads(line) for line in open(tools_file)]
os.makedirs(os.path.join(out, "mcp"), exist_ok=True)
with open(os.path.join(out, "muster.toml"), "w") as f:
    f.write('[caps]\nitems = 30\ntokens = 9000\n\n[deferral]\nenabled = true\n'
            'control_tool = "tools.load"\n\n[[agent]]\nname = "chat"\nversion = 1\n')
servers = {}
for i in range(n):
    t = tools[i % len(tools)]
    server = "seal" if i < len(tools) else f"seal{i // len(tools) + 1}"
    servers.setdefault(server, []).append({
        "name": t["name"], "description": t["description"],
        "inputSchema": t.get("inputSchema") or {"type": "object", "properties": {}},
    })
with open(os.path.join(out, "mcp", "servers.toml"), "w") as f:
    for server in servers:
        f.write(f'[[mcp]]\nname = "{server}"\nsnapshot = "{server}.json"\n\n')
for server, listed in servers.items():
    with open(os.path.join(out, "mcp", f"{server}.json"), "w") as f:
        json.dump({"tools": listed}, f, separators=(",", ":"))
