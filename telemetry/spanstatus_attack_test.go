package telemetry

import (
	"context"
	"strings"
	"testing"
)

// TestAttackSpanStatusBounded: a failed span's status description is the
// error's message, which for an upstream's JSON-RPC error is the
// upstream's text, of any size. It was kept whole: a span per call held
// megabytes while the span queues (thousands of spans, more while a
// collector is slow) waited to export them. It is bounded as every other
// recorded text is, and still scrubbed.
func TestAttackSpanStatusBounded(t *testing.T) {
	tr, exp := newRecorded(t)
	msg := "upstream failed: Bearer abcdefghijklmnop " + strings.Repeat("x", 1<<20)
	_, s := tr.Start(context.Background(), "tools/call echo")
	s.End(&CallError{Type: "-32603", Message: msg})
	spans := exp.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("spans: got %d, want 1", len(spans))
	}
	d := spans[0].Status.Description
	if len(d) > MaxRecordedText {
		t.Errorf("status description: %d bytes, want at most %d", len(d), MaxRecordedText)
	}
	if !strings.HasPrefix(d, "upstream failed: Bearer "+Redacted) {
		t.Errorf("status description starts %q, want the scrubbed message", d[:min(len(d), 64)])
	}
}

// TestAttackSpanNameMethodBounded: the span name begins with the
// JSON-RPC method, the client's text of any length (an unknown method is
// refused after the call's span starts), and was not bounded as the
// method's attribute and the tool in the name are.
func TestAttackSpanNameMethodBounded(t *testing.T) {
	long := strings.Repeat("m", 1<<20)
	for _, c := range []Call{{Method: long}, {Method: long, Tool: "echo"}, {Method: long, Prompt: "p"}} {
		if n := len(c.SpanName()); n > 2*MaxRecordedName+1 {
			t.Errorf("span name of a %d-byte method: %d bytes, want at most %d", len(long), n, 2*MaxRecordedName+1)
		}
	}
	if got := (Call{Method: "tools/call", Tool: "echo"}).SpanName(); got != "tools/call echo" {
		t.Errorf("span name: got %q, want %q", got, "tools/call echo")
	}
}
