package intercept

import (
	"context"
	"strconv"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// TestAttackCursorFloodForgetsOthers (attacker review): the list cursors
// an upstream gave each client were one LRU of 100,000 for every client.
// One principal listing again and again (an upstream whose cursors are
// fresh tokens, or the same list under many names) pushed every other
// principal's cursors out: their next page was then decided as a carry,
// denied once a route rule closes the upstream. One principal (or agent)
// now holds a tenth of the table, its own oldest forgotten.
func TestAttackCursorFloodForgetsOthers(t *testing.T) {
	ctx := context.Background()
	i := &Interceptor{}
	alice := CallContext{Upstream: "web", Principal: &Principal{ID: "alice"}}
	i.ObserveCursor(ctx, alice, "resources/list", jsontext.Value(`{"resources":[],"nextCursor":"alice-page-2"}`))
	msgs, _, err := Decode([]byte(`{"jsonrpc":"2.0","id":1,"method":"resources/list","params":{"cursor":"alice-page-2"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if !i.IsPlain(ctx, msgs[0], alice) {
		t.Fatal("alice's page with the cursor she was given is not plain")
	}
	mallory := CallContext{Upstream: "web", Principal: &Principal{ID: "mallory"}}
	for n := range maxCursors + 10 {
		i.ObserveCursor(ctx, mallory, "resources/list", jsontext.Value(`{"resources":[],"nextCursor":"m`+strconv.Itoa(n)+`"}`))
	}
	if !i.IsPlain(ctx, msgs[0], alice) {
		t.Error("one principal's cursors pushed out the cursor another was given")
	}
	last, _, _ := Decode([]byte(`{"jsonrpc":"2.0","id":2,"method":"resources/list","params":{"cursor":"m` + strconv.Itoa(maxCursors+9) + `"}}`))
	if !i.IsPlain(ctx, last[0], mallory) {
		t.Error("the flooding principal's latest cursor was forgotten")
	}
}
