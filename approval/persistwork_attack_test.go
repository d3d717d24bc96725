package approval

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// countingBackend counts the times a transaction reads every request.
type countingBackend struct {
	backend
	reads *int
}

func (b countingBackend) begin() (backendTx, error) {
	tx, err := b.backend.begin()
	if err != nil {
		return nil, err
	}
	return countingTx{tx, b.reads}, nil
}

type countingTx struct {
	backendTx
	reads *int
}

func (t countingTx) rows() ([]row, error) {
	*t.reads++
	return t.backendTx.rows()
}

// TestAttackPersistedStoreWorkPerOperation: every operation of the
// approvals store in data_dir (the default for sluice serve) read and
// decoded every request in the file, and encoded every one again to see
// what changed: with the held calls an agent may keep (256 MiB of
// arguments), each retry of its own held call, and each waiting call's
// poll four times a second, cost the gateway a decode and an encode of
// all of them. An operation now reads the file only when another process
// wrote it since, and encodes only the requests it changed; what another
// process writes is still seen at once.
func TestAttackPersistedStoreWorkPerOperation(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "approvals.db")
	a, err := OpenStore(path, Options{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	reads := 0
	a.be = countingBackend{a.be, &reads}
	encoded := 0
	defer func(f func(*Request) ([]byte, error)) { marshalRequest = f }(marshalRequest)
	orig := marshalRequest
	marshalRequest = func(r *Request) ([]byte, error) { encoded++; return orig(r) }

	g := &Gate{Next: holdPay, Store: a}
	ids := holdFifty(t, g)
	reads, encoded = 0, 0
	for range 20 {
		if d := intercept.Decide(ctx, g, pay(7)); d.Verdict != intercept.RequireApproval || d.ApprovalID != ids[7] {
			t.Fatalf("retry of a held call: %s %s %s, want it still held as %s", d.Verdict, d.Reason, d.ApprovalID, ids[7])
		}
	}
	if reads != 0 || encoded != 0 {
		t.Errorf("20 retries of a held call with nothing else changed: read every request %d times, encoded %d requests; want neither", reads, encoded)
	}

	// Another process approves one: the next retry sees it, and the call
	// goes through once.
	b, err := OpenStore(path, Options{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.Decide(ids[7], true, "ops"); err != nil {
		t.Fatal(err)
	}
	d := intercept.Decide(ctx, g, pay(7))
	if d.Verdict != intercept.Allow {
		t.Fatalf("after another process approved it: %s %s, want allow", d.Verdict, d.Reason)
	}
	if err := g.Forwarded(ctx, pay(7), d); err != nil {
		t.Fatal(err)
	}
	// The approval used here is used for the other process too.
	gb := &Gate{Next: holdPay, Store: b}
	if d := intercept.Decide(ctx, gb, pay(7)); d.Verdict == intercept.Allow {
		t.Errorf("the same call through the other process after the approval was used: %s %s, want it held again", d.Verdict, d.Reason)
	}
	// And a decline there is seen here.
	if _, err := b.Decide(ids[8], false, "ops"); err != nil {
		t.Fatal(err)
	}
	if d := intercept.Decide(ctx, g, pay(8)); d.Verdict != intercept.Deny || d.Reason != ReasonDeclined {
		t.Errorf("after another process declined it: %s %s, want deny %s", d.Verdict, d.Reason, ReasonDeclined)
	}
}

// pay is agent-a's call of pay for amount i, with a 1 KB memo.
func pay(i int) *intercept.ActionDescriptor {
	return &intercept.ActionDescriptor{TxnID: intercept.NewTxnID(), ToolName: "pay", Upstream: "bank", Agent: "agent-a",
		Parameters: jsontext.Value(fmt.Sprintf(`{"amount":%d,"memo":"%s"}`, i, strings.Repeat("x", 1000)))}
}

// holdFifty holds pay(0) to pay(49) through g, and returns their ids.
func holdFifty(t *testing.T, g *Gate) []string {
	t.Helper()
	var ids []string
	for i := range 50 {
		d := intercept.Decide(context.Background(), g, pay(i))
		if d.Verdict != intercept.RequireApproval {
			t.Fatalf("call %d: %s %s, want it held", i, d.Verdict, d.Reason)
		}
		ids = append(ids, d.ApprovalID)
	}
	return ids
}

// TestSameRequestEveryField: sameRequest tells a request from one that
// differs in any field, so that no change is left unwritten.
func TestSameRequestEveryField(t *testing.T) {
	base := Request{ID: "a", Arguments: jsontext.Value(`{}`), Extra: jsontext.Value(`{}`), Asked: []string{"x"}, Created: time.Unix(1, 0), Expires: time.Unix(2, 0)}
	if c := copyRequest(&base); !sameRequest(&base, &c) {
		t.Fatal("a copy is not the same request")
	}
	v := reflect.ValueOf(&base).Elem()
	for i := range v.NumField() {
		c := copyRequest(&base)
		f := reflect.ValueOf(&c).Elem().Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString(f.String() + "!")
		case reflect.Slice:
			if f.Type() == reflect.TypeOf(jsontext.Value(nil)) {
				f.Set(reflect.ValueOf(jsontext.Value(`{}`))) // the same bytes elsewhere in memory
			} else {
				f.Set(reflect.ValueOf([]string{"y"}))
			}
		case reflect.Struct: // time.Time
			f.Set(reflect.ValueOf(time.Unix(3, 0)))
		default:
			t.Fatalf("field %s of kind %s: teach this test to change it", v.Type().Field(i).Name, f.Kind())
		}
		if sameRequest(&base, &c) {
			t.Errorf("a request with another %s is the same to sameRequest", v.Type().Field(i).Name)
		}
	}
}
