package h1

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/textproto"
)

// readResponse is http.ReadResponse(br, req). The answer a JSON-RPC
// upstream gives most — HTTP/1.1, a 2xx–5xx status with a body, a
// Content-Length, plain header lines, all of the head already buffered —
// is read by fastResponse, which makes the same *http.Response and body
// without textproto's line reader; anything else, and anything it is not
// sure of, it leaves unread for http.ReadResponse. FuzzReadResponse holds
// the two to the same responses, bodies, errors and bytes left unread.
func readResponse(br *bufio.Reader, req *http.Request) (*http.Response, error) {
	if resp, err := fastResponse(br, req); resp != nil || err != nil {
		return resp, err
	}
	return http.ReadResponse(br, req)
}

// fastResponse returns the response at the head of br, or nil and nil
// having read nothing (but, as http.ReadResponse would, filled br's
// buffer). An error is one reading the first byte, as http.ReadResponse
// reports it.
func fastResponse(br *bufio.Reader, req *http.Request) (*http.Response, error) {
	if req == nil || req.Method == http.MethodHead {
		return nil, nil
	}
	if _, err := br.Peek(1); err != nil {
		// Nothing buffered and the read failed: http.ReadResponse's
		// first ReadLine would have failed the same way.
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	buf, _ := br.Peek(br.Buffered())
	end := bytes.Index(buf, []byte("\r\n\r\n"))
	if end < 0 {
		return nil, nil // not all buffered: http.ReadResponse reads on
	}
	head := buf[:end+2] // each line with its CRLF
	// Status line: HTTP/1.1 NNN[ reason].
	eol := bytes.Index(head, []byte("\r\n"))
	line := head[:eol]
	if len(line) < 12 || string(line[:9]) != "HTTP/1.1 " || bytes.IndexByte(line, '\r') >= 0 || bytes.IndexByte(line, '\n') >= 0 {
		return nil, nil
	}
	code := 0
	for _, c := range line[9:12] {
		if c < '0' || c > '9' {
			return nil, nil
		}
		code = code*10 + int(c-'0')
	}
	if len(line) > 12 && line[12] != ' ' {
		return nil, nil
	}
	if code < 200 || code > 599 || code == http.StatusNoContent || code == http.StatusNotModified {
		return nil, nil // no body, or an informational answer: net/http's rules
	}
	// Header lines, counted first: one backing array for the values, one
	// string for the head (the values are slices of it).
	lines := head[eol+2:]
	n := bytes.Count(lines, []byte("\r\n"))
	text := string(head)
	off := eol + 2 // of lines in text
	vals := make([]string, n)
	h := make(http.Header, n)
	length := int64(-1)
	for len(lines) > 0 {
		eol := bytes.Index(lines, []byte("\r\n"))
		line := lines[:eol]
		lineOff := off
		lines, off = lines[eol+2:], off+eol+2
		if len(line) == 0 || line[0] == ' ' || line[0] == '\t' || bytes.IndexByte(line, '\r') >= 0 || bytes.IndexByte(line, '\n') >= 0 {
			return nil, nil // folded, or a line end of another kind
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 {
			return nil, nil
		}
		for _, c := range line[:colon] {
			if !tokenByte[c] {
				return nil, nil
			}
		}
		v := line[colon+1:]
		for _, c := range v {
			if !valueByte[c] {
				return nil, nil
			}
		}
		// The value without the blanks around it, as a slice of text.
		i, j := 0, len(v)
		for i < j && (v[i] == ' ' || v[i] == '\t') {
			i++
		}
		for j > i && (v[j-1] == ' ' || v[j-1] == '\t') {
			j--
		}
		start := lineOff + colon + 1
		value := text[start+i : start+j]
		key := canonicalKey(line[:colon])
		switch key {
		case "Content-Length":
			if length >= 0 || j-i == 0 || j-i > 18 {
				return nil, nil // repeated (deduplicated by net/http), empty or long
			}
			length = 0
			for _, c := range v[i:j] {
				if c < '0' || c > '9' {
					return nil, nil
				}
				length = length*10 + int64(c-'0')
			}
		case "Transfer-Encoding", "Connection", "Trailer", "Pragma":
			return nil, nil // net/http's rules for these
		}
		if vv := h[key]; vv != nil {
			h[key] = append(vv, value)
		} else {
			vv, vals = vals[:1:1], vals[1:]
			vv[0] = value
			h[key] = vv
		}
	}
	if length < 0 {
		return nil, nil // a body to the connection's end
	}
	if _, err := br.Discard(end + 4); err != nil {
		return nil, err // cannot be: it is buffered
	}
	resp := &http.Response{
		Status: text[9:eol], StatusCode: code, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, ContentLength: length, Request: req, Body: http.NoBody,
	}
	if length > 0 {
		resp.Body = &lengthBody{r: br, n: length}
	}
	return resp, nil
}

// canonicalKey is textproto.CanonicalMIMEHeaderKey of k, a token,
// without allocating for the names JSON-RPC answers carry.
func canonicalKey(k []byte) string {
	switch string(k) {
	case "Content-Type":
		return "Content-Type"
	case "Content-Length":
		return "Content-Length"
	case "Date":
		return "Date"
	case "Mcp-Session-Id":
		return "Mcp-Session-Id"
	case "Cache-Control":
		return "Cache-Control"
	case "Server":
		return "Server"
	case "Vary":
		return "Vary"
	}
	return textproto.CanonicalMIMEHeaderKey(string(k))
}

// tokenByte tells the bytes of a header name (RFC 7230 token), as
// textproto accepts them; valueByte those of a header value: HTAB, SP,
// VCHAR and obs-text.
var tokenByte, valueByte = func() (t, v [256]bool) {
	for c := range 256 {
		t[c] = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c < 0x80 && bytes.IndexByte([]byte("!#$%&'*+-.^_`|~"), byte(c)) >= 0
		v[c] = c == '\t' || 0x20 <= c && c != 0x7f
	}
	return t, v
}()

// lengthBody is the body http.ReadResponse makes for a Content-Length:
// the bytes up to it, io.EOF with the last of them, and
// io.ErrUnexpectedEOF if the connection ends before.
type lengthBody struct {
	r   *bufio.Reader
	n   int64 // left to read
	eof bool
}

func (b *lengthBody) Read(p []byte) (int, error) {
	if b.eof || b.n <= 0 {
		b.eof = true
		return 0, io.EOF
	}
	if int64(len(p)) > b.n {
		p = p[:b.n]
	}
	n, err := b.r.Read(p)
	b.n -= int64(n)
	switch {
	case err == io.EOF:
		b.eof = true
		if b.n > 0 {
			err = io.ErrUnexpectedEOF
		}
	case err == nil && n > 0 && b.n == 0:
		b.eof = true
		err = io.EOF
	}
	return n, err
}

// Close does nothing: body (transport.go) decides what becomes of the
// connection.
func (b *lengthBody) Close() error { return nil }
