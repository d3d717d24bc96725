package gateway

import (
	"testing"

	"github.com/sluicehq/sluice/intercept"
)

// TestCancelAllSkipsMarks: a session's DELETE cancels the calls it holds
// (cancelAll); a cancellation it remembered for a call not yet held (a
// mark: no call, no channel) is no call to cancel, and closing its
// missing channel panicked the gateway.
func TestCancelAllSkipsMarks(t *testing.T) {
	var hc heldCalls
	m, err := intercept.DecodeMessage([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`))
	if err != nil {
		t.Fatal(err)
	}
	hc.markCancelled(m)
	h := hc.hold(intercept.IDKeyOf([]byte("8")), "apr_1")
	if hc.any() != true {
		t.Fatal("a held call: any() false")
	}
	hc.cancelAll(nil, "alice")
	select {
	case <-h.cancelled:
	default:
		t.Error("the held call was not cancelled")
	}
	if hc.any() {
		t.Error("after cancelAll: any() true")
	}
	hc.markCancelled(m)
	if hc.any() {
		t.Error("a mark alone counts as a held call (its session would never be idle)")
	}
}
