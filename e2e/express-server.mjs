#!/usr/bin/env node
// A Streamable HTTP server built as the TypeScript SDK documents it: the
// SDK's createMcpExpressApp (express.json(), which decodes a body in the
// charset its Content-Type names) and handleRequest(req, res, req.body),
// stateless. Tools: echo, and send_email, which prints "SENT <to>" on
// stderr. Prints "SLUICE_E2E_READY <url>" on stderr once it listens.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { createMcpExpressApp } from "@modelcontextprotocol/sdk/server/express.js";
import { z } from "zod";

const app = createMcpExpressApp();
app.post("/mcp", async (req, res) => {
  const server = new McpServer({ name: "mail", version: "1" });
  server.registerTool("echo", { description: "Echoes a message", inputSchema: { message: z.string() } },
    async ({ message }) => ({ content: [{ type: "text", text: "Echo: " + message }] }));
  server.registerTool("send_email", { description: "Sends an email", inputSchema: { to: z.string(), body: z.string() } },
    async ({ to }) => {
      process.stderr.write("SENT " + to + "\n");
      return { content: [{ type: "text", text: "sent to " + to }] };
    });
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.on("close", () => { transport.close(); server.close(); });
  await server.connect(transport);
  await transport.handleRequest(req, res, req.body);
});
const srv = app.listen(0, "127.0.0.1", () => process.stderr.write(`SLUICE_E2E_READY http://127.0.0.1:${srv.address().port}/mcp\n`));
