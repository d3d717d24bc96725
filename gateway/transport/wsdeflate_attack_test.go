package transport

import (
	"bufio"
	"bytes"
	"compress/flate"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestAttackWSUpstreamDeflateBomb: the WebSocket client offers no
// extension, but gorilla's client takes up permessage-deflate whenever
// the server's handshake answer names it, and its read limit counts
// the compressed bytes of a frame. A hostile upstream answered with the
// extension and sent one small compressed frame that inflates far past
// MaxMessageBytes (max_answer_bytes): Read inflated it whole, so a few
// KiB on the wire made the gateway hold gigabytes. An extension the
// client did not offer now fails the handshake (RFC 6455 9.1).
func TestAttackWSUpstreamDeflateBomb(t *testing.T) {
	const limit = 64 << 10
	// The message: a JSON-RPC notification whose string inflates to
	// 4 MiB, 64 times the limit, from about 4 KiB of deflate.
	msg := []byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"` + strings.Repeat("x", 4<<20) + `"}}`)
	var z bytes.Buffer
	fw, _ := flate.NewWriter(&z, flate.BestCompression)
	fw.Write(msg)
	fw.Flush()
	payload := bytes.TrimSuffix(z.Bytes(), []byte{0, 0, 0xff, 0xff})
	if len(payload) > limit {
		t.Fatalf("compressed frame is %d bytes, want it under the limit", len(payload))
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		defer conn.Close()
		h := sha1.Sum([]byte(r.Header.Get("Sec-WebSocket-Key") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
		brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
			"Sec-WebSocket-Accept: " + base64.StdEncoding.EncodeToString(h[:]) + "\r\n" +
			"Sec-WebSocket-Extensions: permessage-deflate; server_no_context_takeover; client_no_context_takeover\r\n\r\n")
		// FIN, RSV1 (compressed), text; unmasked, 64-bit length.
		brw.Write([]byte{0x80 | 0x40 | 0x1, 127})
		binary.Write(brw, binary.BigEndian, uint64(len(payload)))
		brw.Write(payload)
		brw.Flush()
		// Hold the connection until the client closes it.
		bufio.NewReader(conn).WriteTo(discard{})
	}))
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := (&WSDialer{URL: "ws" + strings.TrimPrefix(srv.URL, "http"), MaxMessageBytes: limit}).Dial(ctx)
	if err != nil {
		if !strings.Contains(err.Error(), "extension") {
			t.Fatalf("Dial: %v, want an error naming the extension not offered", err)
		}
		return
	}
	defer c.Close()
	got, err := c.Read(ctx)
	if err == nil {
		t.Fatalf("Read returned a message of %d bytes past MaxMessageBytes %d: an upstream's deflate was inflated unbounded", len(got), limit)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// TestAttackWSUpstreamEndlessHandshake: gorilla's client reads the
// server's handshake answer with http.ReadResponse, whose header has no
// bound (net/http's Transport stops at MaxResponseHeaderBytes; this
// reader has none), for as long as HandshakeTimeout (45s). A hostile
// upstream answering 101 with a header that never ends made the gateway
// hold all of it: here 64 MiB before the header ends, gigabytes in 45s
// over a fast link. The handshake now reads at most
// wsMaxHandshakeBytes.
func TestAttackWSUpstreamEndlessHandshake(t *testing.T) {
	const sent = 64 << 20
	wrote := make(chan int64, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		defer conn.Close()
		var n int64
		defer func() { wrote <- n }()
		h := sha1.Sum([]byte(r.Header.Get("Sec-WebSocket-Key") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
		brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
			"Sec-WebSocket-Accept: " + base64.StdEncoding.EncodeToString(h[:]) + "\r\n")
		line := "X-Pad: " + strings.Repeat("a", 4<<10) + "\r\n"
		for n < sent {
			m, err := brw.WriteString(line)
			n += int64(m)
			if err != nil {
				return
			}
		}
		if _, err := brw.WriteString("\r\n"); err != nil {
			return
		}
		if brw.Flush() != nil {
			return
		}
		n = sent + 1 // all of it went out
		bufio.NewReader(conn).WriteTo(discard{})
	}))
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := (&WSDialer{URL: "ws" + strings.TrimPrefix(srv.URL, "http")}).Dial(ctx)
	if err == nil {
		c.Close()
	}
	if n := <-wrote; n > sent {
		t.Fatalf("Dial read a %d MiB handshake header whole (err %v); want it refused past %d bytes", sent>>20, err, wsMaxHandshakeBytes)
	}
	if err == nil {
		t.Fatal("Dial succeeded on a handshake past the bound")
	}
}
