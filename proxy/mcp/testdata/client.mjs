// A line-driven MCP client for the Go tests: it connects with the official
// @modelcontextprotocol/sdk client, then reads one JSON request per line on
// stdin and answers one JSON line on stdout, so a Go test can drive a real
// TypeScript MCP client step by step (and approve a parked write between
// two steps).
//
// Transport, from the environment:
//   MCP_URL=http://127.0.0.1:port/mcp      Streamable HTTP
//   MCP_HEADERS={"X-Memgate-Agent-Id":"a"} extra HTTP headers (optional)
//   MCP_COMMAND=path MCP_ARGS=[...]        stdio, spawning the server
//   MCP_ENV={"K":"V"}                      extra environment for it (optional)
//
// Requests:  {"id":1,"method":"listTools"}
//            {"id":2,"method":"callTool","name":"read_graph","arguments":{}}
//            {"id":3,"method":"serverInfo"}
// Answers:   {"id":1,"result":...} or {"id":1,"error":"message"}

import { createInterface } from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

function transport() {
  if (process.env.MCP_URL) {
    const headers = JSON.parse(process.env.MCP_HEADERS || "{}");
    return new StreamableHTTPClientTransport(new URL(process.env.MCP_URL), { requestInit: { headers } });
  }
  if (process.env.MCP_COMMAND) {
    return new StdioClientTransport({
      command: process.env.MCP_COMMAND,
      args: JSON.parse(process.env.MCP_ARGS || "[]"),
      env: { ...process.env, ...JSON.parse(process.env.MCP_ENV || "{}") },
      stderr: "inherit",
    });
  }
  throw new Error("set MCP_URL or MCP_COMMAND");
}

const out = (msg) => process.stdout.write(JSON.stringify(msg) + "\n");

const client = new Client({ name: process.env.MCP_CLIENT_NAME || "harness", version: "1.0.0" });
try {
  await client.connect(transport());
} catch (err) {
  out({ id: 0, error: "connect: " + (err && err.message ? err.message : String(err)) });
  process.exit(1);
}
out({ id: 0, result: "connected" });

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  if (!line.trim()) continue;
  let req;
  try {
    req = JSON.parse(line);
  } catch (err) {
    out({ id: -1, error: "bad request line: " + err.message });
    continue;
  }
  try {
    switch (req.method) {
      case "listTools":
        out({ id: req.id, result: await client.listTools() });
        break;
      case "callTool":
        out({ id: req.id, result: await client.callTool({ name: req.name, arguments: req.arguments }) });
        break;
      case "serverInfo":
        out({ id: req.id, result: { version: client.getServerVersion(), capabilities: client.getServerCapabilities() } });
        break;
      default:
        out({ id: req.id, error: "unknown method " + req.method });
    }
  } catch (err) {
    out({ id: req.id, error: err && err.message ? err.message : String(err) });
  }
}
await client.close();
