#!/usr/bin/env python
"""Records the tools/list of MCP-Bench's servers (github.com/Accenture/mcp-bench)
for `extract.py --mcpbench CLONE LISTINGS`: the repository ships the servers'
code, not their listings. Fetches nothing itself.

  list_tools.py WORK [server display name ...]   (default: all of commands.json)

WORK holds src/ (a checkout of the repository, its servers installed as
mcp_servers/install.sh does: `npm install` and `npm run build` for the Node
ones, their requirements into WORK/venv for the Python ones) and venv/ (with
`pip install mcp`, the client used here). Each server is started as
src/mcp_servers/commands.json says (`uv run X` runs X from WORK/venv; the
keys it names set to "dummy"; the HTTP one on 127.0.0.1), asked
initialize + tools/list (every page), and stopped; its listing goes to
WORK/listings/<name>.json as {"server", "tools"}, its stderr to WORK/logs/,
the outcome of each to WORK/results.json. MCPB_OVERRIDES (JSON, server name
-> {"cmd", "env"}) replaces a command or adds variables where the listed one
cannot run offline; the run of 2026-12-06 (docs/search.md, "Long
requests") used:

  {"NASA Data": {"cmd": "WORK/venvs/nasa/bin/python main.py"},      # its uv.lock's mcp 1.6
   "Wikipedia": {"cmd": "WORK/venvs/wikipedia-mcp/bin/python -m wikipedia_mcp"},
   "Reddit": {"cmd": "WORK/venvs/mcp-reddit/bin/python -m mcp_reddit.reddit_fetcher"},
   "BioMCP": {"cmd": "WORK/venvs/biomcp/bin/biomcp run"},          # each: uv sync --frozen
   "Google Maps": {"env": {"NODE_OPTIONS": "--require .../bind_localhost.cjs"}},
   "OpenAPI Explorer": {"env": {"NODE_OPTIONS": "--require .../openapisearch_offline.cjs"}}}

(the two .cjs files beside this script), and Metropolitan Museum built
against an empty stand-in for its telemetry package `mcpscout`, which npm
no longer has.
"""
import asyncio
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
import traceback
from contextlib import AsyncExitStack
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client

ROOT = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else Path(".").resolve()
SERVERS = ROOT / "src" / "mcp_servers"
VENV_BIN = ROOT / "venv" / "bin"
OUT = ROOT / "listings"
LOGS = ROOT / "logs"
TIMEOUT = 60

# Per-server overrides of the command (only where the vanilla one cannot work here)
OVERRIDES = json.loads(os.environ.get("MCPB_OVERRIDES", "{}"))


def translate_cmd(cmd: str) -> list[str]:
    """Map commands.json commands onto our venv (uv run -> venv python)."""
    parts = shlex.split(cmd)
    if parts[:2] == ["uv", "run"]:
        parts = parts[2:]
    if parts[0] in ("python", "python3"):
        parts[0] = str(VENV_BIN / "python")
    elif (VENV_BIN / parts[0]).exists():
        parts[0] = str(VENV_BIN / parts[0])
    return parts


def base_env(names):
    env = dict(os.environ)
    env["PATH"] = f"{VENV_BIN}:{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(ROOT / "venv")
    env["PYTHONUNBUFFERED"] = "1"
    for n in names:
        env[n] = "dummy"
    return env


async def list_all_tools(session: ClientSession):
    await session.initialize()
    tools = []
    cursor = None
    pages = 0
    while True:
        if cursor is None:
            res = await session.list_tools()
        else:
            from mcp.types import PaginatedRequestParams
            try:
                res = await session.list_tools(params=PaginatedRequestParams(cursor=cursor))
            except TypeError:
                res = await session.list_tools(cursor=cursor)
        pages += 1
        tools.extend(t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in res.tools)
        cursor = res.nextCursor
        if not cursor:
            break
    return tools, pages


def wait_port(port, timeout):
    t0 = time.time()
    while time.time() - t0 < timeout:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return True
        except OSError:
            time.sleep(0.5)
    return False


async def run_stdio(name, argv, cwd, env, errlog):
    params = StdioServerParameters(command=argv[0], args=argv[1:], cwd=str(cwd), env=env)
    async with stdio_client(params, errlog=errlog) as (r, w):
        async with ClientSession(r, w) as s:
            return await list_all_tools(s)


async def run_http(name, argv, cwd, env, port, endpoint, errlog):
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=errlog, stderr=errlog,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        if not await asyncio.to_thread(wait_port, port, 30):
            raise RuntimeError(f"port {port} never opened (exit={proc.poll()})")
        async with streamablehttp_client(f"http://127.0.0.1:{port}{endpoint}") as (r, w, _):
            async with ClientSession(r, w) as s:
                return await list_all_tools(s)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


async def one(name, spec):
    base = SERVERS / "x"  # cwd in commands.json is relative to mcp_servers/<something>
    cwd = (base / spec["cwd"]).resolve()
    cmd = OVERRIDES.get(name, {}).get("cmd", spec["cmd"])
    argv = translate_cmd(cmd)
    env = base_env(spec.get("env", []))
    env.update(OVERRIDES.get(name, {}).get("env", {}))
    LOGS.mkdir(exist_ok=True)
    fname = name.replace(" ", "_")
    with open(LOGS / f"{fname}.stderr.log", "w") as errlog:
        errlog.write(f"# cwd={cwd}\n# argv={argv}\n")
        errlog.flush()
        t0 = time.time()
        if spec.get("transport") == "http":
            # bind to localhost only
            coro = run_http(name, argv, cwd, env, spec["port"], spec.get("endpoint", "/mcp"), errlog)
        else:
            coro = run_stdio(name, argv, cwd, env, errlog)
        tools, pages = await asyncio.wait_for(coro, TIMEOUT)
    OUT.mkdir(exist_ok=True)
    with open(OUT / f"{fname}.json", "w") as f:
        json.dump({"server": name, "tools": tools}, f, indent=2, ensure_ascii=False)
    return len(tools), pages, time.time() - t0


def flatten(e):
    if hasattr(e, "exceptions"):
        return "; ".join(flatten(x) for x in e.exceptions)
    return "".join(traceback.format_exception_only(type(e), e)).strip() or repr(e)


def main():
    spec = json.load(open(SERVERS / "commands.json"))
    names = sys.argv[2:] or list(spec)
    results = {}
    rfile = ROOT / "results.json"
    if rfile.exists():
        results = json.load(open(rfile))
    for n in names:
        try:
            cnt, pages, dt = asyncio.run(one(n, spec[n]))
            results[n] = {"ok": True, "count": cnt, "pages": pages}
            print(f"OK   {n}: {cnt} tools ({pages} page(s), {dt:.1f}s)", flush=True)
        except BaseException as e:  # noqa
            if isinstance(e, KeyboardInterrupt):
                raise
            msg = flatten(e)
            results[n] = {"ok": False, "error": msg[:1000]}
            print(f"FAIL {n}: {msg[:300]}", flush=True)
        json.dump(results, open(rfile, "w"), indent=2)


if __name__ == "__main__":
    main()
