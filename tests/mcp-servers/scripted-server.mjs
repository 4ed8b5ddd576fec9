// A scripted stdio MCP server for muster's discovery tests: it answers
// initialize and tools/list by hand so tests can reach cases the reference
// servers never produce (pagination, bad listings, servers that leave
// processes behind). Usage:
//   node scripted-server.mjs paged|non-object-schema|duplicate|deep|long-name|detached|hang
// deep lists a tool whose schema nests 200 levels, past what muster reads;
// long-name a tool whose name is 70,000 bytes, past what muster accepts.
// detached and hang start two idle children, one of them in a session of
// its own (setsid), and write "server child escaped" pids to
// $SCRIPTED_PID_DIR/pids; hang then never answers tools/list.
import { spawn } from "node:child_process";
import { renameSync, writeFileSync } from "node:fs";
import { createInterface } from "node:readline";

const mode = process.argv[2] ?? "paged";
const tool = (name, extra = {}) => ({
  name,
  description: `Tool ${name}.`,
  inputSchema: { type: "object", properties: { q: { type: "string" } }, required: ["q"] },
  ...extra,
});
const nested = (levels) => {
  let schema = { type: "string" };
  for (let i = 0; i < levels; i++) schema = { type: "object", properties: { a: schema } };
  return schema;
};
const pages = {
  paged: [[tool("alpha"), tool("beta")], [tool("gamma")], [tool("delta", { title: "Delta" })]],
  "non-object-schema": [[tool("fine"), { name: "broken", inputSchema: "not a schema" }]],
  duplicate: [[tool("twice")], [tool("twice")]],
  deep: [[tool("deep", { inputSchema: nested(200) })]],
  "long-name": [[tool("fine"), tool("n".repeat(70000))]],
  detached: [[tool("alpha")]],
  hang: [[tool("alpha")]],
}[mode];

if (mode === "detached" || mode === "hang") {
  const idle = ["-e", "setInterval(() => {}, 1000)"];
  const child = spawn(process.execPath, idle, { stdio: "ignore" });
  const escaped = spawn(process.execPath, idle, { stdio: "ignore", detached: true });
  escaped.unref();
  const dir = process.env.SCRIPTED_PID_DIR;
  writeFileSync(`${dir}/pids.tmp`, `${process.pid} ${child.pid} ${escaped.pid}`);
  renameSync(`${dir}/pids.tmp`, `${dir}/pids`);
}

const send = (msg) => process.stdout.write(JSON.stringify(msg) + "\n");
const rl = createInterface({ input: process.stdin });
rl.on("line", (line) => {
  const msg = JSON.parse(line);
  if (msg.id === undefined) return;
  if (msg.method === "initialize") {
    send({ jsonrpc: "2.0", id: msg.id, result: {
      protocolVersion: msg.params.protocolVersion,
      capabilities: { tools: {} },
      serverInfo: { name: `scripted-${mode}`, version: "1.0.0" },
    } });
  } else if (msg.method === "tools/list" && mode === "hang") {
    // Never answers.
  } else if (msg.method === "tools/list") {
    const page = Number(msg.params?.cursor ?? 0);
    const result = { tools: pages[page] };
    if (page + 1 < pages.length) result.nextCursor = String(page + 1);
    send({ jsonrpc: "2.0", id: msg.id, result });
  } else {
    send({ jsonrpc: "2.0", id: msg.id, error: { code: -32601, message: "method not found" } });
  }
});
rl.on("close", () => process.exit(0));
