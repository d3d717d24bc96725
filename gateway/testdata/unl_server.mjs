// A minimal MCP stdio server that reads its input with Node's readline,
// which ends a line at CR, LF or CRLF. Lines that are not JSON-RPC are
// skipped.
//
// Every tools/call it executes appends the tool's name and a newline to
// the file named by SLUICE_TEST_LOG: the ground truth of what ran. It
// offers the tools echo and send_email.
import { appendFileSync } from "node:fs";
import { createInterface } from "node:readline";

const log = process.env.SLUICE_TEST_LOG;
const tools = ["echo", "send_email"].map((name) => ({ name, description: name, inputSchema: { type: "object" } }));

function answer(msg) {
  const params = msg.params ?? {};
  switch (msg.method) {
    case "initialize":
      return {
        protocolVersion: params.protocolVersion ?? "2025-06-18",
        capabilities: { tools: {} },
        serverInfo: { name: "unl-node", version: "1" },
      };
    case "tools/list":
      return { tools };
    case "tools/call":
      appendFileSync(log, `${params.name}\n`);
      return { content: [{ type: "text", text: `ran ${params.name}` }] };
    case "ping":
      return {};
  }
  return null;
}

const send = (msg) => process.stdout.write(JSON.stringify(msg) + "\n");

createInterface({ input: process.stdin }).on("line", (line) => {
  let msg;
  try {
    msg = JSON.parse(line);
  } catch {
    return;
  }
  if (typeof msg !== "object" || msg === null || !("method" in msg)) return;
  const result = answer(msg);
  if (!("id" in msg)) return;
  if (result === null) {
    send({ jsonrpc: "2.0", id: msg.id, error: { code: -32601, message: "method not found" } });
  } else {
    send({ jsonrpc: "2.0", id: msg.id, result });
  }
});
