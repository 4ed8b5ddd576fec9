#!/usr/bin/env python3
"""Hostile clients for scripts/soak-serve: for SECONDS, THREADS threads send
`muster serve` at ADDR the bodies issue 24 found trouble with, one kind after
another, and check each answer is the documented one:

  laughs       /v1/check, a plan whose strict tool's schema is a $ref "billion
               laughs" (depth 40): 200, the call refused `uncheckable-schema`
  regex        /v1/check, 300 calls whose backtracking pattern needs more
               than the steps one value may take: 200, each call refused
               `check-budget-exceeded` (the check's work is counted in steps)
  queries      /v1/sessions/search with 1,001 queries: 422 before any search
  deep         a body nested 100,000 levels: 400 or 422, never a crash
  bom          a plan request with a UTF-8 byte-order mark: 200
  bad-utf8     a body with bytes that are not UTF-8: 400 or 422
  too-large    a declared Content-Length over --body-limit: 413 at once
  slow-body    headers, then the body one byte every 0.5 s: 503 `timeout` or
               the connection closed, within the request timeout and a margin
  slow-head    half the headers, then nothing: the connection closed
  half-close   a whole request, then shutdown(SHUT_WR): answered 200

and the kinds issue 30 found trouble with:

  long-word    /mcp/chats/ID, the control tool asked for one 2,000-letter
               word: 200 (a JSON-RPC answer), never memory exhausted
  long-query   /v1/sessions/search with a 60,000-character query: 200 or 422
  edited-plan  /v1/call with the served plan plus a roster entry the policy
               never offered: 409 or 422, nothing run
  cross-site   /v1/call as a page on another site sends it (text/plain,
               foreign Origin): 403 or 415, nothing run
  big-args     /mcp/chats/ID, a call with 900 KB of arguments: 200 (a
               JSON-RPC answer); the check runs off the async workers
  listen-gone  /mcp/chats/ID, subscriptions/listen, the acknowledgement read,
               then the connection dropped: 200 (soak-serve checks the
               service's open files fall back once the load ends)

Prints one `HOSTILE <kind> ...` line per kind (requests, statuses, slowest
answer) and `HOSTILE total ...`; exits 1 when an answer was not the documented
one (a 500 above all), else 0. Standard library only.

  hostile-clients.py ADDR SECONDS THREADS SESSION_FILE REQUEST_TIMEOUT_S PLAN_FILE
"""

import json
import socket
import sys
import threading
import time
from collections import Counter, defaultdict

host_port, seconds, threads, session_file, timeout_s, plan_file = sys.argv[1:7]
host, port = host_port.replace("http://", "").split(":")
port = int(port)
seconds = float(seconds)
threads = int(threads)
timeout_s = float(timeout_s)
session = open(session_file).read()
plan = json.loads(open(plan_file).read())


def laughs(depth):
    defs = {"l0": {"type": "string"}}
    for i in range(1, depth + 1):
        below = f"#/$defs/l{i - 1}"
        defs[f"l{i}"] = {"allOf": [{"$ref": below}, {"$ref": below}]}
    return {"type": "object", "$defs": defs, "properties": {"x": {"$ref": f"#/$defs/l{depth}"}}}


def plan_of(schema):
    return {"format_version": 3, "roster": [{"name": "t", "check": "strict", "input_schema": schema}]}


LAUGHS = json.dumps({
    "plan": plan_of(laughs(40)),
    "turn": {"calls": [{"id": "c1", "name": "t", "arguments": {"x": "ha"}}]},
}).encode()
REGEX = json.dumps({
    "plan": plan_of({"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a|a)*\\1b$"}}}),
    "turn": {"calls": [{"id": f"c{i}", "name": "t", "arguments": {"s": "a" * 28 + "c"}} for i in range(300)]},
}).encode()
QUERIES = ('{"session": ' + session + ', "queries": ' + json.dumps(["find a file"] * 1001) + "}").encode()
DEEP = b'{"flags": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
BOM = b"\xef\xbb\xbf" + b'{"flags": "production"}'
BAD_UTF8 = b'{"flags": "produc\xff\xfetion"}'
MODERN = {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}
MCP_HEADERS = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2026-07-28"}


def rpc(method, params, id_=1):
    return json.dumps({"jsonrpc": "2.0", "id": id_, "method": method, "params": {**params, **MODERN}}).encode()


LONG_WORD = rpc("tools/call", {"name": "tools__load", "arguments": {"query": "a" * 2000}})
LONG_QUERY = ('{"session": ' + session + ', "query": ' + json.dumps("abcdefghijk " * 5000) + "}").encode()
edited = json.loads(json.dumps(plan))
edited["roster"].append({"name": "hostile.shell", "check": "lenient",
                         "input_schema": {"type": "object", "additionalProperties": True}})
EDITED = json.dumps({"plan": edited, "turn": {"calls": [
    {"id": "c1", "name": "hostile.shell", "arguments": {"command": "rm -rf /"}}]}}).encode()
CROSS = json.dumps({"plan": plan, "turn": {"calls": [
    {"id": "c1", "name": "system.current_time", "arguments": {}}]}}).encode()
BIG_ARGS = rpc("tools/call", {"name": "mcp__bland_read__list_calls",
                              "arguments": {"to_number": "1" * (900 << 10)}})
LISTEN = rpc("subscriptions/listen", {"notifications": {"toolsListChanged": True}})


def request(path, body, content_length=None, headers=None):
    length = len(body) if content_length is None else content_length
    fields = {"host": f"{host}:{port}", "content-type": "application/json", **(headers or {})}
    head = (f"POST {path} HTTP/1.1\r\n"
            + "".join(f"{k}: {v}\r\n" for k, v in fields.items())
            + f"content-length: {length}\r\nconnection: close\r\n\r\n").encode()
    return head


def read_status(sock):
    """The status of the answer on `sock`, 0 when it closed without one."""
    data = b""
    while b"\r\n" not in data:
        try:
            chunk = sock.recv(65536)
        except (ConnectionResetError, socket.timeout):
            return 0
        if not chunk:
            return 0
        data += chunk
    # Drain the rest so the server is not blocked writing.
    try:
        while sock.recv(65536):
            pass
    except (ConnectionResetError, socket.timeout):
        pass
    try:
        return int(data.split(b" ", 2)[1])
    except (IndexError, ValueError):
        return -1


def connect():
    sock = socket.create_connection((host, port), timeout=timeout_s + 15)
    return sock


def send(path, body, half_close=False, content_length=None, headers=None):
    sock = connect()
    try:
        sock.sendall(request(path, body, content_length, headers) + (body if content_length is None else b""))
        if half_close:
            sock.shutdown(socket.SHUT_WR)
        return read_status(sock)
    except (BrokenPipeError, ConnectionResetError):
        return 0
    finally:
        sock.close()


def slow_body():
    sock = connect()
    body = b'{"flags": "production"}'
    try:
        sock.sendall(request("/v1/plan", body))
        for b in body:
            sock.sendall(bytes([b]))
            time.sleep(0.5)
        return read_status(sock)
    except (BrokenPipeError, ConnectionResetError):
        return 0
    finally:
        sock.close()


def slow_head():
    sock = connect()
    try:
        sock.sendall(b"POST /v1/plan HTTP/1.1\r\nhost: x\r\n")
        return read_status(sock)
    except (BrokenPipeError, ConnectionResetError):
        return 0
    finally:
        sock.close()


def listen_gone(n=[0]):
    """A listen stream opened, its acknowledgement read, then dropped."""
    n[0] += 1
    sock = connect()
    try:
        sock.sendall(request(f"/mcp/chats/hostile-listen-{n[0] % 50}", LISTEN, headers=MCP_HEADERS) + LISTEN)
        data = b""
        while b"acknowledged" not in data and len(data) < 65536:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/") else 0
        return status if b"acknowledged" in data else -status
    except (BrokenPipeError, ConnectionResetError, socket.timeout):
        return 0
    finally:
        sock.close()  # no goodbye: the client is simply gone


# kind -> (how to send, statuses that are the documented answer)
KINDS = {
    "laughs": (lambda: send("/v1/check", LAUGHS), {200}),
    "regex": (lambda: send("/v1/check", REGEX), {200}),
    "queries": (lambda: send("/v1/sessions/search", QUERIES), {422}),
    "deep": (lambda: send("/v1/plan", DEEP), {400, 422}),
    "bom": (lambda: send("/v1/plan", BOM), {200}),
    "bad-utf8": (lambda: send("/v1/plan", BAD_UTF8), {400, 422}),
    "too-large": (lambda: send("/v1/plan", b"", content_length=64 << 20), {413}),
    "slow-body": (slow_body, {503, 0}),
    "slow-head": (slow_head, {0, 408}),
    "half-close": (lambda: send("/v1/plan", b'{"flags": "production"}', half_close=True), {200}),
    "long-word": (lambda: send("/mcp/chats/hostile-word", LONG_WORD, headers=MCP_HEADERS), {200}),
    "long-query": (lambda: send("/v1/sessions/search", LONG_QUERY), {200, 422}),
    "edited-plan": (lambda: send("/v1/call", EDITED), {409, 422}),
    "cross-site": (lambda: send("/v1/call", CROSS, headers={"content-type": "text/plain",
                                                          "origin": "https://evil.example"}), {403, 415}),
    "big-args": (lambda: send("/mcp/chats/hostile-args", BIG_ARGS, headers=MCP_HEADERS), {200}),
    "listen-gone": (listen_gone, {200}),
}

lock = threading.Lock()
statuses = defaultdict(Counter)
slowest = defaultdict(float)
bad = []
deadline = time.monotonic() + seconds


def worker(offset):
    names = list(KINDS)
    n = offset
    while time.monotonic() < deadline:
        kind = names[n % len(names)]
        n += 1
        send_it, expected = KINDS[kind]
        start = time.monotonic()
        try:
            status = send_it()
        except OSError as err:
            status = f"error {err.__class__.__name__}"
        took = time.monotonic() - start
        with lock:
            statuses[kind][status] += 1
            slowest[kind] = max(slowest[kind], took)
            if status not in expected:
                bad.append((kind, status))


pool = [threading.Thread(target=worker, args=(i * 3,)) for i in range(threads)]
for t in pool:
    t.start()
for t in pool:
    t.join()

total = 0
for kind in KINDS:
    count = sum(statuses[kind].values())
    total += count
    shown = ", ".join(f"{s}: {c}" for s, c in sorted(statuses[kind].items(), key=lambda x: str(x[0])))
    print(f"HOSTILE {kind}: {count} requests ({shown}), slowest {slowest[kind]:.2f} s")
print(f"HOSTILE total: {total} requests, {len(bad)} not answered as documented")
for kind, status in bad[:20]:
    print(f"HOSTILE unexpected: {kind} answered {status}", file=sys.stderr)
sys.exit(1 if bad else 0)
