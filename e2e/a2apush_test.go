package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// hookPush is one POST a caller's webhook received.
type hookPush struct {
	path, token, authorization, contentType, body string
}

// agentSeen is what a2a-agent.mjs (PUSH=1) reports at /seen: the push
// configs the SDK's store was given and each push its sender sent.
type agentSeen struct {
	Configs []struct {
		TaskID, URL, Token string
		Authentication     any
	}
	Pushes []struct {
		URL    string
		State  *int // the SDK's TaskState enum: 3 is TASK_STATE_COMPLETED
		Result string
	}
}

// TestPushRelayJSSDK: the push relay end to end with @a2a-js/sdk on both
// sides, set up as the README says: `sluice serve` with API keys made by
// `sluice keys create` (auth: {mode: api_key}), public_url, and the agent
// (the SDK's server with its own InMemoryPushNotificationStore and
// DefaultPushNotificationSender, card capabilities.pushNotifications) at
// agents[].url with allow_push_addresses: [127.0.0.1], which the test needs
// because the caller's webhook is an httptest server on loopback (without
// it the relay refuses to deliver there, as it refuses every address in the
// gateway's network). For each binding the SDK's client speaks in A2A 1.0
// (JSON-RPC with A2A-Version: 1.0 and the 1.0 method names, and REST), the
// caller registers a push config with a message
// (configuration.taskPushNotificationConfig) and another with
// CreateTaskPushNotificationConfig, each with its token (the second with
// authentication too, scheme ApiKey, which the SDK's sender writes as
// "Authorization: ApiKey ..."): the agent stores
// only the gateway's URL and token, never the caller's; get and list show
// the caller its own URL and token; the agent's push (the SDK's sender,
// application/a2a+json, X-A2A-Notification-Token) reaches the caller's
// webhook, as application/a2a+json, with the caller's token and not the relay's; after the caller's
// second config is deleted through Sluice (the agent drops it); after the
// caller's key is revoked (`sluice keys revoke`), the task's completion is not
// delivered (the sender gets 410).
func TestPushRelayJSSDK(t *testing.T) {
	requireNode(t)
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+string(filepath.Separator), "./cmd/sluice")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	agent := startAgent(t, "PUSH=1")

	var mu sync.Mutex
	var got []hookPush
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, hookPush{r.URL.Path, r.Header.Get("X-A2A-Notification-Token"), r.Header.Get("Authorization"), r.Header.Get("Content-Type"), string(b)})
		mu.Unlock()
	}))
	t.Cleanup(hook.Close)
	pushesTo := func(prefix string) []hookPush {
		mu.Lock()
		defer mu.Unlock()
		var out []hookPush
		for _, p := range got {
			if strings.HasPrefix(p.path, prefix) {
				out = append(out, p)
			}
		}
		return out
	}

	// public_url must be known before serve listens, and serve binds a
	// port of the kernel's choosing: agents reach it through a front the
	// test holds from the start, forwarding to serve once it is up.
	var backend atomic.Pointer[httputil.ReverseProxy]
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := backend.Load(); p != nil {
			p.ServeHTTP(w, r)
			return
		}
		http.Error(w, "sluice serve is not up yet", http.StatusServiceUnavailable)
	}))
	t.Cleanup(front.Close)
	public := front.URL
	addr := "127.0.0.1:0"
	dir := t.TempDir()
	config := filepath.Join(dir, "sluice.yaml")
	yaml := fmt.Sprintf("listen: %s\ndata_dir: %s\npolicy: {default: allow}\nauth: {mode: api_key}\npublic_url: %s\n"+
		"agents: [{name: echo, url: %s, allow_push_addresses: [127.0.0.1]}]\n", addr, filepath.Join(dir, "data"), public, agent)
	if err := os.WriteFile(config, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	keys := func(args ...string) string {
		out, err := exec.Command(filepath.Join(bin, "sluice"), append(append([]string{"keys"}, args...), "--config", config)...).CombinedOutput()
		if err != nil {
			t.Fatalf("sluice keys %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	// Keys are made before serve starts, as the README's order has it
	// (and a key file must exist for serve to read).
	callers := map[string]string{}
	for _, name := range []string{"alice-jsonrpc", "alice-rest", "alice-0.3"} {
		out := keys("create", "--agent", name)
		for _, f := range strings.Fields(out) {
			if strings.HasPrefix(f, "sk_") {
				callers[name] = f
			}
		}
		if callers[name] == "" {
			t.Fatalf("sluice keys create printed no key: %s", out)
		}
	}
	gw := startServeFile(t, bin, config)
	target, err := url.Parse(gw)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	rewrite := proxy.Director
	proxy.Director = func(r *http.Request) { rewrite(r); r.Host = target.Host } // a Host serve admits
	backend.Store(proxy)
	base := gw + "/a2a/echo/" // with the slash: the SDK resolves the card path against it
	// The card is behind auth: too (the README says to give the SDK's
	// card resolver a fetch that sends the key).
	if resp, err := http.Get(base + ".well-known/agent-card.json"); err != nil {
		t.Fatal(err)
	} else if resp.Body.Close(); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the card without a key: HTTP %d, want 401", resp.StatusCode)
	}

	for _, c := range []struct{ name, transport, version, binding, contentType string }{
		{"alice-jsonrpc", "", "1.0", "JsonRpcTransport", "application/a2a+json"},
		{"alice-rest", "rest", "1.0", "RestTransport", "application/a2a+json"},
		// 0.3's JSON-RPC (the SDK's LegacyJsonRpcTransport and its
		// server's legacyCompat): the agent pushes 0.3's bare events.
		{"alice-0.3", "", "0.3", "LegacyJsonRpcTransport", "application/json"},
	} {
		t.Run(c.name, func(t *testing.T) {
			key := callers[c.name]
			token := "hook-token-" + c.name
			client := func(args ...string) string {
				args = append(args, "--url", base, "--header", "Authorization: Bearer "+key, "--raw-ids", "--version", c.version)
				if c.transport != "" {
					args = append(args, "--transport", c.transport)
				}
				return a2aClient(t, args...)
			}
			var steps []map[string]json.RawMessage
			out := client("--scenario", "push", "--hook", hook.URL+"/"+c.name, "--token", token)
			if err := json.Unmarshal([]byte(out), &steps); err != nil || len(steps) != 5 {
				t.Fatalf("client transcript %s: %v", out, err)
			}
			var sent struct{ ID string }
			var created, gotCfg struct {
				ID, TaskID, URL, Token string
				Authentication         struct{ Scheme, Credentials string }
			}
			var listed struct{ Configs []struct{ URL, Token string } }
			for i, v := range []any{&sent, &created, &gotCfg, &listed} {
				for _, raw := range steps[i] {
					if err := json.Unmarshal(raw, v); err != nil {
						t.Fatalf("step %d %s: %v", i, raw, err)
					}
				}
			}
			var binding struct{ Name, Version string }
			_ = json.Unmarshal(steps[4]["binding"], &binding)
			if strings.TrimPrefix(binding.Name, "_") != c.binding || binding.Version != c.version {
				t.Errorf("the SDK's client spoke %+v; want %s in A2A %s", binding, c.binding, c.version)
			}
			if sent.ID == "" {
				t.Fatalf("the message with a push config: %s", out)
			}
			caller := hook.URL + "/" + c.name
			if created.URL != caller+"/set" || created.Token != token+"-set" || gotCfg.URL != caller+"/set" || gotCfg.Token != token+"-set" {
				t.Errorf("create and get through Sluice showed %+v and %+v; want the caller's URL %s/set and token", created, gotCfg, caller)
			}
			if a := gotCfg.Authentication; a.Scheme != "ApiKey" || a.Credentials != token+"-cred" {
				t.Errorf("get through Sluice showed authentication %+v; want the caller's", a)
			}
			urls := map[string]string{}
			for _, l := range listed.Configs {
				urls[l.URL] = l.Token
			}
			if len(urls) != 2 || urls[caller+"/msg"] != token || urls[caller+"/set"] != token+"-set" {
				t.Errorf("list through Sluice showed %+v; want the caller's two URLs and tokens", listed.Configs)
			}
			if strings.Contains(out, "/a2a/.push/") {
				t.Errorf("the caller was shown a relay's URL: %s", out)
			}

			// The SDK's sender pushes the task's states to the relay of the
			// config registered with the message; once released, the agent
			// reports progress to both relays.
			waitPushes := func(paths ...string) {
				t.Helper()
				for deadline := time.Now().Add(10 * time.Second); ; {
					n := 0
					for _, p := range paths {
						if len(pushesTo("/"+c.name+p)) > 0 {
							n++
						}
					}
					if n == len(paths) {
						return
					}
					if time.Now().After(deadline) {
						t.Fatalf("the agent's pushes never reached %v: %+v; agent saw %+v", paths, pushesTo("/"+c.name), seen(t, agent))
					}
					time.Sleep(50 * time.Millisecond)
				}
			}
			waitPushes("/msg")
			release(t, agent)
			for deadline := time.Now().Add(10 * time.Second); ; {
				if p := pushesTo("/" + c.name + "/set"); len(p) > 0 && strings.Contains(p[0].body, "half") {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the progress push never reached the webhook of the config created with CreateTaskPushNotificationConfig: %+v", pushesTo("/"+c.name))
				}
				time.Sleep(50 * time.Millisecond)
			}
			waitPushes("/msg", "/set")
			for _, p := range pushesTo("/" + c.name) {
				want, wantAuth := token, ""
				if strings.HasSuffix(p.path, "/set") {
					// Sluice sends the token too, where the SDK's sender
					// sends only Authorization when a config has both.
					want, wantAuth = token+"-set", "ApiKey "+token+"-cred"
				}
				if p.token != want || p.authorization != wantAuth {
					t.Errorf("webhook %s got token %q and Authorization %q; want the caller's token %q and Authorization %q", p.path, p.token, p.authorization, want, wantAuth)
				}
				if !strings.Contains(p.body, sent.ID) {
					t.Errorf("webhook %s got %.200s; want the task %s", p.path, p.body, sent.ID)
				}
				if p.contentType != c.contentType {
					t.Errorf("webhook %s got Content-Type %q; want the SDK sender's %s", p.path, p.contentType, c.contentType)
				}
			}
			// The agent was given the gateway's URL and token only.
			relays := map[string]bool{}
			var setRelay, setToken string // the second stored: CreateTaskPushNotificationConfig's
			for _, cfg := range seen(t, agent).Configs {
				if cfg.TaskID != sent.ID {
					continue
				}
				relays[cfg.URL] = true
				setRelay, setToken = cfg.URL, cfg.Token
				if !strings.HasPrefix(cfg.URL, public+"/a2a/.push/") || strings.Contains(cfg.Token, token) || cfg.Token == "" || cfg.Authentication != nil {
					t.Errorf("the agent stored url %s token %q authentication %v; want the gateway's relay and its own token, no authentication", cfg.URL, cfg.Token, cfg.Authentication)
				}
			}
			if len(relays) != 2 {
				t.Errorf("the agent stored %d push configs for the task, want 2", len(relays))
			}

			// The config created with CreateTaskPushNotificationConfig is
			// deleted through Sluice: the agent drops it, its relay ends.
			out = client("--scenario", "push-delete", "--task", sent.ID, "--config", created.ID)
			if strings.Contains(out, "error") || strings.Contains(out, "/set") || !strings.Contains(out, caller+"/msg") {
				t.Errorf("after deleting the /set config, list through Sluice showed %s; want only %s/msg", out, caller)
			}
			req, _ := http.NewRequest(http.MethodPost, setRelay, strings.NewReader(`{"statusUpdate":{"taskId":"`+sent.ID+`","status":{"state":"TASK_STATE_WORKING"}}}`))
			req.Header.Set("X-A2A-Notification-Token", setToken)
			if resp, err := http.DefaultClient.Do(req); err != nil {
				t.Fatal(err)
			} else if resp.Body.Close(); resp.StatusCode != http.StatusNotFound {
				t.Errorf("a push to the deleted config's relay: HTTP %d, want 404 (the relay ended)", resp.StatusCode)
			}
			before := len(pushesTo("/" + c.name))
			sentBefore := len(seen(t, agent).Pushes)
			keys("revoke", keyID(t, keys("list", "--json"), c.name))
			for deadline := time.Now().Add(10 * time.Second); ; {
				req, _ := http.NewRequest(http.MethodGet, base+".well-known/agent-card.json", nil)
				req.Header.Set("Authorization", "Bearer "+key)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode == http.StatusUnauthorized {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the revoked key still admitted: HTTP %d", resp.StatusCode)
				}
				time.Sleep(100 * time.Millisecond)
			}
			release(t, agent)
			// Every push after the revocation (to the relay of the config
			// registered with the message, the one left) is refused: the
			// first with 410, which ends the relay, the rest (the task's
			// completion) with 404.
			for deadline := time.Now().Add(10 * time.Second); ; {
				pushes := seen(t, agent).Pushes
				var after []string
				done, first := 0, map[string]string{}
				for _, p := range pushes[sentBefore:] {
					if !relays[p.URL] {
						continue
					}
					after = append(after, p.Result)
					if _, ok := first[p.URL]; !ok {
						first[p.URL] = p.Result
					}
					if p.State != nil && *p.State == 3 {
						done++
					}
				}
				if done == 1 {
					for u, r := range first {
						if !strings.Contains(r, "410") {
							t.Errorf("the SDK's sender got %q for the first push to %s after revocation; want HTTP 410", r, u)
						}
					}
					for _, r := range after {
						if !strings.Contains(r, "410") && !strings.Contains(r, "404") {
							t.Errorf("the SDK's sender got %q for a push after revocation; want HTTP 410 or 404", r)
						}
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the agent never pushed the completion to the relay left: %+v", pushes)
				}
				time.Sleep(50 * time.Millisecond)
			}
			if after := pushesTo("/" + c.name); len(after) != before {
				t.Errorf("after the key was revoked the webhook got %+v", after[before:])
			}
		})
	}
}

// release lets the PUSH=1 agent's held tasks go on.
func release(t *testing.T, agent string) {
	t.Helper()
	resp, err := http.Post(agent+"/release", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

// seen is what the PUSH=1 agent reports at /seen.
func seen(t *testing.T, agent string) agentSeen {
	t.Helper()
	resp, err := http.Get(agent + "/seen")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s agentSeen
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// keyID is the id of agent's key in `sluice keys list --json`.
func keyID(t *testing.T, list, agent string) string {
	t.Helper()
	var ks []map[string]any
	if err := json.Unmarshal([]byte(list), &ks); err != nil {
		t.Fatalf("keys list --json %s: %v", list, err)
	}
	for _, k := range ks {
		for _, v := range k {
			if v == agent {
				if id, ok := k["id"].(string); ok {
					return id
				}
			}
		}
	}
	t.Fatalf("no key of %s in %s", agent, list)
	return ""
}
