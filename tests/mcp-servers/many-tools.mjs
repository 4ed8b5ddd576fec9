// A stdio MCP server, on the official TypeScript SDK's low-level `Server`, that lists every
// tool of a recorded `tools/list` result (`{"tools": [...]}`, as `scripts/scale-policies`
// writes `snapshot-distinct/mcp/kb.json`), so a gateway can be put in front of thousands of
// tools that a real server lists and answers. A call answers one text block naming the tool
// and echoing its arguments. Usage: node many-tools.mjs TOOLS.json
import { readFileSync } from "node:fs";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";

const file = process.argv[2];
if (!file) {
  console.error("usage: node many-tools.mjs TOOLS.json");
  process.exit(2);
}
const { tools } = JSON.parse(readFileSync(file, "utf8"));
const names = new Set(tools.map((t) => t.name));

const server = new Server(
  { name: "many-tools", version: "1.0.0" },
  { capabilities: { tools: {} } },
);
server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
server.setRequestHandler(CallToolRequestSchema, async (request) => {
  const { name, arguments: args } = request.params;
  if (!names.has(name)) {
    return { content: [{ type: "text", text: `no tool ${name}` }], isError: true };
  }
  return { content: [{ type: "text", text: `${name} ${JSON.stringify(args ?? {})}` }] };
});
await server.connect(new StdioServerTransport());
