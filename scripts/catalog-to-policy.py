#!/usr/bin/env python3
"""Writes the baseline catalog (`{"tools": [{name, description, input_schema, priority}]}`) as a
muster policy directory of configured tools, so muster and the Python baseline plan the same
1,000 definitions. Usage: catalog-to-policy.py CATALOG.json OUT_DIR

The `mcp.` prefix is reserved for discovered tools, so `mcp.server.tool` becomes `srv.server.tool`.
The baseline ranks a lower `priority` first and muster a higher one, so the sign is flipped.
Caps are the baseline's: 30 items, 9,000 tokens, o200k_base."""
import json, os, sys


def toml(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return json.dumps(v)
    if isinstance(v, str):
        return json.dumps(v)  # a JSON string is a TOML basic string
    if isinstance(v, list):
        return "[" + ", ".join(toml(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {toml(x)}" for k, x in v.items()) + " }"
    raise SystemExit(f"cannot write {v!r} as TOML")


catalog, out = sys.argv[1], sys.argv[2]
tools = json.load(open(catalog))["tools"]
os.makedirs(os.path.join(out, "tools"), exist_ok=True)
with open(os.path.join(out, "muster.toml"), "w") as f:
    f.write('[caps]\nitems = 30\ntokens = 9000\n\n[tokens]\nencoding = "o200k_base"\n')
with open(os.path.join(out, "tools", "catalog.toml"), "w") as f:
    for t in tools:
        name = t["name"].removeprefix("mcp.")
        f.write("[[tool]]\n")
        f.write(f"name = {json.dumps('srv.' + name)}\n")
        f.write(f"description = {json.dumps(t.get('description', ''))}\n")
        f.write(f"priority = {-int(t.get('priority', 100))}\n")
        f.write(f"input_schema = {toml(t.get('input_schema') or {'type': 'object'})}\n\n")
