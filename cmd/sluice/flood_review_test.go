package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The tests in this file were written by a flood/robustness review; each
// failed on the code it was written against.

// TestSlowBodyHoldsBudgetForever: a client sends the headers of a few
// POSTs whose Content-Length is max_body_bytes and then never sends the
// body. Each reserves its whole length of max_inflight_body_bytes before
// a byte is read, and nothing ever gives it back: the agents' listener has
// no read deadline for bodies (only ReadHeaderTimeout). Sixteen idle
// connections from one address hold the whole budget, and every other
// client's POST, from any address, is refused with 503 for as long as the
// attacker keeps its sockets open. A client should not be able to hold the
// gateway's request-body budget with bytes it is not sending: a body read
// deadline, or a per-client share of the budget (as sessions have), would
// serve the honest client within seconds.
func TestSlowBodyHoldsBudgetForever(t *testing.T) {
	g := startServe(t, "policy: {default: allow}\nmax_body_bytes: 65536\n")
	addr := strings.TrimPrefix(strings.TrimSuffix(g.url, "/mcp/demo"), "http://")
	// max_inflight_body_bytes is 16 × max_body_bytes: 16 stalled bodies
	// take it all.
	for range 16 {
		// From another loopback address than the honest client's.
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		fmt.Fprintf(c, "POST /mcp/demo HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 65536\r\n\r\n{", addr)
	}
	time.Sleep(300 * time.Millisecond)
	initialize := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"honest","version":"1"}}}`
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var last int
	for ctx.Err() == nil {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, g.url, strings.NewReader(initialize))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			break
		}
		resp.Body.Close()
		last = resp.StatusCode
		if last == http.StatusOK {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	t.Fatalf("16 connections that sent headers and no body locked every other client out of POST for 20 s (last status %d): the body budget is held by bytes that never arrive", last)
}
