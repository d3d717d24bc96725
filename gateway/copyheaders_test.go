package gateway

import (
	"net/http"
	"testing"

	"github.com/sluicehq/sluice/intercept"
)

// BenchmarkCopyHeaders copies the headers of sluice bench's client
// request to the upstream request and the upstream's answer to the
// client's, as forward does for every call.
func BenchmarkCopyHeaders(b *testing.B) {
	req := http.Header{
		"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"},
		"Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {"tools/call"}, "Mcp-Name": {"echo"},
		"Content-Length": {"284"}, "User-Agent": {"Go-http-client/1.1"}, "Accept-Encoding": {"gzip"},
	}
	resp := http.Header{"Content-Type": {"application/json"}, "Content-Length": {"201"}, "Date": {"Sun, 29 Nov 2026 17:48:48 GMT"}}
	b.ReportAllocs()
	for b.Loop() {
		copyHeaders(make(http.Header), req, intercept.IsParamHeader)
		copyHeaders(make(http.Header), resp, nil)
	}
}

// TestHopHeader: the names the gateway never forwards, in canonical form,
// and no others.
func TestHopHeader(t *testing.T) {
	for _, k := range []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
		"Te", "Trailer", "Transfer-Encoding", "Upgrade", "Content-Length", "Host", "Mcp-Session-Id", "Accept-Encoding",
		"Authorization", "Content-Encoding", "Www-Authenticate"} {
		if !hopHeader(k) {
			t.Errorf("hopHeader(%q) = false", k)
		}
	}
	for _, k := range []string{"Content-Type", "Accept", "Mcp-Protocol-Version", "User-Agent", "connection", "X-Connection", ""} {
		if hopHeader(k) {
			t.Errorf("hopHeader(%q) = true", k)
		}
	}
	dst := http.Header{}
	copyHeaders(dst, http.Header{"Connection": {"close"}, "Authorization": {"Bearer x"}, "Accept": {"*/*"}}, nil)
	if len(dst) != 1 || dst.Get("Accept") != "*/*" {
		t.Errorf("copied %v, want Accept alone", dst)
	}
}
