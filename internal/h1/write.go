package h1

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"slices"
	"strconv"
	"strings"
)

// writeRequest writes req to w as req.Write(w) does. The requests the
// gateway sends most, a POST of a body it holds in memory with headers of
// plain names and one-line values, have their head written here: the bytes
// Request.Write writes (FuzzWriteRequest holds it to that), without its
// formatting through fmt, its transfer writer and its header sorter
// (Request.Write was 4 % of the gateway's CPU for a call; issue 13). Any
// other request goes through Request.Write.
func writeRequest(w *bufio.Writer, req *http.Request) error {
	host, ruri, ok := plainRequest(req)
	if !ok {
		return req.Write(w)
	}
	// The head, as Request.write and transferWriter.writeHeader write it
	// for such a request: request line, Host, User-Agent (the client's,
	// trimmed, or Go's unless the header is there and empty; one of blanks
	// is an empty line),
	// Content-Length, then the other headers sorted by name, each value
	// trimmed.
	w.WriteString("POST ")
	w.WriteString(ruri)
	w.WriteString(" HTTP/1.1\r\nHost: ")
	w.WriteString(host)
	w.WriteString("\r\n")
	ua := defaultUserAgent
	if vv, ok := req.Header["User-Agent"]; ok {
		ua = ""
		if len(vv) > 0 {
			ua = vv[0]
		}
	}
	if ua != "" {
		// Trimmed after the test, as Request.Write does: a value of
		// blanks is a User-Agent line with none.
		w.WriteString("User-Agent: ")
		w.WriteString(textproto.TrimString(ua))
		w.WriteString("\r\n")
	}
	w.WriteString("Content-Length: ")
	w.Write(strconv.AppendInt(w.AvailableBuffer(), req.ContentLength, 10))
	w.WriteString("\r\n")
	var kb [16]string
	keys := kb[:0]
	for k := range req.Header {
		if !excludedHeader(k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range req.Header[k] {
			w.WriteString(k)
			w.WriteString(": ")
			w.WriteString(textproto.TrimString(v))
			w.WriteString("\r\n")
		}
	}
	if _, err := w.WriteString("\r\n"); err != nil {
		req.Body.Close()
		return err
	}
	// The body, as transferWriter.writeBody copies one of a known length:
	// no more than it says, the rest read and counted, then closed.
	lr := io.LimitedReader{R: req.Body, N: req.ContentLength}
	sent, err := w.ReadFrom(&lr)
	if err != nil {
		req.Body.Close()
		return err
	}
	extra, err := io.Copy(io.Discard, req.Body)
	if err != nil {
		req.Body.Close()
		return err
	}
	if err := req.Body.Close(); err != nil {
		return err
	}
	if sent+extra != req.ContentLength {
		return fmt.Errorf("http: ContentLength=%d with Body length %d", req.ContentLength, sent+extra)
	}
	return nil
}

// defaultUserAgent is the User-Agent Request.Write sends when the
// request's header has none.
const defaultUserAgent = "Go-http-client/1.1"

// plainRequest reports whether writeRequest writes req's head itself, and
// if so the Host and request URI it writes: a POST of ContentLength bytes
// from a body GetBody can give again (NewRequest's in-memory readers,
// which Request.Write sends with its head), not closing the connection,
// with no transfer coding, trailer or client trace; an ASCII host of the
// bytes a host name, an IPv4 or a bracketed IPv6 address and a port hold
// (so that Request.Write, which converts it to Punycode, checks it and
// removes an IPv6 zone, writes it as it is); a request URI without
// control bytes; header names of letters, digits and hyphens and values
// without line breaks (which Request.Write would replace).
func plainRequest(req *http.Request) (host, ruri string, ok bool) {
	if req.Method != http.MethodPost || req.ContentLength <= 0 || req.Body == nil || req.Body == http.NoBody ||
		req.GetBody == nil || req.Close || len(req.TransferEncoding) > 0 || req.Trailer != nil || req.URL == nil ||
		httptrace.ContextClientTrace(req.Context()) != nil {
		return "", "", false
	}
	host = req.Host
	if host == "" {
		host = req.URL.Host
	}
	for i := 0; i < len(host); i++ {
		if c := host[i]; !(isAlnum(c) || c == '.' || c == '-' || c == ':' || c == '[' || c == ']') {
			return "", "", false
		}
	}
	ruri = req.URL.RequestURI()
	for i := 0; i < len(ruri); i++ {
		if c := ruri[i]; c < ' ' || c == 0x7f {
			return "", "", false
		}
	}
	for k, vv := range req.Header {
		if k == "" {
			return "", "", false
		}
		for i := 0; i < len(k); i++ {
			if c := k[i]; !isAlnum(c) && c != '-' {
				return "", "", false
			}
		}
		for _, v := range vv {
			if strings.ContainsAny(v, "\r\n") {
				return "", "", false
			}
		}
	}
	return host, ruri, true
}

// excludedHeader reports whether Request.Write leaves k out of the
// headers it writes from the map (it writes Host, User-Agent and
// Content-Length itself).
func excludedHeader(k string) bool {
	switch k {
	case "Host", "User-Agent", "Content-Length", "Transfer-Encoding", "Trailer":
		return true
	}
	return false
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}
