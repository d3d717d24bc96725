package approval

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

var holdPay = &intercept.StaticDecider{Default: intercept.Allow, Approval: []string{"pay"}}

func call(args string) *intercept.ActionDescriptor {
	return &intercept.ActionDescriptor{TxnID: intercept.NewTxnID(), ToolName: "pay", Upstream: "bank", Agent: "a1", Parameters: jsontext.Value(args)}
}

func TestGateLifecycle(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	s := NewStore(Options{Timeout: time.Minute, Now: c.now})
	g := &Gate{Next: holdPay, Store: s}
	ctx := context.Background()

	d := intercept.Decide(ctx, g, call(`{"amount":5000,"to":"x"}`))
	if d.Verdict != intercept.RequireApproval || d.ApprovalID == "" {
		t.Fatalf("first call: got %s %q, want require_approval with an id", d.Verdict, d.ApprovalID)
	}
	id := d.ApprovalID
	// Same call again, keys in another order: same request, still held.
	if d2 := intercept.Decide(ctx, g, call(`{"to":"x","amount":5000}`)); d2.Verdict != intercept.RequireApproval || d2.ApprovalID != id {
		t.Fatalf("repeat: got %s %q, want the same pending request %q", d2.Verdict, d2.ApprovalID, id)
	}
	if _, err := s.Decide(id, true, "alice"); err != nil {
		t.Fatal(err)
	}
	// Another amount is another call: it needs its own approval.
	if d3 := intercept.Decide(ctx, g, call(`{"amount":9000,"to":"x"}`)); d3.Verdict != intercept.RequireApproval || d3.ApprovalID == id {
		t.Fatalf("changed arguments: got %s %q, want a new hold", d3.Verdict, d3.ApprovalID)
	}
	// Another agent sending the approved call gets nothing from it.
	other := call(`{"amount":5000,"to":"x"}`)
	other.Agent = "a2"
	if d4 := intercept.Decide(ctx, g, other); d4.Verdict != intercept.RequireApproval {
		t.Fatalf("other agent: got %s, want require_approval", d4.Verdict)
	}
	// The approved call is allowed once: used up when it is forwarded.
	d5c := call(`{"amount":5000,"to":"x"}`)
	d5 := intercept.Decide(ctx, g, d5c)
	if d5.Verdict != intercept.Allow || d5.Reason != ReasonGranted || d5.ApprovalID != id {
		t.Fatalf("approved call: got %s/%s %q, want allow/%s naming %s", d5.Verdict, d5.Reason, d5.ApprovalID, ReasonGranted, id)
	}
	if err := g.Forwarded(ctx, d5c, d5); err != nil {
		t.Fatalf("forwarding the approved call: %v", err)
	}
	if err := g.Forwarded(ctx, d5c, d5); err == nil {
		t.Fatal("forwarding it twice on one approval: got no error")
	}
	if d6 := intercept.Decide(ctx, g, call(`{"amount":5000,"to":"x"}`)); d6.Verdict != intercept.RequireApproval {
		t.Fatalf("second use of one approval: got %s, want require_approval", d6.Verdict)
	}
}

func TestGateDeclineAndTimeout(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	s := NewStore(Options{Timeout: time.Minute, Now: c.now})
	g := &Gate{Next: holdPay, Store: s}
	ctx := context.Background()

	d := intercept.Decide(ctx, g, call(`{"amount":1}`))
	if _, err := s.Decide(d.ApprovalID, false, "bob"); err != nil {
		t.Fatal(err)
	}
	if got := intercept.Decide(ctx, g, call(`{"amount":1}`)); got.Verdict != intercept.Deny || got.Reason != ReasonDeclined {
		t.Fatalf("declined: got %s/%s, want deny/%s", got.Verdict, got.Reason, ReasonDeclined)
	}

	d = intercept.Decide(ctx, g, call(`{"amount":2}`))
	c.t = c.t.Add(2 * time.Minute)
	if got := intercept.Decide(ctx, g, call(`{"amount":2}`)); got.Verdict != intercept.Deny || got.Reason != ReasonTimeout {
		t.Fatalf("unanswered: got %s/%s, want deny/%s", got.Verdict, got.Reason, ReasonTimeout)
	}
	if _, err := s.Decide(d.ApprovalID, true, "late"); err != ErrNotPending {
		t.Fatalf("approving an expired request: got %v, want ErrNotPending", err)
	}
}

func TestAdminHandler(t *testing.T) {
	s := NewStore(Options{})
	g := &Gate{Next: holdPay, Store: s}
	d := intercept.Decide(context.Background(), g, call(`{"amount":3}`))
	srv := httptest.NewServer(s.Handler("sekret"))
	defer srv.Close()
	do := func(method, path, body, token string) int {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		ctype := "application/json"
		if strings.HasPrefix(body, "text:") { // what a cross-origin form or fetch can send without a preflight
			ctype, body = "text/plain", strings.TrimPrefix(body, "text:")
			req, _ = http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		}
		req.Header.Set("Content-Type", ctype)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	tests := []struct {
		name, method, path, body, token string
		want                            int
	}{
		{"no token", "GET", "/admin/approvals", "", "", 401},
		{"list", "GET", "/admin/approvals", "", "sekret", 200},
		{"text/plain", "POST", "/admin/approvals/" + d.ApprovalID, `text:{"action":"approve"}`, "sekret", 415},
		{"bad action", "POST", "/admin/approvals/" + d.ApprovalID, `{"action":"maybe"}`, "sekret", 400},
		{"unknown id", "POST", "/admin/approvals/nope", `{"action":"approve"}`, "sekret", 404},
		{"approve", "POST", "/admin/approvals/" + d.ApprovalID, `{"action":"approve","by":"ops"}`, "sekret", 200},
		{"approve twice", "POST", "/admin/approvals/" + d.ApprovalID, `{"action":"approve"}`, "sekret", 409},
	}
	for _, tt := range tests {
		if got := do(tt.method, tt.path, tt.body, tt.token); got != tt.want {
			t.Errorf("%s: got %d, want %d", tt.name, got, tt.want)
		}
	}
	if r, _ := s.Get(d.ApprovalID); r.Status != Approved || r.DecidedBy != "ops" {
		t.Errorf("after approve: got %s by %q", r.Status, r.DecidedBy)
	}
}

// TestApprovalIDEntropy: approval ids carry at least 128 random bits, so
// nobody who has not been told an id can guess one, and ids minted in the
// same instant share no time-ordered prefix.
func TestApprovalIDEntropy(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	g := &Gate{Next: holdPay, Store: NewStore(Options{Now: c.now})}
	var prev string
	for i := range 64 {
		id := intercept.Decide(context.Background(), g, call(fmt.Sprintf(`{"amount":%d}`, i))).ApprovalID
		rnd, ok := strings.CutPrefix(id, "apr_")
		b, err := hex.DecodeString(rnd)
		if !ok || err != nil || len(b) < 16 {
			t.Fatalf("id %q: got %d bytes after apr_ (%v), want at least 16 random bytes in hex", id, len(b), err)
		}
		if n := commonPrefix(prev, rnd); n > 8 {
			t.Errorf("ids %q and %q share %d leading hex digits, want random ids", prev, rnd, n)
		}
		prev = rnd
	}
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// TestFinishedRequestsReleased: expired, used and declined requests give
// up their arguments, and only a bounded history of them is kept, so a
// flood of held calls nobody answers does not stay in memory.
func TestFinishedRequestsReleased(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	s := NewStore(Options{Timeout: time.Minute, Now: c.now})
	g := &Gate{Next: holdPay, Store: s}
	ic := &intercept.Interceptor{Decider: g}
	ctx := context.Background()
	big := strings.Repeat("x", 1024)
	const n = 150
	for i := range n {
		if i == MaxPendingPerAgent {
			c.t = c.t.Add(2 * time.Minute) // those expire: the agent may be held again
		}
		if d := intercept.Decide(ctx, g, call(fmt.Sprintf(`{"amount":%d,"memo":%q}`, i, big))); d.Verdict != intercept.RequireApproval {
			t.Fatalf("call %d: got %s, want require_approval", i, d.Verdict)
		}
	}
	c.t = c.t.Add(2 * time.Minute) // they all time out; then one is used, one declined and seen
	used := intercept.Decide(ctx, g, call(`{"amount":-1}`)).ApprovalID
	declined := intercept.Decide(ctx, g, call(`{"amount":-2}`)).ApprovalID
	if _, err := s.Decide(used, true, "ops"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Decide(declined, false, "ops"); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := ic.CheckDecision(ctx, message(t, `{"amount":-1}`), callContext); !ok {
		t.Fatal("the approved call was not allowed")
	}
	if d := intercept.Decide(ctx, g, call(`{"amount":-2}`)); d.Reason != ReasonDeclined {
		t.Fatalf("declined call: got %s, want %s", d.Reason, ReasonDeclined)
	}
	all := s.List()
	if len(all) > defaultHistory {
		t.Errorf("requests kept: got %d, want at most %d", len(all), defaultHistory)
	}
	for _, r := range all {
		if r.Arguments != nil {
			t.Errorf("request %s (%s) still holds its arguments", r.ID, r.Status)
		}
		if r.Status == Pending || r.Status == Approved {
			t.Errorf("request %s: got %s after its timeout", r.ID, r.Status)
		}
	}
	if got := s.Len(); got != 0 {
		t.Errorf("live requests: got %d, want 0", got)
	}
	for _, id := range []string{used, declined} {
		if _, err := s.Get(id); err != nil {
			t.Errorf("recent request %s: %v, want it in the history", id, err)
		}
	}
}

// TestStoreRunSweeps: Run expires and releases unanswered requests on its
// own, and ends with its context.
func TestStoreRunSweeps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewStore(Options{Timeout: time.Minute})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); s.Run(ctx) }()
		g := &Gate{Next: holdPay, Store: s}
		intercept.Decide(ctx, g, call(`{"amount":1}`))
		if s.Len() != 1 {
			t.Fatalf("live requests: got %d, want 1", s.Len())
		}
		time.Sleep(2 * time.Minute) // fake time: the sweeper runs meanwhile
		synctest.Wait()
		if got := s.Len(); got != 0 {
			t.Errorf("live requests after the timeout: got %d, want 0", got)
		}
		cancel()
		<-done
	})
}

var callContext = intercept.CallContext{Upstream: "bank", Agent: "a1"}

func message(t *testing.T, args string) *intercept.Message {
	t.Helper()
	return messageFor(t, 1, "pay", args)
}

func messageFor(t *testing.T, id int, tool, args string) *intercept.Message {
	t.Helper()
	m, err := intercept.DecodeMessage([]byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args)))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

type failForward struct{ intercept.Decider }

func (failForward) Forwarded(context.Context, *intercept.ActionDescriptor, intercept.Decision) error {
	return errors.New("memory unavailable")
}

// TestApprovalConsumedOnlyWhenForwarded: an approval is used up only by a
// call that is forwarded: not by a batch refused for another element, not
// when the rest of the chain cannot commit the call.
func TestApprovalConsumedOnlyWhenForwarded(t *testing.T) {
	ctx := context.Background()
	holdPayDenyRm := &intercept.StaticDecider{Default: intercept.Allow, Approval: []string{"pay"}, Deny: []string{"rm"}}
	approved := func(t *testing.T, next intercept.Decider) (*intercept.Interceptor, *Store, string) {
		s := NewStore(Options{})
		ic := &intercept.Interceptor{Decider: &Gate{Next: next, Store: s}}
		dec, _, _ := ic.CheckDecision(ctx, message(t, `{"amount":7}`), callContext)
		if _, err := s.Decide(dec.ApprovalID, true, "ops"); err != nil {
			t.Fatal(err)
		}
		return ic, s, dec.ApprovalID
	}
	status := func(s *Store, id string) Status { r, _ := s.Get(id); return r.Status }

	t.Run("batch refused", func(t *testing.T) {
		ic, s, id := approved(t, holdPayDenyRm)
		if _, ok := ic.CheckBatch(ctx, []*intercept.Message{message(t, `{"amount":7}`), messageFor(t, 2, "rm", `{}`)}, callContext); ok {
			t.Fatal("a batch with a denied call was forwarded")
		}
		if got := status(s, id); got != Approved {
			t.Fatalf("after the refused batch: got %s, want approved", got)
		}
		if _, _, ok := ic.CheckDecision(ctx, message(t, `{"amount":7}`), callContext); !ok {
			t.Fatal("the approved call, sent alone: not allowed")
		}
		if got := status(s, id); got != Used {
			t.Errorf("after forwarding: got %s, want used", got)
		}
		if dec, _, ok := ic.CheckDecision(ctx, message(t, `{"amount":7}`), callContext); ok || dec.Verdict != intercept.RequireApproval {
			t.Errorf("second use: got %s, want require_approval", dec.Verdict)
		}
	})
	t.Run("commit fails", func(t *testing.T) {
		ic, s, id := approved(t, failForward{holdPayDenyRm})
		dec, _, ok := ic.CheckDecision(ctx, message(t, `{"amount":7}`), callContext)
		if ok || dec.Reason != intercept.ReasonPolicyError {
			t.Fatalf("got %v %s, want a policy_error denial", ok, dec.Reason)
		}
		if got := status(s, id); got != Approved {
			t.Errorf("after the failed commit: got %s, want approved", got)
		}
	})
}

// TestRequestState: a sealed requestState opens only in the Store that
// sealed it, unaltered and before its expiry, and checks only for the
// call and agent it was issued about.
func TestRequestState(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	s := NewStore(Options{Timeout: time.Minute, Now: c.now})
	g := &Gate{Next: holdPay, Store: s}
	d := call(`{"amount":5}`)
	id := intercept.Decide(context.Background(), g, d).ApprovalID
	state, err := s.SealState(id, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.OpenState(state)
	if err != nil || st.ApprovalID != id || st.Agent != "a1" {
		t.Fatalf("open: got %+v, %v; want the state of %s for a1", st, err, id)
	}
	if err := st.Check(call(`{"amount":5}`)); err != nil {
		t.Errorf("check, same call: %v", err)
	}
	other := call(`{"amount":5}`)
	other.Agent = "a2"
	tampered := []byte(state)
	tampered[len(tampered)-3] ^= 1
	for name, err := range map[string]error{
		"other agent":   st.Check(other),
		"other call":    st.Check(call(`{"amount":6}`)),
		"raw id":        second(s.OpenState(id)),
		"tampered":      second(s.OpenState(string(tampered))),
		"another store": second(NewStore(Options{Now: c.now}).OpenState(state)),
	} {
		if !errors.Is(err, ErrBadState) {
			t.Errorf("%s: got %v, want ErrBadState", name, err)
		}
	}
	c.t = c.t.Add(time.Minute)
	if _, err := s.OpenState(state); !errors.Is(err, ErrBadState) || !strings.Contains(err.Error(), "expired") {
		t.Errorf("expired: got %v, want ErrBadState saying it expired", err)
	}
}

func second[T any](_ T, err error) error { return err }

// TestSelfApprovalOtherClaim: an admin JWT that names the held call's
// agent in another claim than its subject (the agent is named by azp or
// client_id, the admin by sub: one IdP client given both roles) cannot
// answer that call either.
func TestSelfApprovalOtherClaim(t *testing.T) {
	for _, claim := range []string{"azp", "client_id", "sub"} {
		t.Run(claim, func(t *testing.T) {
			s := NewStore(Options{})
			d := intercept.Decide(context.Background(), &Gate{Next: holdPay, Store: s}, call(`{"amount":3}`))
			p := &intercept.Principal{ID: "service-account-x", Method: "jwt", Claims: map[string]any{"sub": "service-account-x", claim: "a1"}}
			if claim == "sub" {
				p.ID = "a1"
			}
			h := s.Handler("")
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				h.ServeHTTP(w, r.WithContext(intercept.WithPrincipal(r.Context(), p)))
			}))
			defer srv.Close()
			resp, err := http.Post(srv.URL+"/admin/approvals/"+d.ApprovalID, "application/json", strings.NewReader(`{"action":"approve","by":"ops"}`))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("admin JWT with %s naming the agent: got %d, want 403", claim, resp.StatusCode)
			}
			if r, _ := s.Get(d.ApprovalID); r.Status != Pending {
				t.Errorf("after the refused decision: got %s, want pending", r.Status)
			}
		})
	}
}

// TestSelfApprovalAgentClaim: agents named by a claim of their own
// (auth.jwt.agent_claim: preferred_username) are named by it in an
// admin JWT too, when the store is told the claim.
func TestSelfApprovalAgentClaim(t *testing.T) {
	for _, tc := range []struct {
		claims []string
		want   int
	}{{nil, http.StatusOK}, {[]string{"preferred_username"}, http.StatusForbidden}} {
		s := NewStore(Options{AgentClaims: tc.claims})
		d := intercept.Decide(context.Background(), &Gate{Next: holdPay, Store: s}, call(`{"amount":3}`))
		r, _ := s.Get(d.ApprovalID)
		p := &intercept.Principal{ID: "uuid-1", Method: "jwt", Claims: map[string]any{"sub": "uuid-1", "preferred_username": r.Agent}}
		h := s.Handler("")
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.ServeHTTP(w, r.WithContext(intercept.WithPrincipal(r.Context(), p)))
		}))
		resp, err := http.Post(srv.URL+"/admin/approvals/"+d.ApprovalID, "application/json", strings.NewReader(`{"action":"approve"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		srv.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("AgentClaims %v: got %d, want %d", tc.claims, resp.StatusCode, tc.want)
		}
	}
}
