#!/usr/bin/env node
// Lists and calls through one MCP endpoint with the official TypeScript SDK
// client and prints one JSON object: the tool, prompt and resource names it
// sees and the outcome of each call.
//
//   node aggregate-client.mjs URL '[["tool", {args}], ...]' [RESOURCE_URI]
//
// The client can sample (it answers "sampled: " and the prompt's first
// words) and elicit (it accepts with name "Ada"), so servers that ask their
// client things offer the tools that do.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CreateMessageRequestSchema, ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [url, callsJSON = "[]", resourceURI] = process.argv.slice(2);
const out = { tools: [], prompts: [], resources: [], calls: [], asked: [] };
const client = new Client({ name: "sluice-aggregate-e2e", version: "1.0.0" }, { capabilities: { sampling: {}, elicitation: {} } });
client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
  const said = req.params.messages.map((m) => m.content?.text ?? "").join(" ");
  out.asked.push("sampling");
  return { model: "e2e-model", role: "assistant", content: { type: "text", text: "sampled: " + said.slice(0, 80) } };
});
client.setRequestHandler(ElicitRequestSchema, async () => {
  out.asked.push("elicitation");
  return { action: "accept", content: { name: "Ada" } };
});
try {
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  out.protocolVersion = client.transport.protocolVersion ?? null;
  out.tools = (await client.listTools()).tools.map((t) => t.name);
  out.prompts = (await client.listPrompts()).prompts.map((p) => p.name);
  out.resources = (await client.listResources()).resources.map((r) => r.uri);
  for (const [name, args] of JSON.parse(callsJSON)) {
    try {
      const res = await client.callTool({ name, arguments: args });
      const text = (res.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("");
      out.calls.push({ name, ok: !res.isError, text });
    } catch (e) {
      out.calls.push({ name, ok: false, error: String(e.message ?? e) });
    }
  }
  if (resourceURI) {
    try {
      const res = await client.readResource({ uri: resourceURI });
      out.read = { ok: true, contents: res.contents.length };
    } catch (e) {
      out.read = { ok: false, error: String(e.message ?? e) };
    }
  }
  if (out.prompts.length > 0) {
    try {
      const p = await client.getPrompt({ name: out.prompts[0], arguments: {} });
      out.prompt = { name: out.prompts[0], ok: true, messages: p.messages.length };
    } catch (e) {
      out.prompt = { name: out.prompts[0], ok: false, error: String(e.message ?? e) };
    }
  }
  await client.close();
  out.ok = true;
} catch (e) {
  out.ok = false;
  out.error = String(e.stack ?? e);
}
console.log(JSON.stringify(out));
