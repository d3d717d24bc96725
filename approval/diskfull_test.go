package approval

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/internal/fulldisk"
)

// told records what Options.OnUnavailable was told.
type told struct {
	mu   sync.Mutex
	errs []error
}

func (w *told) add(err error) { w.mu.Lock(); w.errs = append(w.errs, err); w.mu.Unlock() }

// check fails t unless OnUnavailable was told of an error since the last
// check, each one wrapping ErrUnavailable.
func (w *told) check(t *testing.T, what string) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.errs) == 0 {
		t.Errorf("%s: OnUnavailable not told: nothing says why the store failed", what)
	}
	for _, err := range w.errs {
		if !errors.Is(err, ErrUnavailable) {
			t.Errorf("%s: OnUnavailable told %v, want an error wrapping ErrUnavailable", what, err)
		}
	}
	w.errs = nil
}

// TestAdminDiskFull: with the approvals kept in SQLite and the data
// directory's filesystem full, a decision the store cannot write is not
// reported done: the admin API answers 503 naming the store, the request
// stays pending, OnUnavailable is told (the gateway logs it; before, the
// log said nothing), and once space returns the same decision is taken.
func TestAdminDiskFull(t *testing.T) {
	disk, s, w := fullDiskStore(t)
	d := intercept.Decide(context.Background(), &Gate{Next: holdPay, Store: s}, call(`{"amount":5}`))
	if d.ApprovalID == "" {
		t.Fatalf("call not held: %+v", d)
	}
	api := httptest.NewServer(s.Handler(""))
	t.Cleanup(api.Close)
	decide := func() (int, string) {
		t.Helper()
		resp, err := http.Post(api.URL+"/admin/approvals/"+d.ApprovalID, "application/json", strings.NewReader(`{"action":"approve","by":"alice"}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	disk.Fill(t)
	code, body := decide()
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "unavailable") {
		t.Errorf("approve with the disk full: got %d %s, want 503 naming the store", code, body)
	}
	w.check(t, "approve with the disk full")
	disk.Free(t)
	time.Sleep(backendRetry) // past the quick refusals: the store is asked again
	if r, err := s.Get(d.ApprovalID); err != nil || r.Status != Pending {
		t.Fatalf("after the failed approve: got %+v %v, want the request still pending", r, err)
	}
	if code, body := decide(); code != http.StatusOK || !strings.Contains(body, `"approved"`) {
		t.Errorf("approve once space returned: got %d %s, want 200 approved", code, body)
	}
}

// TestHoldDiskFull: a call that needs approval while the approvals store
// cannot be written is denied (policy_error), not held in memory only (no
// operator elsewhere could see it) nor forwarded; OnUnavailable is told
// why, which the denial itself does not say.
func TestHoldDiskFull(t *testing.T) {
	disk, s, w := fullDiskStore(t)
	disk.Fill(t)
	d := intercept.Decide(context.Background(), &Gate{Next: holdPay, Store: s}, call(`{"amount":5}`))
	if d.Verdict != intercept.Deny || d.Reason != intercept.ReasonPolicyError || d.ApprovalID != "" {
		t.Errorf("call needing approval with the disk full: got %s %q (approval %q), want a policy_error denial", d.Verdict, d.Reason, d.ApprovalID)
	}
	w.check(t, "a call to hold with the disk full")
	disk.Free(t)
	time.Sleep(backendRetry)
	if d := intercept.Decide(context.Background(), &Gate{Next: holdPay, Store: s}, call(`{"amount":6}`)); d.ApprovalID == "" {
		t.Errorf("call needing approval once space returned: got %+v, want it held", d)
	}
}

// fullDiskStore is a store in a directory whose filesystem the test can
// fill (fulldisk), and what its OnUnavailable was told.
func fullDiskStore(t *testing.T) (*fulldisk.Disk, *Store, *told) {
	t.Helper()
	disk := fulldisk.New(t)
	w := new(told)
	s, err := OpenStore(filepath.Join(disk.Dir, FileName), Options{Timeout: time.Minute, OnUnavailable: w.add})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() }) // before the unmount
	return disk, s, w
}

// TestAvailableAgainDiskFull: OnAvailable is told once when the store
// takes a write again after OnUnavailable was told of a failure. A read
// with the disk full succeeds, and says nothing of whether a write
// would: it does not count.
func TestAvailableAgainDiskFull(t *testing.T) {
	disk := fulldisk.New(t)
	w := new(told)
	var mu sync.Mutex
	again := 0
	s, err := OpenStore(filepath.Join(disk.Dir, FileName), Options{Timeout: time.Minute, OnUnavailable: w.add, OnAvailable: func() {
		mu.Lock()
		again++
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() }) // before the unmount
	told := func() int {
		mu.Lock()
		defer mu.Unlock()
		return again
	}
	hold := func(amount string) intercept.Decision {
		return intercept.Decide(context.Background(), &Gate{Next: holdPay, Store: s}, call(`{"amount":`+amount+`}`))
	}

	if d := hold("1"); d.ApprovalID == "" {
		t.Fatalf("call not held: %+v", d)
	}
	if n := told(); n != 0 {
		t.Fatalf("OnAvailable told %d times before any failure, want 0", n)
	}
	disk.Fill(t)
	if d := hold("2"); d.ApprovalID != "" {
		t.Fatalf("call held with the disk full: %+v", d)
	}
	w.check(t, "a call to hold with the disk full")
	time.Sleep(backendRetry) // past the quick refusals: the store is asked again
	if _, err := s.Current(); err != nil {
		t.Fatalf("reading with the disk full: %v", err)
	}
	if n := told(); n != 0 {
		t.Errorf("OnAvailable told %d times after a read with the disk still full, want 0", n)
	}
	disk.Free(t)
	if d := hold("3"); d.ApprovalID == "" {
		t.Fatalf("call needing approval once space returned: got %+v, want it held", d)
	}
	if d := hold("4"); d.ApprovalID == "" {
		t.Fatalf("second call once space returned: got %+v, want it held", d)
	}
	if n := told(); n != 1 {
		t.Errorf("OnAvailable told %d times once the store took writes again, want 1", n)
	}
}
