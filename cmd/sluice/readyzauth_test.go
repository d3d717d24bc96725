package main

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestReadyzUnauthenticatedStatusOnly (attacker review): /readyz is
// served without credentials, for a probe, and its body named every
// upstream route and, for one not reachable, the error of the dial or
// of looking its command up (internal addresses, host names, paths): an
// unauthenticated network caller read which servers stand behind the
// gateway and where. Without credentials it now gets the status and
// "ready" or "not ready" (with a bad credential too, which is recorded as
// an authentication failure); an authenticated request gets the details.
func TestReadyzUnauthenticatedStatusOnly(t *testing.T) {
	keyFile, alice, _ := aliceAndMallory(t)
	r := startServe(t, fmt.Sprintf("policy: {default: allow}\nauth: {mode: api_key, api_keys: {file: %s}}\n", keyFile))
	base := strings.TrimSuffix(r.url, "/mcp/demo")
	get := func(key string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, base+"/readyz", nil)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get(""); code != http.StatusOK || strings.Contains(body, "demo") {
		t.Errorf("unauthenticated /readyz: got %d %q; want 200 without the routes' names", code, body)
	}
	if code, body := get(alice); code != http.StatusOK || !strings.Contains(body, "demo: ok") {
		t.Errorf("authenticated /readyz: got %d %q; want 200 naming demo", code, body)
	}
	if code, body := get("sk_000000000000_" + strings.Repeat("A", 43)); code != http.StatusOK || strings.Contains(body, "demo") {
		t.Errorf("/readyz with a bad key: got %d %q; want 200 without the routes' names", code, body)
	}
}
