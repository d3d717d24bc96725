#!/usr/bin/env node
// Sluice end-to-end MCP client harness.
//
// Drives the official MCP TypeScript SDK client through a fixed scenario against
// @modelcontextprotocol/server-everything (directly, or through the Sluice gateway)
// and prints ONE JSON object on stdout with the normalized outcome of every step,
// so that a direct run and a via-gateway run can be compared for equality.
//
// Usage:
//   node client.mjs --transport streamable-http|sse|stdio|websocket
//                   [--url URL]                       (http/sse/websocket)
//                   [--command CMD] [--args "A B" | --args '["A","B"]'] [--arg A]...
//                   [--env K=V]...                    (stdio; also: -- CMD ARGS...)
//                   [--header "Name: value"]...       (streamable-http/sse)
//                   [--oauth-client ID:SECRET --oauth-issuer URL]
//                                                     (streamable-http/sse: the SDK's
//                                                     ClientCredentialsProvider; a 401 starts
//                                                     its discovery and token request)
//                   [--scenario full|deny]            (default full)
//                   [--tool NAME] [--tool-args JSON]  (deny scenario; default echo {"message":"hello"})
//                   [--task]                          (deny scenario: a task-augmented call, the SDK's
//                                                     experimental.tasks.callToolStream)
//                   [--call NAME=JSON ...] [--list-first]  (calls scenario: tools/list first,
//                                                     its names reported as steps.tools)
//                   [--caps default|none|all]         (capabilities declared: default sampling and
//                                                     elicitation; none; all adds roots, with handlers)
//                   [--timeout MS]                    (per request, default 30000)
//                   [--deadline MS]                   (whole run, default 120000)
//                   [--pretty]
//
// Exit codes: 0 = client ran the scenario to the end (individual steps may have
// failed; see "ok" and each step's "ok"/"error"); 3 = connect/initialize failed
// (JSON with the connect error is still printed); 2 = usage error; 1 = harness
// failure (uncaught exception, overall deadline exceeded). stderr is for logs only.

import { createHash } from "node:crypto";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { WebSocketClientTransport } from "@modelcontextprotocol/sdk/client/websocket.js";
import { ClientCredentialsProvider } from "@modelcontextprotocol/sdk/client/auth-extensions.js";
import {
  CallToolResultSchema,
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  McpError,
} from "@modelcontextprotocol/sdk/types.js";

// ---------------------------------------------------------------- constants

// Fixed answers the client gives to server->client requests.
export const SAMPLING_REPLY = {
  model: "sluice-e2e-model",
  role: "assistant",
  content: { type: "text", text: "sampled reply from sluice e2e client" },
  stopReason: "endTurn",
};
export const ROOTS_REPLY = { roots: [{ uri: "file:///sluice-e2e-root", name: "sluice-e2e-root" }] };
export const ELICITATION_REPLY = {
  action: "accept",
  content: { name: "Sluice Tester", check: true, email: "tester@example.com", integer: 7 },
};

const PROGRESS_ARGS = { duration: 1.5, steps: 3 }; // 3 progress notifications, 0.5 s apart
const CANCEL_ARGS = { duration: 2, steps: 4 }; // first progress after 0.5 s; aborted then

// ---------------------------------------------------------------- args

function usage(msg) {
  if (msg) process.stderr.write(`client.mjs: ${msg}\n`);
  process.stderr.write(
    "usage: node client.mjs --transport streamable-http|sse|stdio|websocket [--url URL] " +
      "[--command CMD --args ARGS | -- CMD ARGS...] [--env K=V] [--header 'K: V'] " +
      "[--oauth-client ID:SECRET --oauth-issuer URL] [--scenario full|deny] [--tool NAME] [--tool-args JSON] [--timeout MS] [--deadline MS] [--pretty]\n",
  );
  process.exit(2);
}

function parseArgs(argv) {
  const o = {
    transport: undefined,
    url: undefined,
    command: undefined,
    args: [],
    env: {},
    headers: {},
    scenario: "full",
    tool: "echo",
    toolArgs: undefined,
    calls: [],
    timeout: 30000,
    deadline: 120000,
    pretty: false,
    oauthClient: undefined,
    oauthIssuer: undefined,
    caps: "default",
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) usage(`missing value for ${a}`);
      return argv[++i];
    };
    switch (a) {
      case "--transport": o.transport = next(); break;
      case "--url": o.url = next(); break;
      case "--oauth-client": o.oauthClient = next(); break;
      case "--oauth-issuer": o.oauthIssuer = next(); break;
      case "--command": o.command = next(); break;
      case "--args": {
        const v = next();
        if (v.trim().startsWith("[")) {
          try { o.args.push(...JSON.parse(v).map(String)); } catch { usage(`bad JSON for --args: ${v}`); }
        } else {
          o.args.push(...v.split(/\s+/).filter(Boolean));
        }
        break;
      }
      case "--arg": o.args.push(next()); break;
      case "--env": {
        const v = next();
        const eq = v.indexOf("=");
        if (eq <= 0) usage(`bad --env ${v}`);
        o.env[v.slice(0, eq)] = v.slice(eq + 1);
        break;
      }
      case "--header": {
        const v = next();
        const c = v.indexOf(":");
        if (c <= 0) usage(`bad --header ${v}`);
        o.headers[v.slice(0, c).trim()] = v.slice(c + 1).trim();
        break;
      }
      case "--scenario": o.scenario = next(); break;
      case "--tool": o.tool = next(); break;
      case "--list-first": o.listFirst = true; break;
      case "--caps": o.caps = next(); break;
      case "--task": o.task = true; break;
      case "--tool-args": {
        const v = next();
        try { o.toolArgs = JSON.parse(v); } catch { usage(`bad JSON for --tool-args: ${v}`); }
        break;
      }
      case "--call": {
        // --call NAME=JSON, repeatable: the "calls" scenario makes them in order in one session.
        const v = next();
        const eq = v.indexOf("=");
        const name = eq < 0 ? v : v.slice(0, eq);
        let args = {};
        if (eq >= 0) {
          try { args = JSON.parse(v.slice(eq + 1)); } catch { usage(`bad JSON in --call ${v}`); }
        }
        o.calls.push({ name, args });
        break;
      }
      case "--timeout": o.timeout = Number(next()); break;
      case "--deadline": o.deadline = Number(next()); break;
      case "--pretty": o.pretty = true; break;
      case "-h": case "--help": usage(); break;
      case "--": {
        const rest = argv.slice(i + 1);
        if (rest.length) { o.command = rest[0]; o.args.push(...rest.slice(1)); }
        i = argv.length;
        break;
      }
      default: usage(`unknown argument ${a}`);
    }
  }
  if (!["streamable-http", "sse", "stdio", "websocket"].includes(o.transport)) usage("--transport is required");
  if (!["full", "deny", "calls"].includes(o.scenario)) usage(`unknown scenario ${o.scenario}`);
  if (!["default", "none", "all"].includes(o.caps)) usage(`unknown --caps ${o.caps}`);
  if (o.transport === "stdio" && !o.command) usage("--command is required for stdio");
  if (o.transport !== "stdio" && !o.url) usage("--url is required for " + o.transport);
  if (o.toolArgs === undefined) o.toolArgs = o.tool === "echo" ? { message: "hello" } : {};
  return o;
}

// ---------------------------------------------------------------- normalization

const UUID_RE = /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi;
const ISO_RE = /\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?\b/g;
const CLOCK_RE = /\b\d{1,2}:\d{2}:\d{2}(?:\s?[AP]M)?\b/g;
const HOSTPORT_RE = /\b(?:127\.0\.0\.1|localhost|\[::1\]):\d+\b/g;

function normStr(s) {
  return s
    .replace(UUID_RE, "<uuid>")
    .replace(ISO_RE, "<timestamp>")
    .replace(CLOCK_RE, "<time>")
    .replace(HOSTPORT_RE, "<host:port>");
}

// Deep-normalize: strings scrubbed of volatile tokens, object keys sorted.
function norm(v) {
  if (typeof v === "string") return normStr(v);
  if (Array.isArray(v)) return v.map(norm);
  if (v && typeof v === "object") {
    const out = {};
    for (const k of Object.keys(v).sort()) if (v[k] !== undefined) out[k] = norm(v[k]);
    return out;
  }
  return v;
}

function sha256(s) {
  return createHash("sha256").update(s).digest("hex").slice(0, 16);
}

function errInfo(e) {
  if (e instanceof McpError) {
    const info = { kind: "mcp", code: e.code, message: normStr(e.message) };
    if (e.data !== undefined) info.data = norm(e.data);
    return info;
  }
  if (e && (e.name === "AbortError" || e.name === "TimeoutError")) {
    return { kind: e.name, message: normStr(String(e.message)) };
  }
  const info = { kind: (e && e.name) || typeof e, message: normStr(String(e && e.message !== undefined ? e.message : e)) };
  if (e && e.code !== undefined) info.code = e.code;
  return info;
}

function textOf(result) {
  return (result?.content || []).filter((c) => c.type === "text").map((c) => c.text);
}

function summarizeCallResult(r) {
  const out = { isError: r.isError === true, content: norm(r.content || []) };
  if (r.structuredContent !== undefined) out.structuredContent = norm(r.structuredContent);
  return out;
}

// ---------------------------------------------------------------- transport

// authProvider is the SDK's client-credentials provider when --oauth-client
// is given: the transport then answers a 401 by following WWW-Authenticate
// to the protected resource metadata, the authorization server's metadata
// and its token endpoint, and retries with the token.
function authProvider(o) {
  if (!o.oauthClient) return undefined;
  const i = o.oauthClient.indexOf(":");
  if (i < 0) usage("--oauth-client takes ID:SECRET");
  return new ClientCredentialsProvider({
    clientId: o.oauthClient.slice(0, i),
    clientSecret: o.oauthClient.slice(i + 1),
    expectedIssuer: o.oauthIssuer,
  });
}

function makeTransport(o) {
  switch (o.transport) {
    case "streamable-http":
      return new StreamableHTTPClientTransport(new URL(o.url), { requestInit: { headers: o.headers }, authProvider: authProvider(o) });
    case "sse":
      return new SSEClientTransport(new URL(o.url), { requestInit: { headers: o.headers }, authProvider: authProvider(o) });
    case "stdio":
      return new StdioClientTransport({
        command: o.command,
        args: o.args,
        env: { ...getDefaultEnvironment(), ...o.env },
        stderr: "inherit",
      });
    case "websocket":
      return new WebSocketClientTransport(new URL(o.url));
  }
}

async function ensureWebSocketGlobal() {
  // The SDK's WebSocketClientTransport uses the global WebSocket, which Node 20
  // only has behind --experimental-websocket. Fall back to the `ws` package
  // (same API: subprotocol arg, onopen/onmessage/onerror/onclose, event.data).
  if (typeof globalThis.WebSocket === "undefined") {
    const { WebSocket } = await import("ws");
    globalThis.WebSocket = WebSocket;
  }
}

// ---------------------------------------------------------------- scenarios

// Observe server->client messages as they come off the transport, before the
// SDK's Protocol layer. Must be called after client.connect() (which installs
// transport.onmessage).
function tapWire(transport) {
  const wire = { progress: new Map(), responses: [] };
  const inner = transport.onmessage;
  transport.onmessage = (msg, extra) => {
    if (msg && msg.id !== undefined && (msg.result !== undefined || msg.error !== undefined)) {
      const { jsonrpc, id, ...rest } = msg;
      wire.responses.push(rest);
    }
    if (msg && msg.method === "notifications/progress" && msg.params) {
      const k = String(msg.params.progressToken);
      if (!wire.progress.has(k)) wire.progress.set(k, []);
      wire.progress.get(k).push([msg.params.progress, msg.params.total]);
    }
    inner?.(msg, extra);
  };
  return wire;
}

const CAPS = {
  default: { sampling: {}, elicitation: { form: {} } },
  none: {},
  all: { roots: { listChanged: true }, sampling: {}, elicitation: { form: {} } },
};

function newClient(o, seen) {
  const client = new Client(
    { name: "sluice-e2e-client", version: "1.0.0" },
    { capabilities: CAPS[o.caps] },
  );
  if (o.caps === "none") {
    client.onerror = (e) => process.stderr.write(`client.mjs: client error: ${e?.message ?? e}\n`);
    return client;
  }
  if (o.caps === "all") client.setRequestHandler(ListRootsRequestSchema, async () => ROOTS_REPLY);
  client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
    const p = req.params;
    seen.sampling.push(norm({ messages: p.messages, systemPrompt: p.systemPrompt, maxTokens: p.maxTokens }));
    return SAMPLING_REPLY;
  });
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    const p = req.params;
    seen.elicitation.push({
      message: normStr(p.message || ""),
      mode: p.mode ?? "form",
      requestedFields: Object.keys(p.requestedSchema?.properties || {}).sort(),
      required: p.requestedSchema?.required || [],
    });
    return ELICITATION_REPLY;
  });
  client.onerror = (e) => process.stderr.write(`client.mjs: client error: ${e?.message ?? e}\n`);
  return client;
}

async function step(out, name, fn) {
  const t0 = Date.now();
  try {
    const data = await fn();
    out.steps[name] = { ok: true, ...data };
  } catch (e) {
    out.steps[name] = { ok: false, error: errInfo(e) };
    out.ok = false;
  }
  process.stderr.write(`client.mjs: step ${name}: ${out.steps[name].ok ? "ok" : "FAILED"} (${Date.now() - t0} ms)\n`);
}

async function connect(o, client, transport, out) {
  // The Client does not expose the negotiated version; it hands it to
  // transport.setProtocolVersion() when that method exists, so hook it.
  let negotiated = null;
  const origSet = transport.setProtocolVersion?.bind(transport);
  transport.setProtocolVersion = (v) => {
    negotiated = v;
    origSet?.(v);
  };
  await step(out, "initialize", async () => {
    await client.connect(transport, { timeout: o.timeout });
    const info = client.getServerVersion() || {};
    const instr = client.getInstructions();
    return {
      serverInfo: norm({ name: info.name, title: info.title, version: info.version }),
      protocolVersion: negotiated,
      capabilities: Object.keys(client.getServerCapabilities() || {}).sort(),
      instructions: instr ? { length: instr.length, sha256: sha256(instr) } : null,
    };
  });
  return out.steps.initialize.ok;
}

async function runFull(o, client, transport, out, seen, wire) {
  const ro = { timeout: o.timeout };
  const call = (name, args, opts = {}) => client.callTool({ name, arguments: args }, undefined, { ...ro, ...opts });

  await step(out, "ping", async () => {
    await client.ping(ro);
    return {};
  });

  await step(out, "tools_list", async () => {
    const r = await client.listTools({}, ro);
    const names = r.tools.map((t) => t.name).sort();
    return { count: names.length, names };
  });

  await step(out, "echo", async () => summarizeCallResult(await call("echo", { message: "hello" })));

  await step(out, "get_sum", async () => summarizeCallResult(await call("get-sum", { a: 2, b: 3 })));

  await step(out, "long_running_progress", async () => {
    // The SDK dispatches notifications in a microtask but responses synchronously,
    // so a progress notification that arrives in the same read as the final
    // response never reaches onprogress ("unknown token"). How many do is thus
    // chunking-dependent; record the wire-level notifications (tap) as the
    // comparable value and only whether onprogress fired at all.
    let callbacks = 0;
    wire.progress.clear();
    const r = await call("trigger-long-running-operation", PROGRESS_ARGS, {
      onprogress: () => callbacks++,
    });
    const onWire = [...wire.progress.values()].flat();
    return {
      progressCount: onWire.length,
      progress: onWire,
      onprogressCalled: callbacks > 0,
      result: summarizeCallResult(r),
    };
  });

  await step(out, "sampling", async () => {
    seen.sampling.length = 0;
    const r = await call("trigger-sampling-request", { prompt: "What is Sluice?", maxTokens: 50 });
    return { requestsSeen: seen.sampling.length, request: seen.sampling[0] ?? null, result: summarizeCallResult(r) };
  });

  await step(out, "elicitation", async () => {
    seen.elicitation.length = 0;
    const r = await call("trigger-elicitation-request", {});
    return { requestsSeen: seen.elicitation.length, request: seen.elicitation[0] ?? null, result: summarizeCallResult(r) };
  });

  let firstStatic = null;
  await step(out, "resources_list", async () => {
    const r = await client.listResources({}, ro);
    const uris = r.resources.map((x) => x.uri).sort();
    firstStatic = uris[0] ?? null;
    return { count: uris.length, first: norm(uris.slice(0, 5)) };
  });

  await step(out, "resources_read", async () => {
    if (!firstStatic) throw new Error("no resource to read");
    const r = await client.readResource({ uri: firstStatic }, ro);
    const c = r.contents[0] || {};
    const body = c.text ?? c.blob ?? "";
    return {
      uri: norm(c.uri),
      mimeType: c.mimeType ?? null,
      contents: r.contents.length,
      length: body.length,
      sha256: sha256(body),
      firstLine: normStr(String(c.text ?? "").split("\n")[0]),
    };
  });

  await step(out, "resource_templates_list", async () => {
    const r = await client.listResourceTemplates({}, ro);
    return { uriTemplates: r.resourceTemplates.map((t) => t.uriTemplate).sort() };
  });

  await step(out, "resources_read_dynamic", async () => {
    // Content embeds the server's wall clock; normStr() turns it into <time>.
    const r = await client.readResource({ uri: "demo://resource/dynamic/text/1" }, ro);
    return { contents: norm(r.contents) };
  });

  await step(out, "prompts_list", async () => {
    const r = await client.listPrompts({}, ro);
    return { names: r.prompts.map((p) => p.name).sort() };
  });

  await step(out, "prompts_get", async () => {
    const r = await client.getPrompt({ name: "simple-prompt" }, ro);
    return { messages: norm(r.messages) };
  });

  await step(out, "completion", async () => {
    const r = await client.complete(
      { ref: { type: "ref/prompt", name: "completable-prompt" }, argument: { name: "department", value: "E" } },
      ro,
    );
    return { values: r.completion.values };
  });

  await step(out, "cancellation", async () => {
    const ac = new AbortController();
    let progressBeforeAbort = 0;
    let rejected = false;
    let error = null;
    try {
      await call("trigger-long-running-operation", CANCEL_ARGS, {
        signal: ac.signal,
        onprogress: () => {
          progressBeforeAbort++;
          if (progressBeforeAbort === 1) ac.abort();
        },
      });
    } catch (e) {
      rejected = true;
      error = errInfo(e);
    }
    if (!rejected) throw new Error("cancelled call resolved instead of rejecting");
    const after = await call("echo", { message: "after cancel" });
    return { rejected, error, progressBeforeAbort, echoAfter: summarizeCallResult(after) };
  });
}

async function runDeny(o, client, out, wire) {
  // Report the outcome of one tool call: as the SDK surfaced it (result, or
  // error with code/message/data), plus the JSON-RPC response exactly as it
  // came off the wire ("wire": {result} or {error}, id/jsonrpc dropped).
  // Only volatile tokens (uuids, timestamps, host:port) are scrubbed.
  const t0 = Date.now();
  wire.responses.length = 0;
  try {
    if (o.task) {
      // A task-augmented call: the SDK expects a CreateTaskResult (or an
      // error) and reports what it got as a stream of messages.
      const stream = [];
      for await (const m of client.experimental.tasks.callToolStream({ name: o.tool, arguments: o.toolArgs }, CallToolResultSchema, { timeout: o.timeout, task: { ttl: 60000 } })) {
        if (m.type === "error") throw m.error;
        stream.push(m.type);
        if (m.type === "result") {
          out.steps.call = { ok: true, tool: o.tool, stream, result: norm(m.result) };
          break;
        }
      }
      out.steps.call ??= { ok: true, tool: o.tool, stream };
    } else {
      const r = await client.callTool({ name: o.tool, arguments: o.toolArgs }, undefined, { timeout: o.timeout });
      out.steps.call = { ok: true, tool: o.tool, result: norm(r) };
    }
  } catch (e) {
    const error = errInfo(e);
    out.steps.call = { ok: false, tool: o.tool, error };
    out.ok = false;
  }
  out.steps.call.wire = wire.responses.length ? norm(wire.responses[wire.responses.length - 1]) : null;
  process.stderr.write(`client.mjs: step call: ${out.steps.call.ok ? "ok" : "error"} (${Date.now() - t0} ms)\n`);
}

async function runCalls(o, client, out, wire) {
  // Make each --call in order in this one session and report each like deny.
  out.steps.calls = [];
  // --list-first lists the tools first, as an agent does: the SDK then
  // checks each result's structuredContent against the tool's outputSchema.
  if (o.listFirst) out.steps.tools = (await client.listTools({}, { timeout: o.timeout })).tools.map((t) => t.name).sort();
  for (const c of o.calls) {
    wire.responses.length = 0;
    let step;
    try {
      const r = await client.callTool({ name: c.name, arguments: c.args }, undefined, { timeout: o.timeout });
      step = { ok: true, tool: c.name, result: norm(r) };
    } catch (e) {
      step = { ok: false, tool: c.name, error: errInfo(e) };
    }
    step.wire = wire.responses.length ? norm(wire.responses[wire.responses.length - 1]) : null;
    out.steps.calls.push(step);
  }
}

// ---------------------------------------------------------------- main

async function main() {
  const o = parseArgs(process.argv.slice(2));
  if (o.transport === "websocket") await ensureWebSocketGlobal();
  const out = { scenario: o.scenario, ok: true, steps: {} };
  const seen = { sampling: [], elicitation: [] };
  const emit = () => process.stdout.write(JSON.stringify(out, null, o.pretty ? 2 : 0) + "\n");

  const deadline = setTimeout(() => {
    out.ok = false;
    out.harnessError = `deadline of ${o.deadline} ms exceeded`;
    process.stdout.write(JSON.stringify(out) + "\n", () => process.exit(1));
  }, o.deadline);
  deadline.unref();

  const client = newClient(o, seen);
  const transport = makeTransport(o);

  if (!(await connect(o, client, transport, out))) {
    try { await client.close(); } catch {}
    emit();
    return 3;
  }

  const wire = tapWire(transport);
  if (o.scenario === "full") await runFull(o, client, transport, out, seen, wire);
  else if (o.scenario === "calls") await runCalls(o, client, out, wire);
  else await runDeny(o, client, out, wire);

  await step(out, "close", async () => {
    if (transport instanceof StreamableHTTPClientTransport) await transport.terminateSession();
    await client.close();
    return {};
  });
  emit();
  return 0;
}

main().then(
  (code) => {
    // Flush stdout, then exit (a stray open handle must not keep us alive).
    process.stdout.write("", () => process.exit(code));
  },
  (e) => {
    process.stderr.write(`client.mjs: harness failure: ${e?.stack ?? e}\n`);
    process.exit(1);
  },
);
