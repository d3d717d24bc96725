package h1

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"testing"
	"testing/iotest"
)

// written is what w writes of req, and the error.
func written(t testing.TB, req *http.Request, w func(*bufio.Writer, *http.Request) error) (string, error) {
	t.Helper()
	var out bytes.Buffer
	bw := bufio.NewWriterSize(&out, 4096)
	err := w(bw, req)
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	return out.String(), err
}

// viaRequestWrite is Request.Write, the reference.
func viaRequestWrite(bw *bufio.Writer, req *http.Request) error { return req.Write(bw) }

// newPost is a POST of body to url with header h, as the gateway makes its
// requests (NewRequest of an in-memory reader).
func newPost(t testing.TB, url string, h http.Header, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, vv := range h {
		req.Header[k] = vv
	}
	return req
}

// sameAsRequestWrite checks that writeRequest writes req (made twice by
// mk: writing consumes the body) as Request.Write does, error included.
func sameAsRequestWrite(t testing.TB, mk func() *http.Request) {
	t.Helper()
	want, werr := written(t, mk(), viaRequestWrite)
	got, gerr := written(t, mk(), writeRequest)
	if got != want || (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
		t.Errorf("writeRequest wrote\n%q, %v\nRequest.Write wrote\n%q, %v", got, gerr, want, werr)
	}
}

func TestWriteRequestIsRequestWrite(t *testing.T) {
	gateway := http.Header{
		"Accept": {"application/json, text/event-stream"}, "Content-Type": {"application/json"},
		"Mcp-Protocol-Version": {"2025-06-18"}, "Mcp-Session-Id": {"3f2a"}, "Traceparent": {"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
	}
	for _, tt := range []struct {
		name   string
		url    string
		host   string
		header http.Header
		body   string
		adjust func(*http.Request)
	}{
		{name: "the gateway's", url: "http://127.0.0.1:8080/mcp", header: gateway, body: `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`},
		{name: "query", url: "http://up.example:9/mcp/x?a=1&b=%20c", header: gateway, body: "{}"},
		{name: "host field", url: "http://127.0.0.1:8080/mcp", host: "upstream.internal:8080", body: "{}"},
		{name: "ipv6", url: "http://[::1]:8080/mcp", body: "{}"},
		{name: "no port", url: "http://upstream/mcp", body: "{}"},
		{name: "user agent", url: "http://h/mcp", header: http.Header{"User-Agent": {"  agent/1.0 \t"}}, body: "{}"},
		{name: "blank user agent", url: "http://h/mcp", header: http.Header{"User-Agent": {" \t "}}, body: "{}"},
		{name: "empty user agent", url: "http://h/mcp", header: http.Header{"User-Agent": {""}}, body: "{}"},
		{name: "user agent without values", url: "http://h/mcp", header: http.Header{"User-Agent": {}}, body: "{}"},
		{name: "two user agents", url: "http://h/mcp", header: http.Header{"User-Agent": {"a", "b"}}, body: "{}"},
		{name: "lower-case user agent", url: "http://h/mcp", header: http.Header{"user-agent": {"x"}}, body: "{}"},
		{name: "excluded", url: "http://h/mcp", header: http.Header{"Host": {"evil"}, "Content-Length": {"99"}, "Transfer-Encoding": {"chunked"}, "Trailer": {"X"}}, body: "{}"},
		{name: "many values, spaces", url: "http://h/mcp", header: http.Header{"X-A": {" 1 ", "\t2", ""}, "X-B": {}, "x-lower": {"v"}, "X-Z": {"z"}, "A": {"first"}}, body: "{}"},
		{name: "many headers", url: "http://h/mcp", header: manyHeaders(40), body: "{}"},
		{name: "line break in a value", url: "http://h/mcp", header: http.Header{"X-A": {"1\r\nX-Injected: 1"}}, body: "{}"},
		{name: "odd header name", url: "http://h/mcp", header: http.Header{"X A": {"1"}, "X:B": {"2"}, "": {"3"}}, body: "{}"},
		{name: "unicode host", url: "http://h/mcp", host: "bücher.example", body: "{}"},
		{name: "zone", url: "http://h/mcp", host: "[fe80::1%25eth0]:80", body: "{}"},
		{name: "host with a slash", url: "http://h/mcp", host: "h/x", body: "{}"},
		{name: "close", url: "http://h/mcp", body: "{}", adjust: func(r *http.Request) { r.Close = true }},
		{name: "chunked", url: "http://h/mcp", body: "{}", adjust: func(r *http.Request) { r.TransferEncoding = []string{"chunked"} }},
		{name: "length short of the body", url: "http://h/mcp", body: "{\"a\":1}", adjust: func(r *http.Request) { r.ContentLength = 3 }},
		{name: "length past the body", url: "http://h/mcp", body: "{}", adjust: func(r *http.Request) { r.ContentLength = 10 }},
		{name: "failing body", url: "http://h/mcp", body: "{}", adjust: func(r *http.Request) {
			r.Body = io.NopCloser(io.MultiReader(strings.NewReader("{"), iotest.ErrReader(errors.New("broke"))))
		}},
		{name: "get", url: "http://h/mcp", body: "", adjust: func(r *http.Request) { r.Method = http.MethodGet }},
		{name: "delete", url: "http://h/mcp", body: "", adjust: func(r *http.Request) { r.Method = http.MethodDelete }},
		{name: "empty post", url: "http://h/mcp", body: ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sameAsRequestWrite(t, func() *http.Request {
				req := newPost(t, tt.url, tt.header, tt.body)
				if tt.host != "" {
					req.Host = tt.host
				}
				if tt.adjust != nil {
					tt.adjust(req)
				}
				return req
			})
		})
	}
}

func manyHeaders(n int) http.Header {
	h := http.Header{}
	for i := range n {
		h["X-H"+strings.Repeat("a", i%7)+string(rune('A'+i%26))] = []string{strings.Repeat("v", i)}
	}
	return h
}

// The head of the gateway's POST is written here, not by Request.Write:
// neither its formatting nor its sorter allocate.
func TestWriteRequestPlain(t *testing.T) {
	req := newPost(t, "http://127.0.0.1:8080/mcp", http.Header{"Content-Type": {"application/json"}}, "{}")
	if _, _, ok := plainRequest(req); !ok {
		t.Fatal("the gateway's POST: plainRequest false, want true")
	}
	traced := req.WithContext(httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{}))
	if _, _, ok := plainRequest(traced); ok {
		t.Error("a traced request: plainRequest true, want false (Request.Write reports to the trace)")
	}
	bw := bufio.NewWriterSize(io.Discard, 4096)
	allocs := testing.AllocsPerRun(100, func() {
		req.Body = io.NopCloser(strings.NewReader("{}"))
		_ = writeRequest(bw, req)
	})
	if allocs > 3 {
		t.Errorf("writeRequest allocates %v times, want at most 3 (the body and its wrapper, the limit on it)", allocs)
	}
}

// FuzzWriteRequest: whatever the request, writeRequest writes what
// Request.Write writes.
func FuzzWriteRequest(f *testing.F) {
	f.Add("http://127.0.0.1:8080/mcp", "", "Content-Type", "application/json", "Accept", "text/event-stream", "{}", int64(0))
	f.Add("http://h/mcp?x=1", "h:1", "User-Agent", " a ", "X-B", "", "{\"a\":1}", int64(3))
	f.Add("http://[::1]/", "[fe80::1%25x]", "x", "1\n2", "User-Agent", "", "", int64(-1))
	f.Add("http://h/", "", "User-Agent", " ", "X", "1", "{}", int64(0))
	f.Fuzz(func(t *testing.T, url, host, k1, v1, k2, v2, body string, length int64) {
		mk := func() *http.Request {
			req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, strings.NewReader(body))
			if err != nil {
				return nil
			}
			if host != "" {
				req.Host = host
			}
			req.Header[k1] = append(req.Header[k1], v1)
			req.Header[k2] = append(req.Header[k2], v2)
			if length != 0 {
				req.ContentLength = length
			}
			return req
		}
		if mk() == nil {
			return
		}
		sameAsRequestWrite(t, mk)
	})
}

// BenchmarkWriteRequest writes the head and body of the gateway's POST:
// writeRequest against Request.Write.
func BenchmarkWriteRequest(b *testing.B) {
	h := http.Header{"Accept": {"application/json, text/event-stream"}, "Content-Type": {"application/json"},
		"Mcp-Protocol-Version": {"2025-06-18"}, "Mcp-Session-Id": {"3f2a"}, "User-Agent": {"Go-http-client/1.1"}}
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`
	req := newPost(b, "http://127.0.0.1:8080/mcp", h, body)
	bw := bufio.NewWriterSize(io.Discard, 4096)
	for _, bb := range []struct {
		name string
		w    func(*bufio.Writer, *http.Request) error
	}{{"writeRequest", writeRequest}, {"RequestWrite", viaRequestWrite}} {
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req.Body = io.NopCloser(strings.NewReader(body))
				if err := bb.w(bw, req); err != nil {
					b.Fatal(err)
				}
				bw.Flush()
			}
		})
	}
}
