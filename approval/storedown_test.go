package approval

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/internal/redistest"
)

// TestAdminStoreDown: with the approvals kept in Redis and Redis down,
// the admin API said nothing of it. A decision it could not record was
// answered 200 with an empty request (`sluice approvals approve` printed
// a blank line as if done), a request it could not read 404 (as if there
// were none), and the list was this replica's last known state, shown as
// the list though another replica may have decided or held calls since.
// Each is 503 now, naming the store; the list's body keeps the last known
// state under last_known. Once Redis is back, all three answer again.
func TestAdminStoreDown(t *testing.T) {
	srv := redistest.Start(t)
	s, d := heldOnRedis(t, srv)
	api := httptest.NewServer(s.Handler(""))
	t.Cleanup(api.Close)
	do := func(method, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, api.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	decide := `{"action":"approve","by":"alice"}`

	srv.Stop()
	if code, body := do("GET", "/admin/approvals", ""); code != http.StatusServiceUnavailable || !strings.Contains(body, "unavailable") || !strings.Contains(body, d.ApprovalID) {
		t.Errorf("list with the store down: got %d %s, want 503 naming the store, the last known state under last_known", code, body)
	}
	if code, body := do("GET", "/admin/approvals/"+d.ApprovalID, ""); code != http.StatusServiceUnavailable {
		t.Errorf("get with the store down: got %d %s, want 503", code, body)
	}
	time.Sleep(backendRetry) // past the quick refusals: the store is asked again
	if code, body := do("POST", "/admin/approvals/"+d.ApprovalID, decide); code != http.StatusServiceUnavailable || !strings.Contains(body, "unavailable") {
		t.Errorf("decide with the store down: got %d %s, want 503 naming the store", code, body)
	}

	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	// Redis restarted without persistence holds nothing: the replica
	// writes what it knows back at its next change. The API answers again.
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body := do("GET", "/admin/approvals", "")
		if code == http.StatusOK {
			var reqs []Request
			if err := json.Unmarshal([]byte(body), &reqs); err != nil {
				t.Fatalf("list after the restart: %v in %s", err, body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("list 10s after Redis came back: %d %s", code, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// commitFailsOnce is a backend whose next commit fails once fail is set:
// a store that answers one operation and not the next (a Redis lease
// lost, a write that timed out).
type commitFailsOnce struct {
	backend
	fail atomic.Bool
}

func (b *commitFailsOnce) begin() (backendTx, error) {
	tx, err := b.backend.begin()
	if err != nil {
		return nil, err
	}
	return &failingTx{backendTx: tx, b: b}, nil
}

type failingTx struct {
	backendTx
	b *commitFailsOnce
}

func (tx *failingTx) commit() (string, error) {
	if tx.b.fail.CompareAndSwap(true, false) {
		tx.backendTx.rollback()
		return "", errors.New("the store did not answer")
	}
	return tx.backendTx.commit()
}

// TestAttackSelfApprovalStoreBlip: an admin JWT that names the held
// call's agent in another claim than its subject is refused whether or
// not the store answered the lookup the refusal needs. Before, a lookup
// that failed (the store did not answer it) skipped the check, and the
// decision that followed, the store answering again, approved the agent's
// own call: 200.
func TestAttackSelfApprovalStoreBlip(t *testing.T) {
	s, err := OpenStore(filepath.Join(t.TempDir(), "approvals.db"), Options{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	be := &commitFailsOnce{backend: s.be}
	s.be = be
	d := intercept.Decide(context.Background(), &Gate{Next: holdPay, Store: s}, call(`{"amount":3}`))
	if d.ApprovalID == "" {
		t.Fatalf("call not held: %+v", d)
	}
	p := &intercept.Principal{ID: "service-account-x", Method: "jwt", Claims: map[string]any{"sub": "service-account-x", "azp": "a1"}}
	h := s.Handler("")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(intercept.WithPrincipal(r.Context(), p)))
	}))
	t.Cleanup(srv.Close)
	be.fail.Store(true)
	resp, err := http.Post(srv.URL+"/admin/approvals/"+d.ApprovalID, "application/json", strings.NewReader(`{"action":"approve"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable && resp.StatusCode != http.StatusForbidden {
		t.Errorf("the agent's own approval, the store's lookup failing: got %d, want 503 or 403", resp.StatusCode)
	}
	if r, err := s.Get(d.ApprovalID); err != nil || r.Status != Pending {
		t.Errorf("after it: got %s (%v), want pending", r.Status, err)
	}
}

// heldOnRedis opens a store on srv whose commands give up after 200ms,
// and holds a call in it.
func heldOnRedis(t *testing.T, srv *redistest.Server) (*Store, intercept.Decision) {
	t.Helper()
	opt, err := redis.ParseURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	opt.MaxRetries, opt.DialTimeout, opt.ReadTimeout, opt.ContextTimeoutEnabled = -1, 200*time.Millisecond, 200*time.Millisecond, true
	s, err := OpenRedisStore(context.Background(), redis.NewClient(opt), "test:", Options{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	d := intercept.Decide(context.Background(), &Gate{Next: holdPay, Store: s}, call(`{"amount":5}`))
	if d.ApprovalID == "" {
		t.Fatalf("call not held: %+v", d)
	}
	return s, d
}
