package gateway

import (
	"testing"

	"github.com/sluicehq/sluice/intercept"
)

// TestEscapedMemberNames: the quick looks for a member name ("task" in a
// client's params, "id" and "error" in an upstream's answer) take the
// name spelled with an escape, as Decode, the upstream and the client
// read it. Before, "t\u0061sk" made a task-augmented call that held no
// early status of its task (the client's own status was withheld as
// another's); an answer under "\u0069d" was not counted as answered (its
// held task messages waited for the stream's end, a broken stream had
// the gateway answer it a second time, and a resumed stream was taken to
// answer it again); an error under "\u0065rror" was not the call's
// error in its span and metrics.
func TestEscapedMemberNames(t *testing.T) {
	call, err := intercept.DecodeMessage([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","t\u0061sk":{}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if !createsTask(call) {
		t.Error(`createsTask("t\u0061sk"): got false, want true`)
	}

	answer := []byte(`{"jsonrpc":"2.0","\u0069d":1,"result":{}}`)
	o := &observer{creating: map[string]bool{"1": true}}
	if n := o.answeredTasks(answer); n != 1 {
		t.Errorf(`answeredTasks("\u0069d"): got %d, want 1`, n)
	}

	o = &observer{stream: true, pending: map[string]string{"1": "ping", "2": "ping"}}
	o.message(answer)
	if !o.answered["1"] {
		t.Error(`message("\u0069d"): got request 1 unanswered, want it answered`)
	}
	o = &observer{pending: map[string]string{"2": "ping"}} // a JSON answer
	o.message([]byte(`{"jsonrpc":"2.0","id":2,"\u0065rror":{"code":-32000,"message":"no"}}`))
	if o.failed == nil {
		t.Error(`message("\u0065rror"): got no error kept, want the upstream's`)
	}
}
