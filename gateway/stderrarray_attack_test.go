package gateway

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/intercept"
)

// TestAttackStderrSecretArrayAcrossLines: a server that logs its config
// as indented JSON (Python's json.dumps(cfg, indent=2), Node's
// JSON.stringify(cfg, null, 2)) writes a secret key's array an element
// a line. telemetry.Scrub scrubs such an array across lines, but a stdio
// server's stderr was scrubbed a line at a time: the key's line lost its
// bracket and every element was logged as written. Also when the key's
// line is one the rate did not let through, and the elements come once
// it does.
func TestAttackStderrSecretArrayAcrossLines(t *testing.T) {
	bin := buildDemoServer(t)
	config := `printf '{\n  "db": "shop",\n  "api_tokens": [\n    "tok-first-9f8e7d",\n    ["tok-nested-4c5d6e"],\n    "tok-second-1a2b3c"\n  ],\n  "port": 8080\n}\n' >&2
i=0; while [ $i -lt 200 ]; do echo "filler $i" >&2; i=$((i+1)); done
printf '  "access_keys": [\n' >&2
sleep 2
printf '    "key-after-drop-7h8i9j"\n  ],\n  "region": "eu-north-1"\n' >&2
exec "$0" -transport stdio`
	var logs logBuffer
	g, err := New(Options{Upstreams: []Upstream{{Name: "kid", Command: "sh", Args: []string{"-c", config, bin}}}},
		&intercept.Interceptor{Decider: allowEcho}, slog.New(slog.NewJSONHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g); http.DefaultClient.CloseIdleConnections() })
	if _, _, body := post(t, gw.URL+"/mcp/kid", modernHeaders("tools/call", "echo"), modernCall(1, "echo", `{"message":"hi"}`)); !strings.Contains(body, "hi") {
		t.Fatalf("echo through the stdio upstream: %s", body)
	}
	g.Close()

	lines, _ := stderrRecords(t, logs.String())
	lines = slices.DeleteFunc(lines, func(l string) bool { return strings.HasPrefix(l, "filler ") })
	all := strings.Join(lines, "\n")
	for _, secret := range []string{"tok-first-9f8e7d", "tok-nested-4c5d6e", "tok-second-1a2b3c", "key-after-drop-7h8i9j"} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the gateway's log holds %q from the upstream's stderr:\n%s", secret, all)
		}
	}
	for _, kept := range []string{`"db": "shop"`, `"port": 8080`, `"region": "eu-north-1"`} {
		if !strings.Contains(all, kept) {
			t.Errorf("the line %s was not logged as written:\n%s", kept, all)
		}
	}
}
