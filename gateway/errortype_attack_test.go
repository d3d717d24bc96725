package gateway

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/telemetry"
)

// TestAttackUpstreamErrorCodeType: error.type, a span attribute and the
// label of the upstream errors metric, was the upstream's error.code as
// raw JSON: a hostile upstream put any text there (a string holding a
// credential, an object of any size), and a new label value per error
// (code 1, 2, 3…) filled the metric's series, so the errors of every
// other upstream went to the SDK's overflow series. error.type is now
// the code in its plain decimal spelling when it is one JSON-RPC defines
// (-32700, -32600 to -32603, the server errors -32000 to -32099), and
// _OTHER for anything else.
func TestAttackUpstreamErrorCodeType(t *testing.T) {
	codes := map[string]string{
		"string":      `"sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"`,
		"object":      `{"secret":"hunter2hunter2","pad":"` + string(bytes.Repeat([]byte("x"), 4096)) + `"}`,
		"app-code":    `7`,
		"big":         `123456789012345678901234567890`,
		"fraction":    `-32602.5`,
		"float":       `-32602.0`,
		"exponent":    `-3.2601e4`,
		"plain":       `-32602`,
		"server":      `-32042`,
		"parse":       `-32700`,
		"below-range": `-32100`,
	}
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b bytes.Buffer
		_, _ = b.ReadFrom(r.Body)
		for name, code := range codes {
			if bytes.Contains(b.Bytes(), []byte(`"message":"`+name+`"`)) {
				w.Header().Set("Content-Type", "application/json")
				id := bytes.SplitN(bytes.SplitN(b.Bytes(), []byte(`"id":`), 2)[1], []byte(","), 2)[0]
				w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"error":{"code":` + code + `,"message":"no"}}`))
				return
			}
		}
		http.Error(w, "unexpected call", http.StatusBadRequest)
	}))
	t.Cleanup(web.Close)
	m := &upstreamCounter{more: make(chan struct{}, 1)}
	g, err := New(Options{Metrics: m, Upstreams: []Upstream{{Name: "web", URL: web.URL + "/mcp"}}},
		&intercept.Interceptor{Decider: allowEcho}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g); http.DefaultClient.CloseIdleConnections() })
	url := gw.URL

	order := []string{"string", "object", "app-code", "big", "fraction", "float", "exponent", "plain", "server", "parse", "below-range"}
	want := map[string]string{
		"string": telemetry.ErrorTypeOther, "object": telemetry.ErrorTypeOther, "app-code": telemetry.ErrorTypeOther,
		"big": telemetry.ErrorTypeOther, "fraction": telemetry.ErrorTypeOther, "float": "-32602", "exponent": "-32601",
		"plain": "-32602", "server": "-32042", "parse": "-32700", "below-range": telemetry.ErrorTypeOther,
	}
	got := map[string]string{}
	for i, name := range order {
		post(t, url+"/mcp/web", modernHeaders("tools/call", "echo"), modernCall(i+1, "echo", `{"message":"`+name+`"}`))
		obs := m.wait(t, i+1)[i]
		if obs.name != "web" {
			t.Fatalf("call %s: measured for upstream %q", name, obs.name)
		}
		got[name] = obs.err
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("error.type by the upstream's error.code (-want +got):\n%s", diff)
	}
}
