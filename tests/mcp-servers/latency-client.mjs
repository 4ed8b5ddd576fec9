// Calls one tool again and again, one call at a time, with the official TypeScript SDK's
// client at its default settings, and prints the latency of each call as the client sees it:
// the reference for what a gateway in front of the server adds (`scripts/load-gateway`).
//
//   node latency-client.mjs CALLS TOOL ARGS_JSON EXPECT stdio [--stderr FILE] -- COMMAND...
//   node latency-client.mjs CALLS TOOL ARGS_JSON EXPECT http URL
//
// Warms up with CALLS/10 calls (at least 20), then makes CALLS calls; each result's text must
// hold EXPECT, else it exits 1 naming the call. Prints one JSON line:
// {"calls":N,"p50_ms":…,"p90_ms":…,"p99_ms":…,"mean_ms":…}. Exits 2 on a bad command line.
import { openSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const usage = () => {
  console.error(
    "usage: latency-client.mjs CALLS TOOL ARGS_JSON EXPECT (stdio [--stderr FILE] -- COMMAND... | http URL)",
  );
  process.exit(2);
};
const [callsText, tool, argsText, expect, kind, ...rest] = process.argv.slice(2);
const calls = Number(callsText);
if (!Number.isInteger(calls) || calls < 1 || calls > 1_000_000 || !tool || !expect) usage();
let args;
try {
  args = JSON.parse(argsText);
} catch {
  usage();
}

let transport;
if (kind === "stdio") {
  let stderr = "inherit";
  if (rest[0] === "--stderr") {
    stderr = openSync(rest[1], "a");
    rest.splice(0, 2);
  }
  if (rest[0] !== "--" || rest.length < 2) usage();
  const [command, ...commandArgs] = rest.slice(1);
  transport = new StdioClientTransport({ command, args: commandArgs, stderr });
} else if (kind === "http" && rest.length === 1) {
  transport = new StreamableHTTPClientTransport(new URL(rest[0]));
} else {
  usage();
}

const client = new Client({ name: "muster-load", version: "1.0.0" });
await client.connect(transport);

const once = async (n) => {
  const result = await client.callTool({ name: tool, arguments: args });
  const text = (result.content ?? []).map((c) => c.text ?? "").join("\n");
  if (result.isError || !text.includes(expect)) {
    console.error(`call ${n} of ${tool}: ${JSON.stringify(result).slice(0, 2000)}`);
    process.exit(1);
  }
};

for (let n = 0; n < Math.max(20, Math.floor(calls / 10)); n++) await once(n);
const times = [];
for (let n = 0; n < calls; n++) {
  const start = process.hrtime.bigint();
  await once(n);
  times.push(Number(process.hrtime.bigint() - start) / 1e6);
}
await client.close();

times.sort((a, b) => a - b);
const pct = (p) => times[Math.min(times.length - 1, Math.floor((p / 100) * times.length))];
const round = (x) => Math.round(x * 1000) / 1000;
console.log(
  JSON.stringify({
    calls,
    p50_ms: round(pct(50)),
    p90_ms: round(pct(90)),
    p99_ms: round(pct(99)),
    mean_ms: round(times.reduce((a, b) => a + b, 0) / times.length),
  }),
);
