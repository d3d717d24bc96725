package gateway

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/policy"
)

// respell returns id spelled otherwise with the same bytes: base64's last
// character carries bits past the end of the data (2 or 4 when the length
// is not a multiple of 3), which a lenient decoder ignores. ok is false
// when id has none.
func respell(id string) (string, bool) {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	dot := strings.Index(id, ".")
	if dot < 0 || (len(id)-dot-1)%4 == 0 {
		return "", false
	}
	last := strings.IndexByte(alphabet, id[len(id)-1])
	return id[:len(id)-1] + string(alphabet[last^1]), true
}

// TestSealedIDOneSpelling (found by an attacker review): a sealed session
// id has one spelling. Base64 leaves spare bits in its last character,
// and the id was read leniently: flipping one gave another string that
// opened to the same session. The gateway keys what it keeps about a
// session by the id's string, so the respelled id was a fresh session:
// a session-scoped route rule forgot the sensitive read (the network sink
// was allowed), and an id ended with DELETE came back. Another spelling
// is an unknown session.
func TestSealedIDOneSpelling(t *testing.T) {
	up := httptest.NewServer(demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{}))
	t.Cleanup(up.Close)
	p, err := policy.Compile([]byte(`default: allow
result_mode: tool_result
tool_classes:
  read_document: [source:sensitive]
  web_search: [sink:network]
route_rules:
  - {id: no-network-after-sensitive-read, scope: session, after: {match_any_class: [source:sensitive]}, deny: {match_any_class: [sink:network]}, reason: no sink after a sensitive read}
`), "p.yaml", policy.Options{Store: policy.NewMemoryStore(policy.MemoryOptions{})})
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(Options{
		Upstreams:      []Upstream{{Name: "demo", URL: up.URL + "/mcp"}},
		VirtualServers: []VirtualServer{{}},
		SessionKeys:    [][]byte{key(1)},
	}, &intercept.Interceptor{Decider: p}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })

	for _, url := range []string{gw.URL + "/mcp/demo", gw.URL + "/mcp"} {
		// An id with spare bits (two in three have them).
		var hdr map[string]string
		var other string
		for range 20 {
			hdr = openSession(t, url, "alice", nil)
			var ok bool
			if other, ok = respell(hdr[hdrSession]); ok {
				break
			}
		}
		if other == "" {
			t.Fatal("no session id with spare bits in 20 tries")
		}
		respelled := with(hdr, hdrSession, other)
		if _, _, body := post(t, url, hdr, readDocument(1)); strings.Contains(body, `"isError":true`) {
			t.Fatalf("%s: read_document: %s", url, body)
		}
		if status, _, body := post(t, url, respelled, webSearch(2, "salaries", "")); status != http.StatusNotFound && !routeDenied(body) {
			t.Errorf("%s: web_search after a sensitive read, the session id respelled: %d %.300s; want 404 (or the route rule's denial)", url, status, body)
		}
		if st := deleteSession(t, url, hdr); st != http.StatusOK && st != http.StatusNoContent {
			t.Fatalf("%s: DELETE: %d", url, st)
		}
		if status, _, body := post(t, url, respelled, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"message":"zombie"}}}`); status != http.StatusNotFound {
			t.Errorf("%s: the ended session, its id respelled: %d %.300s; want 404", url, status, body)
		}
	}
}
