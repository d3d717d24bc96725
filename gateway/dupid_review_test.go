package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/gateway/transport"

	"github.com/sluicehq/sluice/intercept"
)

// TestAttackReusedIDMasksList (found by an attacker review): an agent
// sends a tasks/list (or tools/list) and a ping under one id, in one batch
// or, since ids are paired by value, under two spellings of one id ("a\u0062"
// and "ab"). The gateway kept one method per id, the last, so the list's
// answer was screened as a ping's: every other agent's task, and every
// hidden tool, went to the agent.
func TestAttackReusedIDMasksList(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		b, _ := io.ReadAll(r.Body)
		var reqs []map[string]any
		if err := json.Unmarshal(b, &reqs); err != nil {
			var one map[string]any
			_ = json.Unmarshal(b, &one)
			reqs = []map[string]any{one}
		}
		var out []map[string]any
		for _, m := range reqs {
			id, ok := m["id"]
			if !ok {
				continue
			}
			var res any = map[string]any{}
			switch m["method"] {
			case "initialize":
				res = map[string]any{"protocolVersion": "2025-03-26", "capabilities": map[string]any{"tools": map[string]any{}}, "serverInfo": map[string]any{"name": "u", "version": "1"}}
				w.Header().Set("Mcp-Session-Id", "up-1")
			case "tasks/list":
				res = map[string]any{"tasks": []any{map[string]any{"taskId": "someone-elses", "status": "working", "statusMessage": "secret"}}}
			case "tools/list":
				res = map[string]any{"tools": []any{map[string]any{"name": "send_email", "inputSchema": map[string]any{"type": "object"}}}}
			}
			out = append(out, map[string]any{"jsonrpc": "2.0", "id": id, "result": res})
		}
		w.Header().Set("Content-Type", "application/json")
		if len(reqs) == 1 && len(out) == 1 {
			_ = json.NewEncoder(w).Encode(out[0])
			return
		}
		_ = json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(up.Close)
	g, err := New(Options{Upstreams: []Upstream{{Name: "u", URL: up.URL + "/mcp"}}},
		&intercept.Interceptor{Decider: hidesEmail{}, HideDeniedTools: true}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })
	url := gw.URL + "/mcp/u"
	_, h, body := post(t, url, nil, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	sid := h.Get(hdrSession)
	if sid == "" {
		t.Fatalf("initialize: %s", body)
	}
	hdr := map[string]string{hdrSession: sid, "Mcp-Protocol-Version": "2025-03-26"}
	for _, c := range []struct{ name, batch string }{
		{"tasks/list, one id twice", `[{"jsonrpc":"2.0","id":1,"method":"tasks/list"},{"jsonrpc":"2.0","id":1,"method":"ping"}]`},
		{"tasks/list, two spellings", `[{"jsonrpc":"2.0","id":"a\u0062","method":"tasks/list"},{"jsonrpc":"2.0","id":"ab","method":"ping"}]`},
		{"tools/list, two spellings", `[{"jsonrpc":"2.0","id":"a\u0062","method":"tools/list"},{"jsonrpc":"2.0","id":"ab","method":"ping"}]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, got := post(t, url, hdr, c.batch)
			if strings.Contains(got, "someone-elses") || strings.Contains(got, "send_email") {
				t.Errorf("got %s, want the list screened (or the batch refused)", got)
			}
		})
	}
}

// holdingDialer is a stdio upstream that answers a list only after the
// request that follows it, as a server answering concurrently may.
// listed, if set, hears of each list held.
type holdingDialer struct {
	t      *testing.T
	listed chan struct{}
}

func (d holdingDialer) Dial(ctx context.Context) (transport.Conn, error) {
	toUp, fromGW := io.Pipe()
	toGW, fromUp := io.Pipe()
	go func() {
		defer fromUp.Close()
		br := bufio.NewReader(toUp)
		var held []byte
		for {
			line, err := br.ReadBytes('\n')
			if err != nil {
				return
			}
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(line, &m) != nil || len(m.ID) == 0 {
				continue
			}
			answer := []byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{}}` + "\n")
			switch m.Method {
			case "initialize":
				answer = []byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"h","version":"1"}}}` + "\n")
			case "tasks/list":
				held = []byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"tasks":[{"taskId":"someone-elses","status":"working"}]}}` + "\n")
				if d.listed != nil {
					tell(d.t, d.listed, struct{}{})
				}
				continue
			}
			if held != nil {
				answer, held = append(held, answer...), nil
			}
			if _, err := fromUp.Write(answer); err != nil {
				return
			}
		}
	}()
	return &pipeConn{Conn: transport.NewStdioConn(toGW, fromGW, nil), w: fromGW}, nil
}

// holdingGateway serves route "u", whose upstream is a holdingDialer
// telling listed when it has the tasks/list.
func holdingGateway(t *testing.T, listed chan struct{}) *httptest.Server {
	t.Helper()
	g, err := New(Options{Upstreams: []Upstream{{Name: "u", Command: "true"}}},
		&intercept.Interceptor{Decider: hidesEmail{}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	g.routes["u"].dialer = holdingDialer{t: t, listed: listed}
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(srv.Close)
	return srv
}

// TestAttackReusedIDMasksListOnConnection: on a connection (/ws), an
// agent sends tasks/list and then, before its answer, a ping under the
// same id (or another spelling of it): the list's answer was screened as
// the ping's.
func TestAttackReusedIDMasksListOnConnection(t *testing.T) {
	for _, ids := range [][2]string{{`1`, `1`}, {`"a\u0062"`, `"ab"`}} {
		t.Run(ids[0]+","+ids[1], func(t *testing.T) {
			srv := holdingGateway(t, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			c, err := (&transport.WSDialer{URL: "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws/u"}).Dial(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			for _, m := range []string{
				`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`,
				`{"jsonrpc":"2.0","id":` + ids[0] + `,"method":"tasks/list"}`,
				`{"jsonrpc":"2.0","id":` + ids[1] + `,"method":"ping"}`,
				`{"jsonrpc":"2.0","id":99,"method":"ping"}`,
			} {
				if err := c.Write(ctx, []byte(m)); err != nil {
					t.Fatal(err)
				}
			}
			for {
				b, err := c.Read(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(string(b), "someone-elses") {
					t.Fatalf("got %s, want another's task left out", b)
				}
				if strings.Contains(string(b), `"id":99`) {
					return
				}
			}
		})
	}
}

// TestAttackReusedIDMasksListOnBridge: the same on a session bridged to a
// stdio upstream, the tasks/list and the ping in two POSTs.
func TestAttackReusedIDMasksListOnBridge(t *testing.T) {
	for _, ids := range [][2]string{{`1`, `1`}, {`"a\u0062"`, `"ab"`}} {
		t.Run(ids[0]+","+ids[1], func(t *testing.T) {
			listed := make(chan struct{}, 1)
			srv := holdingGateway(t, listed)
			url := srv.URL + "/mcp/u"
			_, h, body := post(t, url, nil, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
			sid := h.Get(hdrSession)
			if sid == "" {
				t.Fatalf("initialize: %s", body)
			}
			hdr := map[string]string{hdrSession: sid, "Mcp-Protocol-Version": "2025-06-18"}
			first := make(chan string, 1)
			go func() {
				req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":`+ids[0]+`,"method":"tasks/list"}`))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				for k, v := range hdr {
					req.Header.Set(k, v)
				}
				c := &http.Client{Timeout: 2 * time.Second}
				resp, err := c.Do(req)
				if err != nil {
					first <- err.Error()
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				first <- string(b)
			}()
			select {
			case <-listed:
			case <-time.After(5 * time.Second):
				t.Fatal("the upstream never got the tasks/list")
			}
			_, _, got := post(t, url, hdr, `{"jsonrpc":"2.0","id":`+ids[1]+`,"method":"ping"}`)
			if strings.Contains(got, "someone-elses") {
				t.Errorf("ping: got %s, want another's task left out", got)
			}
			post(t, url, hdr, `{"jsonrpc":"2.0","id":99,"method":"ping"}`) // lets the list's answer go
			if got := <-first; strings.Contains(got, "someone-elses") {
				t.Errorf("tasks/list: got %s, want another's task left out", got)
			}
		})
	}
}
