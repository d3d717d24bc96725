package gateway

import (
	"net/http"
	"testing"
)

// TestAttackHopHeaderSpellings: a header the gateway writes or never
// forwards is not forwarded under another spelling either: with
// underscores, as CGI, WSGI and nginx's $http_ variables read hyphens
// (Mcp_session_id is their Mcp-Session-Id: another agent's session at an
// upstream that reads it so), nor one the sender's Connection header
// lists as hop-by-hop (RFC 9110 §7.6.1), in either direction.
func TestAttackHopHeaderSpellings(t *testing.T) {
	src := http.Header{
		"Connection":          {"keep-alive, x-hop ,X-Other"},
		"X-Hop":               {"for the next hop"},
		"X-Other":             {"for the next hop"},
		"Mcp_session_id":      {"another agent's session"},
		"Proxy_authorization": {"Basic eDp5"},
		"Www_authenticate":    {`Bearer realm="upstream"`},
		"Content_length":      {"0"},
		"Transfer_encoding":   {"chunked"},
		"Authorization_":      {"x"},
		"X_custom_header":     {"kept"},
		"Accept":              {"*/*"},
	}
	dst := http.Header{}
	copyHeaders(dst, src, nil)
	want := map[string]bool{"X_custom_header": true, "Accept": true, "Authorization_": true}
	for k := range dst {
		if !want[k] {
			t.Errorf("%s: %q forwarded", k, dst[k])
		}
	}
	for k := range want {
		if dst[k] == nil {
			t.Errorf("%s: not forwarded", k)
		}
	}
	for _, h := range []string{"Mcp_Session_Id", "proxy_authorization", "Www_Authenticate"} {
		u := Upstream{Name: "u", URL: "http://127.0.0.1:1/mcp", PassHeaders: []string{h}}
		if err := u.CheckPassHeaders(); err == nil {
			t.Errorf("pass_headers [%s] accepted", h)
		}
	}
}
