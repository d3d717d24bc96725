package console

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/telemetry"
)

// BenchmarkPages measures the console's pages over an audit store of
// SLUICE_BENCH_EVENTS events (default 1,000,000; two events per call).
// Building the store takes a while the first time; set
// SLUICE_BENCH_DB=path to keep it between runs.
//
//	go test -run XXX -bench Pages -benchtime 20x ./console
func BenchmarkPages(b *testing.B) {
	n := 1_000_000
	if s := os.Getenv("SLUICE_BENCH_EVENTS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	path := os.Getenv("SLUICE_BENCH_DB")
	if path == "" {
		path = filepath.Join(b.TempDir(), "events.db")
	}
	ctx := context.Background()
	st, err := audit.Open(path, audit.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	have, _ := st.LastSeq(ctx)
	start := time.Now().Add(-24 * time.Hour)
	var txn string
	for i := int(have); i < n; i += 2 {
		at := start.Add(time.Duration(i) * time.Millisecond)
		txn = fmt.Sprintf("%032x", i)
		agent, tool := fmt.Sprintf("agent-%d", i%50), fmt.Sprintf("tool_%d", i%200)
		dec := "allow"
		if i%7 == 0 {
			dec = "deny"
		}
		_ = st.Append(ctx, telemetry.PolicyEnforcement{Time: at, TxnID: txn, Agent: agent, Upstream: "up", Tool: tool, Decision: dec, Reason: "rule",
			Evidence: telemetry.Evidence{MatchedToolClasses: []string{"source:local"}}}.Event())
		_ = st.Append(ctx, telemetry.IntentClassification{Time: at, TxnID: txn, Agent: agent, Upstream: "up", Tool: tool,
			Axes: map[string]telemetry.AxisClassification{"action_type": {Classified: "Read", Confidence: 0.9}}}.Event())
	}
	if err := st.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	if txn == "" {
		last, _ := st.Latest(ctx, audit.Filter{Type: telemetry.TypePolicyEnforced, Limit: 1})
		txn = last[0].TxnID
	}
	c, err := New(Deps{Events: st, SignIn: func(context.Context, string) (Credential, bool) { return Credential{}, true }})
	if err != nil {
		b.Fatal(err)
	}
	h := c.Handler()
	// Sign in once.
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/console/login", nil)
	req.PostForm = url.Values{"name": {"bench"}, "token": {"x"}}
	h.ServeHTTP(rec, req)
	cookie := rec.Result().Cookies()[0]
	base := strings.TrimSuffix(rec.Result().Header.Get("Location"), "/feed")
	for _, page := range []string{"/console/feed", "/console/feed?decision=deny", "/console/feed?agent=agent-7&tool=tool_7",
		"/console/feed?reason=rule", "/console/calls/" + txn, "/console/agents", "/console/policy"} {
		b.Run(page, func(b *testing.B) {
			for b.Loop() {
				rec := httptest.NewRecorder()
				req := httptest.NewRequest(http.MethodGet, base+strings.TrimPrefix(page, "/console"), nil)
				req.AddCookie(cookie)
				h.ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatalf("%s: %d %s", page, rec.Code, rec.Body.String())
				}
			}
		})
	}
}
