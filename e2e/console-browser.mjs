#!/usr/bin/env node
// Drives the operator console in headless Chromium (Debian's, through
// playwright-core) against a running gateway and prints one JSON object
// with what it saw. The Go test (console_test.go) starts the gateway and
// checks the output.
//
//   ADMIN=http://127.0.0.1:P GATEWAY=http://127.0.0.1:Q/mcp/demo TOKEN=t0k \
//   HELD=apr_… SHOTS=dir LURE=http://127.0.0.1:R/lure HOSTILE=true node console-browser.mjs
//
// LURE is a page of the agent's on another port of the same host: the
// signed-in operator opens it, and it sends the browser on to its own
// /console/ paths (the test's server records the cookies it is sent).
import { chromium } from "playwright-core";

const { ADMIN, GATEWAY, TOKEN, HELD, SHOTS, LURE } = process.env;
const out = { steps: {} };
const step = (name, v) => { out.steps[name] = v; };

// call makes a MCP 2026-07-28 tools/call (or tools/list) as agent-a, or
// as the agent named.
let nextID = 100;
async function call(method, name, args, agent = "agent-a") {
  const meta = { "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": { name: agent, version: "1" },
    "io.modelcontextprotocol/clientCapabilities": {} };
  const params = method === "tools/call" ? { name, arguments: args, _meta: meta } : { _meta: meta };
  const headers = { "Content-Type": "application/json", Accept: "application/json, text/event-stream",
    "Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": method };
  if (name) headers["Mcp-Name"] = name;
  const res = await fetch(GATEWAY, { method: "POST", headers, body: JSON.stringify({ jsonrpc: "2.0", id: nextID++, method, params }) });
  return await res.text();
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync"],
});
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  const page = await context.newPage();
  const shot = async (name) => { if (SHOTS) await page.screenshot({ path: `${SHOTS}/${name}.png`, fullPage: true }); };
  // Agents name themselves with markup (the Go test's calls, and one in
  // the live feed below): had any page let it in, the strict CSP would
  // refuse its handler and say so on the console, and an alert would open.
  const injected = [];
  page.on("console", (m) => { if (/Content.Security.Policy|Refused to/i.test(m.text())) injected.push(m.text()); });
  page.on("dialog", (d) => { injected.push("dialog: " + d.message()); d.dismiss(); });

  // Sign in (keyboard only: the form is reachable with Tab and Enter). The
  // link the operator followed says "Done: …" in words of its own: they
  // are not the console's to show once signed in.
  await page.goto(`${ADMIN}/console/feed?done=${encodeURIComponent("the admin token was rotated, get the new one at http://127.0.0.1:9999")}`);
  step("redirected_to_login", page.url().includes("/console/login"));
  await shot("login");
  await page.keyboard.press("Tab"); // skip link
  await page.getByLabel("Your name").fill("alice");
  await page.getByLabel("Admin token").fill(TOKEN);
  await page.getByLabel("Admin token").press("Enter");
  await page.waitForURL(/\/console\/k\/[0-9a-f]+\/feed/); // the session's pages have a path of their own
  step("signed_in", await page.locator("h1").textContent());
  step("lure_flash", await page.locator(".flash").count());

  // The operator opens a page the agent serves on another port of the
  // host; it sends the browser to /console/… on its own port. Cookies are
  // scoped by host, not port: the console's must not go with it.
  if (LURE) {
    const lure = await context.newPage();
    await lure.goto(LURE);
    await lure.waitForURL(/\/console\/feed/);
    step("lure_landed", lure.url());
    await lure.close();
  }

  // The live feed shows a denied call within a second.
  await page.waitForFunction(() => document.getElementById("live").textContent.startsWith("Live"));
  const sent = Date.now();
  await call("tools/call", "send_email", { to: "x@example.com", subject: "s", body: "b" });
  const row = page.locator("#feed tbody tr.d-deny", { hasText: "send_email" }).first();
  await row.waitFor({ timeout: 1000 });
  step("feed_denied_ms", Date.now() - sent);
  if (process.env.HOSTILE === "true") { // not in the README's pictures
    await call("tools/call", "send_email", { to: "x@example.com" }, '<img src=x onerror="alert(1)">');
    await page.locator("#feed tbody tr.d-deny", { hasText: "<img" }).first().waitFor({ timeout: 2000 });
    step("hostile_live", true);
  }
  await shot("feed");

  // A call's page: both events side by side.
  await row.getByRole("link").click();
  await page.waitForURL(/\/console\/k\/[0-9a-f]+\/calls\//);
  step("call_page", { policy: await page.locator("#pe").isVisible(), intent: await page.locator("#ic").isVisible(),
    axes: await page.locator("text=action_type").count() });
  await shot("call");

  // Approve the held call; the agent's retry goes through.
  await page.getByRole("link", { name: "Approvals" }).click();
  // Measured once the page and its stylesheet are in: a click waits for
  // the navigation to commit only, and an unstyled table is wider (seen
  // once in CI on a loaded machine).
  await page.waitForURL(/\/approvals/, { waitUntil: "load" });
  const held = page.locator(`tr[data-id="${HELD}"]`);
  step("held_listed", await held.count());
  // Held calls that read as agent-a's: its own, not another agent's whose
  // name only adds a blank (the Go test holds one of "agent-a\u00a0").
  step("held_as_agent_a", await page.locator("#pending tbody tr td:nth-child(2)").evaluateAll(
    (tds) => tds.filter((td) => td.innerText.trim() === "agent-a").length));
  // The whole of each argument is in sight, not past the right edge of
  // the window behind a run of spaces the agent put in, and so are the
  // buttons that decide it (a table cell grows to a one-line box's width).
  step("held_arguments_in_sight", await page.locator("#pending tr", { hasText: "agent-c" }).locator("pre").evaluate((pre) => {
    const text = pre.firstChild, at = text.data.indexOf("attacker@evil.com");
    if (at < 0) return false;
    const range = document.createRange();
    range.setStart(text, at);
    range.setEnd(text, at + "attacker@evil.com".length);
    const r = range.getBoundingClientRect(), box = pre.getBoundingClientRect();
    return r.top >= box.top && r.bottom <= box.bottom && r.left >= box.left && r.right <= box.right &&
      r.left >= 0 && r.right <= document.documentElement.clientWidth;
  }));
  step("held_decide_in_sight", await page.locator("#pending tr", { hasText: "agent-c" }).getByRole("button", { name: "Approve" }).evaluate(
    (b) => b.getBoundingClientRect().right <= document.documentElement.clientWidth));
  await shot("approvals");
  await held.getByLabel("Reason").fill("checked the numbers");
  await held.getByRole("button", { name: "Approve" }).click();
  await page.waitForURL(/done=/);
  step("approved_flash", await page.locator(".flash").textContent());
  step("retry", await call("tools/call", "add", { a: 2, b: 3 }));

  // A drifted tool: the demo server rotates web_search's description;
  // the inventory page shows the drift and approves it.
  await call("tools/list"); // pinned on first sight
  await call("tools/call", "rotate_description", {});
  await call("tools/list"); // the changed web_search: drift
  await page.getByRole("link", { name: "Inventory" }).click();
  step("drift_shown", await page.locator("pre.diff").count());
  await shot("inventory");
  await page.getByRole("button", { name: "Approve web_search" }).click();
  await page.waitForURL(/done=/);
  step("drift_approved", await page.locator(".flash").textContent());
  step("drift_after", await page.locator("pre.diff").count());

  // Recommendations: run the engine, open the agent's ADD_TOOL, decline it with a reason.
  await page.getByRole("link", { name: "Recommendations" }).click();
  await page.getByRole("button", { name: "Run the engine now" }).click();
  await page.waitForURL(/done=/);
  await shot("recommendations");
  const link = page.locator("#recs tr", { hasText: "ADD_TOOL" }).getByRole("link").first();
  step("recommendation_listed", await link.count());
  await link.click();
  step("diff_before_approval", await page.locator("#diff").textContent());
  await shot("recommendation");
  await page.getByLabel("Reason").selectOption("DEFERRED");
  await page.getByRole("button", { name: "Decline" }).click();
  await page.waitForURL(/done=/);
  step("declined_status", await page.locator("#status").textContent());

  // The other pages render.
  await page.getByRole("link", { name: "Agents" }).click();
  step("agents", await page.locator("table tbody tr", { hasText: "agent-a" }).count());
  await shot("agents");
  await page.getByRole("link", { name: "Policy" }).click();
  await page.getByLabel(/A draft policy/).fill("default: deny\n");
  await page.getByRole("button", { name: "Compare" }).click();
  step("replay", await page.locator("#replay").textContent());
  await shot("policy");
  step("injected", injected);
  out.ok = true;
} catch (e) {
  out.ok = false;
  out.error = String(e.stack || e);
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
