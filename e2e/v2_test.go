package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestTSv2ThroughSluice runs a client of the MCP TypeScript SDK v2
// (@modelcontextprotocol/client 2.4.0, v2-client.mjs) against a server of
// it (@modelcontextprotocol/server 2.4.0, v2-server.mjs) in both eras —
// 2026-07-28, negotiated with server/discover, and 2025, with initialize —
// directly and through `sluice serve` whose policy is `{default: allow}`
// (inventory drift only warned of, so that a tool the server adds is
// called as directly): over Streamable HTTP to an HTTP and a stdio
// upstream, and over /sse (v2 has an SSE client; it has no WebSocket one).
// Every step — tools, arguments mirrored into Mcp-Param-* headers
// (SEP-2243), a tool's error, an unknown tool, progress,
// elicitation and sampling (input_required rounds on 2026-07-28, requests
// to the client on 2025), resources, prompts, list_changed,
// resources/updated after a subscription (resources/subscribe on 2025, in
// subscriptions/listen on 2026-07-28), a subscription of the client's own,
// cancellation seen by the server, what the SDK reported through onerror
// (nothing), and the Mcp-Method and Mcp-Name headers the client sends with
// none refused — must come out as it does directly.
func TestTSv2ThroughSluice(t *testing.T) {
	requireV2(t)
	bin, server, httpURL, ups := v2Upstreams(t)
	gw := startSluice(t, bin, "policy: {default: allow}\ninventory: {on_drift: warn}\nupstreams:\n"+
		ups)

	for _, era := range []string{"modern", "legacy"} {
		t.Run(era, func(t *testing.T) {
			want := runV2Client(t, "--era", era, "--transport", "http", "--url", httpURL)
			checkV2Direct(t, era, want)
			if diff := cmp.Diff(dropHeaders(want), runV2Client(t, "--era", era, "--transport", "stdio", "--", "node", server, "stdio")); diff != "" {
				t.Errorf("directly, stdio differs from HTTP (-http +stdio):\n%s", diff)
			}
			for _, tc := range []struct {
				name, transport, path string
			}{
				{"http upstream via /mcp", "http", "/mcp/v2http"},
				{"stdio upstream via /mcp", "http", "/mcp/v2stdio"},
				{"http upstream via /sse", "sse", "/sse/v2http"},
				{"stdio upstream via /sse", "sse", "/sse/v2stdio"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					got := runV2Client(t, "--era", era, "--transport", tc.transport, "--url", gw+tc.path)
					want := want
					if tc.transport == "sse" {
						// Its POSTs are the legacy SSE transport's.
						if bad := got["steps"].(map[string]any)["headers"].(map[string]any)["badStatus"]; len(bad.([]any)) > 0 {
							t.Errorf("refused POSTs over /sse: %v", bad)
						}
						want, got = dropHeaders(want), dropHeaders(got)
					}
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("through Sluice differs from direct (-direct +through):\n%s", diff)
					}
				})
			}
		})
	}
}

// TestTSv2PolicyThroughSluice: a v2 client, in both eras, through `sluice
// serve` to a v2 server over HTTP and over stdio, whose policy denies one
// tool and holds two, soft (result_mode tool_result), hard (throw), and
// soft with approvals.client_may_answer. The soft deny and hold reach the
// client as readable tool results, the envelope in structuredContent; the
// hard ones as ProtocolErrors with the envelope in their data. Once the
// operator approves a held call, the same call sent again by the client
// runs, the held tool that asks the client for input (elicitation and
// sampling) too. With client_may_answer the client is asked itself
// (input_required on 2026-07-28, elicitation/create on 2025), answers yes,
// and its call runs.
func TestTSv2PolicyThroughSluice(t *testing.T) {
	requireV2(t)
	bin, _, _, ups := v2Upstreams(t)
	const token = "v2-test-admin-token-0123456789abcdef"
	const asked = `["elicitation: Go ahead?","sampling: say hi"]`
	for _, mode := range []string{"tool_result", "throw", "client_may_answer"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			config := filepath.Join(dir, "sluice.yaml")
			resultMode, extra := mode, "admin_listen: 127.0.0.1:0\nadmin_token: "+token+"\n"
			if mode == "client_may_answer" {
				resultMode, extra = "tool_result", "approvals: {client_may_answer: true}\n"
			}
			if err := os.WriteFile(config, []byte("listen: 127.0.0.1:0\ndata_dir: "+filepath.Join(dir, "data")+"\n"+extra+
				"policy: {default: allow, result_mode: "+resultMode+", deny: [secret], require_approval: [held, ask]}\nupstreams:\n"+
				ups), 0o600); err != nil {
				t.Fatal(err)
			}
			gw, admin := startServeFileAdmin(t, bin, config)
			wants := []string{`"echo":{"isError":false,"ok":true,"text":["echo: hello"]}`}
			switch mode {
			case "tool_result":
				wants = append(wants,
					`"secret":{"isError":true,"ok":true,"structuredContent":{"code":"rule_deny"`,
					`"text":["this call is not allowed by policy (secret)"]`,
					`"held":{"asked":[],"isError":true,"structuredContent":{"code":"approval_required"`)
			case "throw":
				wants = append(wants,
					`"secret":{"error":{"code":-32001,"data":{"code":"rule_deny"`,
					`"held":{"asked":[],"error":{"code":-32002,"data":{"code":"approval_required"`)
			}
			if mode == "client_may_answer" {
				wants = append(wants,
					`"held":{"held":{"asked":["approval: Sluice is holding a call to tool \"held\" until it is approved."],"isError":false,"text":["held ran"]}`,
					`"held_ask":{"held":{"asked":["approval: Sluice is holding a call to tool \"ask\" until it is approved.","elicitation: Go ahead?","sampling: say hi"],"isError":false,"text":["ask: action=accept ok=true model=hi state=round-1"]}`)
			} else {
				wants = append(wants,
					`"again":{"asked":[],"isError":false,"text":["held ran"]}`,
					`"again":{"asked":`+asked+`,"isError":false,"text":["ask: action=accept ok=true model=hi state=round-1"]}`,
					`"approve":200`)
			}
			var first map[string]any
			for _, era := range []string{"modern", "legacy"} {
				for _, up := range []string{"v2http", "v2stdio"} {
					args := []string{"--era", era, "--transport", "http", "--url", gw + "/mcp/" + up, "--scenario", "policy"}
					if admin != "" {
						args = append(args, "--admin", admin, "--admin-token", token)
					}
					out := dropHeaders(runV2Client(t, args...))
					delete(out["steps"].(map[string]any), "connect")
					b, _ := json.Marshal(out)
					s := string(b)
					for _, want := range wants {
						if !strings.Contains(s, want) {
							t.Errorf("%s via %s: lacks %s: %s", era, up, want, s)
						}
					}
					if first == nil {
						first = out
					} else if diff := cmp.Diff(first, out); diff != "" {
						t.Errorf("%s via %s differs from modern via v2http (-first +this):\n%s", era, up, diff)
					}
				}
			}
		})
	}
}

// TestTSv2VirtualServer runs the v2 client against virtual servers of one
// v2 upstream each (HTTP, stdio) in both eras, and compares with the run
// direct to the server. Left out: the name the server gives (the virtual
// server's own), the message of the unknown tool's -32602 (the virtual
// server's, no upstream having the tool) and, in the 2025 era, resource
// updates, since a virtual server offers no resources/subscribe there
// (README, Virtual servers). On 2026-07-28 list changes, the client's own
// subscription and resource updates come on subscriptions/listen, which
// the virtual server serves (before, they were left out here too).
func TestTSv2VirtualServer(t *testing.T) {
	requireV2(t)
	bin, _, httpURL, ups := v2Upstreams(t)
	gw := startSluice(t, bin, "policy: {default: allow}\ninventory: {on_drift: warn}\nupstreams:\n"+
		ups+
		"virtual_servers:\n  - {name: vhttp, upstreams: [v2http]}\n  - {name: vstdio, upstreams: [v2stdio]}\n")
	comparable := func(out map[string]any, era string) map[string]any {
		steps := out["steps"].(map[string]any)
		delete(steps["connect"].(map[string]any), "server")
		if code := steps["unknown"].(map[string]any)["error"].(map[string]any)["code"]; code != -32602.0 {
			t.Errorf("unknown tool: code %v, want -32602", code)
		}
		delete(steps, "unknown")
		if era == "legacy" {
			delete(steps, "resource_updated")
		}
		return map[string]any{"steps": steps}
	}
	for _, era := range []string{"modern", "legacy"} {
		t.Run(era, func(t *testing.T) {
			want := runV2Client(t, "--era", era, "--transport", "http", "--url", httpURL)
			checkV2Direct(t, era, want)
			want = comparable(want, era)
			for _, path := range []string{"/mcp/vhttp", "/mcp/vstdio"} {
				got := comparable(runV2Client(t, "--era", era, "--transport", "http", "--url", gw+path), era)
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s: through the virtual server differs from direct (-direct +through):\n%s", path, diff)
				}
			}
		})
	}
}

// TestTSv2AutoNegotiation: a v2 client in its 'auto' mode probes with
// server/discover and falls back to initialize when the server is of the
// 2025 era. Through Sluice it settles on the same era as directly: the
// 2026-07-28 one with a v2 server, the 2025 one with server-everything (on
// the v1 SDK), over HTTP and stdio upstreams alike.
func TestTSv2AutoNegotiation(t *testing.T) {
	requireV2(t)
	requireNode(t)
	bin, _, v2URL, ups := v2Upstreams(t)
	wd, _ := os.Getwd()
	v1URL := startServer(t, "streamableHttp")
	gw := startSluice(t, bin, "policy: {default: allow}\nupstreams:\n"+ups+
		"  - {name: v1http, url: '"+v1URL+"'}\n"+
		"  - {name: v1stdio, command: node, args: ['"+filepath.Join(wd, "serve.mjs")+"', stdio]}\n")
	for _, tc := range []struct {
		name, direct, era string
		through           []string
	}{
		{"v2 server", v2URL, "modern", []string{"/mcp/v2http", "/mcp/v2stdio"}},
		{"v1 server", v1URL, "legacy", []string{"/mcp/v1http", "/mcp/v1stdio"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := dropHeaders(runV2Client(t, "--era", "auto", "--scenario", "basic", "--transport", "http", "--url", tc.direct))
			if era := want["steps"].(map[string]any)["connect"].(map[string]any)["era"]; era != tc.era || want["ok"] != true {
				t.Fatalf("directly: era %v, want %s: %v", era, tc.era, want)
			}
			for _, path := range tc.through {
				got := dropHeaders(runV2Client(t, "--era", "auto", "--scenario", "basic", "--transport", "http", "--url", gw+path))
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s: through Sluice differs from direct (-direct +through):\n%s", path, diff)
				}
			}
		})
	}
}

// checkV2Direct checks that the direct run itself did what the scenario
// asks, so that a comparison with it means something.
func checkV2Direct(t *testing.T, era string, out map[string]any) {
	t.Helper()
	b, _ := json.Marshal(out)
	s := string(b)
	for _, want := range []string{
		`"era":"` + era + `"`,
		`"badStatus":[]`,
		`"reported":{"errors":[],"ok":true}`,
		`"text":["route: eu-west ü 3"]`,
		`"echo":{"isError":false,"ok":true,"text":["echo: hello"]}`,
		`"text":["fail: it always does"]`,
		`"progress":["1/3 step 1","2/3 step 2","3/3 step 3"]`,
		`"asked":["elicitation: Go ahead?","sampling: say hi"]`,
		`"text":["ask: action=accept ok=true model=hi state=round-1"]`,
		`"item":["item 7"]`,
		`"got":["Hello, Ada"]`,
		`"listed":true`,
		`"resource_updated":{"ok":true,"uri":"doc://static"}`,
		`"cancelled":true`,
		`"seen":true`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("direct %s run lacks %s: %s", era, want, s)
		}
	}
	if era == "modern" && !strings.Contains(s, `"Mcp-Method=tools/call Mcp-Name=route mcp-param-n=3 mcp-param-region==?base64?ZXUtd2VzdCDDvA==?="`) {
		t.Errorf("the direct modern run's call of route did not carry its arguments as Mcp-Param headers: %s", s)
	}
}

func dropHeaders(out map[string]any) map[string]any {
	steps := map[string]any{}
	for k, v := range out["steps"].(map[string]any) {
		if k != "headers" {
			steps[k] = v
		}
	}
	return map[string]any{"ok": out["ok"], "steps": steps}
}

// v2Upstreams builds sluice (bin) and starts the v2 server over HTTP at
// httpURL; ups are the upstreams entries of a config naming it v2http
// and, over stdio, v2stdio (server is its script).
func v2Upstreams(t *testing.T) (bin, server, httpURL, ups string) {
	t.Helper()
	bin = buildBinaries(t)
	wd, _ := os.Getwd()
	server = filepath.Join(wd, "v2-server.mjs")
	httpURL = startAnnounced(t, "SLUICE_E2E_READY ", "node", server, "http")
	ups = "  - {name: v2http, url: '" + httpURL + "'}\n" +
		"  - {name: v2stdio, command: node, args: ['" + server + "', stdio]}\n"
	return bin, server, httpURL, ups
}

func requireV2(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("node_modules/@modelcontextprotocol/client"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("node_modules missing under CI: run npm ci in e2e/ (%v)", err)
		}
		t.Skip("node_modules missing: run `npm ci` in e2e/ to enable the end-to-end tests")
	}
}

// runV2Client runs v2-client.mjs and returns its JSON output.
func runV2Client(t *testing.T, args ...string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{"v2-client.mjs"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var out map[string]any
	if jerr := json.Unmarshal(stdout.Bytes(), &out); jerr != nil {
		t.Fatalf("v2 client %v: %v; output %q; stderr:\n%s", args, err, stdout.String(), lastLines(stderr.String(), 30))
	}
	if err != nil {
		t.Logf("v2 client %v exited with %v; stderr:\n%s", args, err, lastLines(stderr.String(), 30))
	}
	return out
}
