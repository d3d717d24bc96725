#!/usr/bin/env node
// Launch @modelcontextprotocol/server-everything for the Sluice e2e tests.
//
//   node serve.mjs stdio
//   node serve.mjs streamableHttp|sse|websocket [--port N] [--host 127.0.0.1]
//
// For the network modes this wrapper (unlike the package's own launcher, which
// binds every interface on $PORT or 3001):
//   * binds --host (default 127.0.0.1) only;
//   * accepts --port 0 (or PORT=0) and picks a free port;
//   * prints exactly one line "SLUICE_E2E_READY <url>" on stderr once it accepts
//     connections, with the real port, e.g. SLUICE_E2E_READY http://127.0.0.1:41234/mcp
// "websocket" is not a server-everything mode: it serves the same server
// (createServer() from the package) over WebSocket, subprotocol "mcp", one
// JSON-RPC message per text frame, one MCP session per connection.
// Everything else on stdout/stderr is server-everything's own logging.

import http from "node:http";
import { randomUUID } from "node:crypto";

const argv = process.argv.slice(2);
const mode = argv[0];
let port = process.env.PORT ?? "0";
let host = "127.0.0.1";
for (let i = 1; i < argv.length; i++) {
  if (argv[i] === "--port") port = argv[++i];
  else if (argv[i] === "--host") host = argv[++i];
  else {
    console.error(`serve.mjs: unknown argument ${argv[i]}`);
    process.exit(2);
  }
}
const PKG = "@modelcontextprotocol/server-everything/dist";
const PATHS = { streamableHttp: "/mcp", sse: "/sse", websocket: "/" };

function ready(server, scheme, path) {
  const a = server.address();
  const h = a.family === "IPv6" ? `[${a.address}]` : a.address;
  process.stderr.write(`SLUICE_E2E_READY ${scheme}://${h}:${a.port}${path}\n`);
}

switch (mode) {
  case "stdio":
    await import(`${PKG}/transports/stdio.js`);
    break;

  case "streamableHttp":
  case "sse": {
    // server-everything calls express's app.listen(process.env.PORT || 3001, cb);
    // force our host and report the actual port.
    const origListen = http.Server.prototype.listen;
    http.Server.prototype.listen = function (p, ...rest) {
      http.Server.prototype.listen = origListen;
      const cb = rest.find((x) => typeof x === "function");
      this.once("listening", () => ready(this, "http", PATHS[mode]));
      return origListen.call(this, Number(p), host, cb);
    };
    process.env.PORT = String(port);
    await import(`${PKG}/transports/${mode}.js`);
    break;
  }

  case "websocket": {
    const { WebSocketServer } = await import("ws");
    const { createServer } = await import(`${PKG}/server/index.js`);
    const wss = new WebSocketServer({
      host,
      port: Number(port),
      handleProtocols: (protocols) => (protocols.has("mcp") ? "mcp" : false),
    });
    wss.on("listening", () => ready(wss, "ws", PATHS.websocket));
    wss.on("connection", async (ws) => {
      const transport = new WsServerTransport(ws);
      const { server, cleanup } = createServer();
      server.server.onclose = () => cleanup(transport.sessionId);
      await server.connect(transport);
      console.error(`WebSocket client connected: ${transport.sessionId}`);
    });
    break;
  }

  default:
    console.error("usage: node serve.mjs stdio|streamableHttp|sse|websocket [--port N] [--host H]");
    process.exit(2);
}

// Minimal MCP server Transport over one `ws` connection.
class WsServerTransport {
  constructor(ws) {
    this.ws = ws;
    this.sessionId = randomUUID();
  }
  async start() {
    this.ws.on("message", (data, isBinary) => {
      if (isBinary) return this.onerror?.(new Error("binary frame not supported"));
      let msg;
      try {
        msg = JSON.parse(data.toString("utf8"));
      } catch (e) {
        return this.onerror?.(e);
      }
      this.onmessage?.(msg);
    });
    this.ws.on("close", () => this.onclose?.());
    this.ws.on("error", (e) => this.onerror?.(e));
  }
  async send(message) {
    if (this.ws.readyState !== this.ws.OPEN) throw new Error("Not connected");
    await new Promise((res, rej) => this.ws.send(JSON.stringify(message), (e) => (e ? rej(e) : res())));
  }
  async close() {
    this.ws.close();
  }
}
