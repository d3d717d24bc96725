package approval

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
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
	// The approved call is allowed once.
	if d5 := intercept.Decide(ctx, g, call(`{"amount":5000,"to":"x"}`)); d5.Verdict != intercept.Allow || d5.Reason != ReasonGranted {
		t.Fatalf("approved call: got %s/%s, want allow/%s", d5.Verdict, d5.Reason, ReasonGranted)
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
