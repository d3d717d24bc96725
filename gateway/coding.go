package gateway

import (
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Content codings. The gateway decides on messages as it reads them, so
// it must read what the client will: an answer in a coding the gateway
// cannot undo (br, deflate, zstd, stacked codings) would reach a client
// that undoes it (fetch does: the MCP TypeScript SDK) unread, its tool
// result unscanned, its task handle unrecorded. Neither side gets one:
// the client's Accept-Encoding is not passed on, the upstream's gzip
// (which RFC 9110 §12.5.3 lets a server send to a request without
// Accept-Encoding, and which net/http undoes itself for TLS upstreams) is
// undone here, anything else refused; a client's coded request is refused.

// contentCodings returns the codings h's Content-Encoding names other than
// identity, lower-cased, in the order they were applied.
func contentCodings(h http.Header) []string {
	var out []string
	for _, v := range h.Values("Content-Encoding") {
		for c := range strings.SplitSeq(v, ",") {
			if c = strings.ToLower(strings.TrimSpace(c)); c != "" && c != "identity" {
				out = append(out, c)
			}
		}
	}
	return out
}

// identityBody makes resp's body its content with no coding, its headers
// naming none, or returns why the gateway cannot read it.
func identityBody(resp *http.Response) error {
	cs := contentCodings(resp.Header)
	if len(cs) > 1 || len(cs) == 1 && cs[0] != "gzip" && cs[0] != "x-gzip" {
		return fmt.Errorf("the answer has Content-Encoding %q, which the gateway does not read", strings.Join(resp.Header.Values("Content-Encoding"), ", "))
	}
	resp.Header.Del("Content-Encoding")
	if len(cs) == 1 {
		resp.Body = &gunzipBody{body: resp.Body}
		resp.ContentLength = -1
		resp.Header.Del("Content-Length")
		resp.Uncompressed = true
	}
	return nil
}

// gunzipBody undoes gzip, from the first Read on: the gzip header of an
// event stream may come well after the response's.
type gunzipBody struct {
	body io.ReadCloser
	zr   *gzip.Reader
}

func (b *gunzipBody) Read(p []byte) (int, error) {
	if b.zr == nil {
		zr, err := gzip.NewReader(b.body)
		if err != nil {
			return 0, fmt.Errorf("undoing the answer's gzip: %w", err)
		}
		b.zr = zr
	}
	n, err := b.zr.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("undoing the answer's gzip: %w", err)
	}
	return n, err
}

func (b *gunzipBody) Close() error { return b.body.Close() }
