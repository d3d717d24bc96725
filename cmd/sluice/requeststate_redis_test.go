package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/redistest"
)

// mrtrEcho wraps the demo server: a tools/call of echo without a
// requestState is answered the MCP 2026-07-28 multi round-trip way
// (input_required with the state "st-" + its message), and the retry
// carrying the state goes on to the demo server.
func mrtrEcho(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name      string `json:"name"`
				Arguments struct {
					Message string `json:"message"`
				} `json:"arguments"`
				RequestState string `json:"requestState"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &m) != nil || m.Method != "tools/call" || m.Params.Name != "echo" || m.Params.RequestState != "" {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		st, _ := json.Marshal("st-" + m.Params.Arguments.Message)
		io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"resultType":"input_required","inputRequests":{"confirm":{"method":"elicitation/create","params":{"message":"Proceed?","requestedSchema":{"type":"object","properties":{}}}}},"requestState":`+string(st)+`}}`)
	})
}

// TestRequestStateSharedRedisStalled: with agent_tasks.redis_url the
// requestStates an upstream issues (MCP 2026-07-28) are shared, so that a
// retry reaching another replica is let through. With that Redis stalled
// (SIGSTOP: it accepts connections and never answers) a retry through a
// replica that did not issue the state must be refused within
// agent_tasks.timeout, saying the shared store did not answer (it said
// the upstream never issued it, a forgery, which sends the client to
// start its round trip over for nothing), and an answer issuing a state must reach its
// client as quickly: neither hangs on Redis.
func TestRequestStateSharedRedisStalled(t *testing.T) {
	srv := redistest.Start(t)
	cfg := `policy: {default: allow, result_mode: tool_result}
agent_tasks: {redis_url: "` + srv.URL() + `", key_prefix: "test:st:", timeout: 200ms}
`
	a, b := startServeWith(t, cfg, mrtrEcho), startServeWith(t, cfg, mrtrEcho)
	const retry = `,"inputResponses":{"confirm":{"action":"accept","content":{}}},"requestState":"st-one"}`
	echo := func(msg string) string { return `{"name":"echo","arguments":{"message":"` + msg + `"}` }

	if got := modernCallAs(t, a.url, "alice", "tools/call", "echo", echo("one")+"}"); !strings.Contains(got, `"requestState":"st-one"`) {
		t.Fatalf("first call: %s, want input_required with the state st-one", got)
	}
	// Shared: the retry through the other replica goes through.
	if got := modernCallAs(t, b.url, "alice", "tools/call", "echo", echo("one")+retry); !strings.Contains(got, `"text":"Echo: one"`) {
		t.Fatalf("retry through the other replica, Redis up: %s, want the echo", got)
	}
	if got := modernCallAs(t, a.url, "alice", "tools/call", "echo", echo("two")+"}"); !strings.Contains(got, `"requestState":"st-two"`) {
		t.Fatalf("second call: %s, want input_required with the state st-two", got)
	}

	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Resume() })
	const bound = 2 * time.Second // agent_tasks.timeout is 200ms

	// Twice: the second finds the connection the first timed out on
	// closed, and dials one that Redis accepts and never answers.
	for range 2 {
		began := time.Now()
		got := modernCallAs(t, b.url, "alice", "tools/call", "echo", echo("two")+strings.Replace(retry, "st-one", "st-two", 1))
		if took := time.Since(began); took > bound {
			t.Errorf("retry through the other replica, Redis stalled: answered after %v, want within %v", took.Round(time.Millisecond), bound)
		}
		if strings.Contains(got, `"text":"Echo: two"`) || !strings.Contains(got, `"error"`) || !strings.Contains(got, "share") || !strings.Contains(got, "did not answer") {
			t.Errorf("retry through the other replica, Redis stalled: %s, want it refused, saying the shared store did not answer", got)
		}
	}

	began := time.Now()
	got := modernCallAs(t, a.url, "alice", "tools/call", "echo", echo("three")+"}")
	if took := time.Since(began); took > bound {
		t.Errorf("a call issuing a state, Redis stalled: answered after %v, want within %v", took.Round(time.Millisecond), bound)
	}
	if !strings.Contains(got, `"requestState":"st-three"`) {
		t.Errorf("a call issuing a state, Redis stalled: %s, want input_required with the state st-three", got)
	}
	// Known to the replica that issued it, whatever Redis does.
	if got := modernCallAs(t, a.url, "alice", "tools/call", "echo", echo("three")+strings.Replace(retry, "st-one", "st-three", 1)); !strings.Contains(got, `"text":"Echo: three"`) {
		t.Errorf("retry through the issuing replica, Redis stalled: %s, want the echo", got)
	}
}

// TestApprovedCallUpstreamAsksReplicas: two replicas sharing approvals
// and issued requestStates through Redis. A call held and approved, whose
// upstream then asks back (input_required with a state), goes on under
// its approval through the serve wiring (the audit and rate gates pass
// the upstream's state on to the approval gate): the retry carrying the
// state runs once, whichever replica it reaches and however many copies
// are sent at once to both; another agent sending it is refused.
func TestApprovedCallUpstreamAsksReplicas(t *testing.T) {
	srv := redistest.Start(t)
	cfg := "policy: {default: allow, result_mode: tool_result, require_approval: [echo]}\nadmin_token: t0k\n" +
		"approvals: {redis_url: \"" + srv.URL() + "\", key_prefix: \"test:ap:\"}\n" +
		"agent_tasks: {redis_url: \"" + srv.URL() + "\", key_prefix: \"test:st:\"}\n"
	a, b := startServeWith(t, cfg, mrtrEcho), startServeWith(t, cfg, mrtrEcho)
	const echo = `{"name":"echo","arguments":{"message":"one"}`
	const retry = echo + `,"inputResponses":{"confirm":{"action":"accept","content":{}}},"requestState":"st-one"}`
	held := modernCallAs(t, a.url, "alice", "tools/call", "echo", echo+"}")
	m := regexp.MustCompile(`"approval_id":"(apr_[0-9a-f]+)"`).FindStringSubmatch(held)
	if m == nil {
		t.Fatalf("call: got %s, want approval_required with an approval_id", held)
	}
	var out bytes.Buffer
	if err := runApprovals(context.Background(), []string{"approve", m[1], "--by", "ops", "--admin", "http://" + b.admin, "--token", "t0k"}, &out); err != nil {
		t.Fatalf("approve on B: %v", err)
	}
	if got := modernCallAs(t, a.url, "alice", "tools/call", "echo", echo+"}"); !strings.Contains(got, `"requestState":"st-one"`) {
		t.Fatalf("approved call: got %s, want input_required with the state st-one", got)
	}
	if got := modernCallAs(t, b.url, "bob", "tools/call", "echo", retry); strings.Contains(got, "Echo: one") {
		t.Errorf("bob sending alice's retry: got %s, want it refused", got)
	}
	var wg sync.WaitGroup
	var ran atomic.Int32
	for i := range 6 {
		wg.Go(func() {
			g := a
			if i%2 == 1 {
				g = b
			}
			if strings.Contains(modernCallAs(t, g.url, "alice", "tools/call", "echo", retry), `"text":"Echo: one"`) {
				ran.Add(1)
			}
		})
	}
	wg.Wait()
	if n := ran.Load(); n != 1 {
		t.Errorf("6 copies of the retry at once on both replicas: %d ran, want 1", n)
	}
}
