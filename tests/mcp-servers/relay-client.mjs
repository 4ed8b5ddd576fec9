// The official MCP TypeScript SDK's client (the version tests/mcp-servers
// pins), declaring elicitation and sampling, calls server-everything's
// trigger-elicitation-request and trigger-sampling-request and prints what
// it saw as one JSON object for tests/gateway_relay.rs to judge. It asserts
// nothing itself.
//
// Usage: node relay-client.mjs stdio COMMAND [ARGS...]
//        node relay-client.mjs http URL
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";

const [kind, ...rest] = process.argv.slice(2);
const transport =
  kind === "stdio"
    ? new StdioClientTransport({ command: rest[0], args: rest.slice(1), stderr: "ignore" })
    : new StreamableHTTPClientTransport(new URL(rest[0]));
const client = new Client(
  { name: "relay-client", version: "1.0.0" },
  { capabilities: { elicitation: {}, sampling: {} } },
);
const asked = [];
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  asked.push({ kind: "elicitation", message: request.params.message });
  return { action: "accept", content: { name: "Ada Lovelace", check: true } };
});
client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
  asked.push({ kind: "sampling", maxTokens: request.params.maxTokens });
  return {
    role: "assistant",
    model: "test-model",
    content: { type: "text", text: "forty-two, from the client's model" },
  };
});
await client.connect(transport);
const names = (await client.listTools()).tools.map((t) => t.name);
const calls = {};
for (const [short, args] of [
  ["trigger-elicitation-request", {}],
  ["trigger-sampling-request", { prompt: "What is six times seven?", maxTokens: 50 }],
]) {
  const name = names.find((n) => n.endsWith(short));
  if (!name) {
    calls[short] = null;
    continue;
  }
  const done = await client.callTool({ name, arguments: args });
  calls[short] = {
    is_error: done.isError ?? false,
    text: done.content.filter((c) => c.type === "text").map((c) => c.text).join("\n"),
  };
}
console.log(JSON.stringify({ calls, asked }));
await client.close();
