package main

import (
	"bytes"
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/inventory"
)

// TestInventoryAcrossReplicas: two gateways sharing inventory pins through
// a real Redis. A drift seen by A blocks the tool on B too, and an
// approval through B's admin API releases it on A.
func TestInventoryAcrossReplicas(t *testing.T) {
	srv := redistest.Start(t)
	key := filepath.Join(t.TempDir(), "inventory-key.pem")
	if _, err := inventory.LoadOrCreateKey(key); err != nil {
		t.Fatal(err)
	}
	cfg := "policy: {default: allow, result_mode: tool_result}\nadmin_token: t0k\n" +
		"inventory: {redis_url: \"" + srv.URL() + "\", key_file: \"" + key + "\"}\n"
	a, b := startServe(t, cfg), startServe(t, cfg)
	search := func(g *running) string {
		return modernCall(t, g.url, "tools/call", "web_search", `{"name":"web_search","arguments":{"query":"sluice"}}`)
	}
	eventually := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 5s", what)
			}
		}
	}
	modernCall(t, a.url, "tools/list", "", "") // A pins for both
	modernCall(t, b.url, "tools/list", "", "")
	if got := search(b); strings.Contains(got, "inventory_drift") {
		t.Fatalf("B before drift: %s", got)
	}
	modernCall(t, a.url, "tools/call", "rotate_description", `{"name":"rotate_description","arguments":{}}`)
	modernCall(t, a.url, "tools/list", "", "")
	if got := search(a); !strings.Contains(got, `"code":"inventory_drift"`) {
		t.Fatalf("A after drift: %s", got)
	}
	eventually("B blocks the tool that drifted on A", func() bool { return strings.Contains(search(b), `"code":"inventory_drift"`) })

	var out bytes.Buffer
	adminB := []string{"--admin", "http://" + b.admin, "--token", "t0k"}
	if err := runInventory(context.Background(), append([]string{"approve", "demo", "web_search"}, adminB...), &out); err != nil {
		t.Fatalf("approve on B: %v\n%s", err, &out)
	}
	eventually("A releases the tool approved on B", func() bool { return !strings.Contains(search(a), "inventory_drift") })
	if got := search(a); !strings.Contains(got, "sluice") {
		t.Fatalf("A after approval: %s", got)
	}
}

// TestInventoryRedisConfig: inventory.redis_url needs a key_file shared by
// the replicas, and a parseable URL.
func TestInventoryRedisConfig(t *testing.T) {
	key := filepath.Join(t.TempDir(), "k.pem")
	if _, err := inventory.LoadOrCreateKey(key); err != nil {
		t.Fatal(err)
	}
	os.Setenv("SLUICE_TEST_INV_REDIS", "redis://127.0.0.1:1/0")
	defer os.Unsetenv("SLUICE_TEST_INV_REDIS")
	for _, c := range []struct{ yaml, want string }{
		{"inventory: {redis_url: \"redis://127.0.0.1:1/0\"}\n", "inventory.redis_url needs inventory.key_file"},
		{"inventory: {redis_url: \"http://x\", key_file: \"" + key + "\"}\n", "inventory.redis_url:"},
		{"inventory: {redis_url: \"${SLUICE_TEST_INV_REDIS}\", key_file: \"" + key + "\"}\n", ""},
	} {
		_, err := parseConfig("sluice.yaml", []byte(c.yaml))
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%q: got %v, want %q", c.yaml, err, c.want)
		}
	}
}

// TestAgentsConfig: agents need a name that can be a route and an http(s)
// URL, once each.
func TestAgentsConfig(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"agents: [{name: research, url: \"https://r.example.com\"}]\n", ""},
		{"agents: [{name: \"a/b\", url: \"https://r.example.com\"}]\n", "agents[0]: name"},
		{"agents: [{name: r, url: \"ftp://r.example.com\"}]\n", "not an http(s) URL"},
		{"agents: [{name: r, url: \"https://a\"}, {name: r, url: \"https://b\"}]\n", "a second agent named"},
	} {
		_, err := parseConfig("sluice.yaml", []byte(c.yaml))
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%q: got %v, want %q", c.yaml, err, c.want)
		}
	}
}

// TestTrustedProxiesConfig: addresses and prefixes are accepted, anything
// else names the key; so does a prefix of every address, under which a
// client's own X-Forwarded-For entry would be believed.
func TestTrustedProxiesConfig(t *testing.T) {
	cfg, err := parseConfig("sluice.yaml", []byte("trusted_proxies: [10.0.0.0/8, \"::1\", 192.168.1.7]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.trustedProxies) != 3 || cfg.trustedProxies[2].Bits() != 32 {
		t.Errorf("trusted proxies %v", cfg.trustedProxies)
	}
	if _, err := parseConfig("sluice.yaml", []byte("trusted_proxies: [proxy.local]\n")); err == nil || !strings.Contains(err.Error(), "trusted_proxies[0]") {
		t.Errorf("a host name: got %v, want an error naming trusted_proxies[0]", err)
	}
	cfg, err = parseConfig("sluice.yaml", []byte("trusted_proxies: [\"::ffff:10.0.0.0/104\"]\n"))
	if err != nil || len(cfg.trustedProxies) != 1 || cfg.trustedProxies[0] != netip.MustParsePrefix("10.0.0.0/8") {
		t.Errorf("an IPv4-mapped prefix: %v, %v; want 10.0.0.0/8, as peers are compared", cfg.trustedProxies, err)
	}
	for _, all := range []string{"0.0.0.0/0", "\"::/0\"", "\"::ffff:0.0.0.0/96\""} {
		if _, err := parseConfig("sluice.yaml", []byte("trusted_proxies: [10.0.0.1, "+all+"]\n")); err == nil || !strings.Contains(err.Error(), "trusted_proxies[1]") {
			t.Errorf("%s, every address a proxy: got %v, want an error naming trusted_proxies[1]", all, err)
		}
	}
}
