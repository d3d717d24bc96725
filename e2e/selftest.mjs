#!/usr/bin/env node
// Self-test of the harness without the gateway: starts server-everything in every
// mode (serve.mjs), runs `client.mjs --scenario full` against each one directly
// (RUNS times per transport), and checks that every run is ok and that all
// outputs are byte-identical. Prints "N passed, N failed"; exit 1 on any failure.
//
//   node selftest.mjs [RUNS]

import { spawn, execFile } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const runs = Number(process.argv[2] || 1);
const node = process.execPath;

function startServer(mode) {
  return new Promise((resolve, reject) => {
    const p = spawn(node, [join(here, "serve.mjs"), mode, "--port", "0"], { stdio: ["ignore", "ignore", "pipe"] });
    let buf = "";
    const timer = setTimeout(() => reject(new Error(`${mode}: no SLUICE_E2E_READY within 15 s`)), 15000);
    p.stderr.on("data", (d) => {
      buf += d;
      const m = buf.match(/^SLUICE_E2E_READY (\S+)$/m);
      if (m) {
        clearTimeout(timer);
        p.stderr.resume();
        resolve({ proc: p, url: m[1] });
      }
    });
    p.on("exit", (c) => reject(new Error(`${mode}: server exited ${c}: ${buf}`)));
  });
}

function runClient(args) {
  return new Promise((resolve) => {
    const t0 = Date.now();
    execFile(node, [join(here, "client.mjs"), ...args], { timeout: 120000 }, (err, stdout, stderr) => {
      resolve({ code: err ? err.code ?? 1 : 0, stdout, stderr, ms: Date.now() - t0 });
    });
  });
}

const servers = {};
let passed = 0;
let failed = 0;
let reference = null;
try {
  for (const mode of ["streamableHttp", "sse", "websocket"]) servers[mode] = await startServer(mode);
  const targets = [
    ["streamable-http", ["--transport", "streamable-http", "--url", servers.streamableHttp.url]],
    ["sse", ["--transport", "sse", "--url", servers.sse.url]],
    ["websocket", ["--transport", "websocket", "--url", servers.websocket.url]],
    ["stdio", ["--transport", "stdio", "--", node, join(here, "serve.mjs"), "stdio"]],
  ];
  for (let i = 0; i < runs; i++) {
    for (const [name, args] of targets) {
      const r = await runClient(args);
      let why = null;
      let parsed = null;
      try { parsed = JSON.parse(r.stdout); } catch { why = "stdout is not one JSON object"; }
      if (!why && r.code !== 0) why = `exit ${r.code}`;
      if (!why && !parsed.ok) why = "not ok: " + Object.entries(parsed.steps).filter(([, s]) => !s.ok).map(([k]) => k).join(",");
      if (!why) {
        if (reference === null) reference = r.stdout;
        else if (r.stdout !== reference) why = "output differs from first run";
      }
      if (why) {
        failed++;
        console.log(`FAIL ${name} run ${i + 1} (${r.ms} ms): ${why}`);
        process.stderr.write(r.stderr);
        process.stderr.write(r.stdout);
      } else {
        passed++;
        console.log(`ok   ${name} run ${i + 1} (${r.ms} ms)`);
      }
    }
  }
} catch (e) {
  failed++;
  console.log(`FAIL setup: ${e.message}`);
} finally {
  for (const s of Object.values(servers)) s.proc.kill("SIGTERM");
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
