package gateway

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/intercept"
)

// askingWeb is a scripted streamable-http upstream that asks its client
// a ping on the stream of every ping it is sent, and records the headers
// of every request it gets.
type askingWeb struct {
	mu   sync.Mutex
	seen []http.Header
}

func (a *askingWeb) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	a.seen = append(a.seen, r.Header.Clone())
	a.mu.Unlock()
	b, _ := io.ReadAll(r.Body)
	msgs, _, err := intercept.Decode(b)
	switch {
	case r.Method != http.MethodPost || err != nil || len(msgs) != 1 || msgs[0].Kind != intercept.KindRequest:
		w.WriteHeader(http.StatusAccepted)
	case msgs[0].Method == "initialize":
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Mcp-Session-Id", "up-1")
		io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(msgs[0].ID)+`,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"web","version":"1"}}}`)
	default:
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"srv-1\",\"method\":\"ping\"}\n\n")
		io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":"+string(msgs[0].ID)+",\"result\":{}}\n\n")
	}
}

// leaked returns the header lines the upstream got holding mark.
func (a *askingWeb) leaked(mark string) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, h := range a.seen {
		for k, vv := range h {
			for _, v := range vv {
				if strings.Contains(strings.ToLower(k+": "+v), strings.ToLower(mark)) {
					out = append(out, k+": "+v)
				}
			}
		}
	}
	return out
}

// last returns the headers of the last request the upstream got.
func (a *askingWeb) last() http.Header {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.seen) == 0 {
		return nil
	}
	return a.seen[len(a.seen)-1]
}

// askingGateway serves docs (the demo server, the sensitive source) and
// web (an askingWeb) under carryPolicy.
func askingGateway(t *testing.T) (gw *httptest.Server, web *askingWeb) {
	t.Helper()
	web = &askingWeb{}
	up := httptest.NewServer(web)
	t.Cleanup(up.Close)
	gw, _ = carryStack(t, Options{}, Upstream{Name: "web", URL: up.URL + "/mcp"})
	return gw, web
}

// TestAttackProtocolHeadersOnAnswer: Mcp-Method and Mcp-Name went on to a
// closed upstream on every POST, "checked against the body", but the check
// is made of a request or notification only: on the client's answer to
// the upstream's ping (an empty result, plain, under the id the upstream
// asked) both headers reached the closed upstream holding the secret.
func TestAttackProtocolHeadersOnAnswer(t *testing.T) {
	gw, web := askingGateway(t)
	url := gw.URL + "/mcp/web"
	sid := initialize(t, url)
	readSecret(t, gw.URL)
	hdr := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
	// The upstream asks a ping on the stream of the client's.
	if _, _, body := post(t, url, hdr, `{"jsonrpc":"2.0","id":1,"method":"ping"}`); !strings.Contains(body, `"srv-1"`) {
		t.Fatalf("ping: %s, want the upstream's ping srv-1 on its stream", body)
	}
	mark := markOf(990)
	post(t, url, withHdr(hdr, "Mcp-Method", mark, "Mcp-Name", mark), `{"jsonrpc":"2.0","id":"srv-1","result":{}}`)
	if l := web.leaked(mark); len(l) > 0 {
		t.Errorf("the secret reached the closed upstream in headers of an answer: %q", l)
	}
}

// TestAttackProtocolHeaderSpellings: the protocol headers a closed
// upstream gets went on as the client spelt them, which is its to choose
// within their grammar: the case of every letter of Accept and q values
// of three digits (dozens of bits a request), which of five versions
// Mcp-Protocol-Version named on a session that negotiated one, and
// Mcp-Name in base64 or not. A closed upstream now gets them as the
// gateway writes them.
func TestAttackProtocolHeaderSpellings(t *testing.T) {
	gw, web := askingGateway(t)
	url := gw.URL + "/mcp/web"
	sid := initialize(t, url)
	readSecret(t, gw.URL)
	hdr := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
	for _, tc := range []struct {
		name, header, value, want string
	}{
		{"accept case", "Accept", "APPLICATION/Json, tExt/EVENT-stream", "application/json, text/event-stream"},
		{"accept q", "Accept", "application/json;q=0.123, text/event-stream;q=0.456, */*;q=0.789, text/*;q=0.001", "application/json, text/event-stream"},
		{"version", "Mcp-Protocol-Version", "2024-11-05", "2025-11-25"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			post(t, url, withHdr(hdr, tc.header, tc.value), `{"jsonrpc":"2.0","id":"v","method":"tools/list"}`)
			if got := web.last().Values(tc.header); len(got) != 1 || got[0] != tc.want {
				t.Errorf("the closed upstream got %s: %q, want %q", tc.header, got, tc.want)
			}
		})
	}
}

// TestAttackSessionlessGETPastRouteRule: a GET with no Mcp-Session-Id
// goes on to the upstream, and the closed test it was screened by named
// no agent: with an agent header, the agent the route rule closed web to
// sent its headers to web on such a GET.
func TestAttackSessionlessGETPastRouteRule(t *testing.T) {
	gw, _, tap := headerGateway(t, Options{AgentHeader: "X-Agent"})
	readSecret(t, gw.URL) // agent raw, by its client's name
	tap.reset()
	mark := markOf(997)
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	request(t, ctx, http.MethodGet, gw.URL+"/mcp/web", map[string]string{"X-Agent": "raw", "X-Leak": mark, "Accept": "text/event-stream"}, "")
	if l := tap.leaked(mark); len(l) > 0 {
		t.Errorf("the secret reached the closed upstream in headers of a GET without a session: %q", l)
	}
}
