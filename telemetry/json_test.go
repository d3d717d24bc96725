package telemetry

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// decodeAny decodes JSON into generic values, numbers as json.Number.
func decodeAny(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("invalid JSON %q: %v", b, err)
	}
	return v
}

// TestAppendEventMatchesEncodingJSON checks that the store's encoder
// writes the document encoding/json writes for every kind of event and
// value, tricky strings included.
func TestAppendEventMatchesEncodingJSON(t *testing.T) {
	tricky := "quote\" back\\slash \n\r\t ctl\x01\x1f del\x7f <html>&amp; é 日本 \u2028 bad\xff\xfe utf8 \xe2\x82 end"
	var events []Event
	for _, r := range sampleRecords() {
		e := r.Header()
		if rr, ok := r.(interface{ Event() Event }); ok {
			e = rr.Event()
		}
		events = append(events, e)
	}
	events = append(events, []Event{
		{ID: tricky, Seq: 7, Type: "sluice.test", Time: t0.Add(123456789 * time.Nanosecond), TxnID: tricky, Agent: tricky,
			Session: "s", Upstream: "u", Tool: tricky, Decision: "allow", Reason: tricky,
			Attrs: map[string]any{
				tricky: tricky, "int": 42, "int64": int64(-1 << 62), "float": 0.1, "tiny": 1e-9, "huge": 1.5e300, "zero": 0.0,
				"neg": -2.5, "bool": true, "nil": nil, "strs": []string{"a", tricky}, "nostrs": []string(nil),
				"list": []any{1, "x", []any{}, map[string]any{}}, "num": json.Number("12345678901234567890"),
				"nested":         map[string]any{"a": map[string]any{"b": []string{}}},
				"evidence":       Evidence{MatchedToolClasses: []string{"source:sensitive"}, ReasonCode: "x"},
				"empty_evidence": Evidence{},
				"axes": map[string]AxisClassification{
					"boundary": {Classified: "external", Confidence: 1, ConservativeDefaultApplied: true},
					"scale":    {Classified: tricky, Confidence: 0.333333333333, Source: "rule"},
				},
				"struct": struct {
					A string `json:"a"`
				}{tricky},
				"raw": json.RawMessage(`{"x":[1,2]}`),
			}},
		{ID: "minimal", Type: "sluice.test", Time: time.Unix(0, 0).UTC()},
	}...)
	for i, e := range events {
		want, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		got, err := e.AppendJSON(nil)
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if diff := cmp.Diff(decodeAny(t, want), decodeAny(t, got)); diff != "" {
			t.Errorf("event %d: appendEvent differs from encoding/json (-want +got):\n%s\n%s", i, diff, got)
		}
	}
}

// sampleRecords are the typed events with a fast encoder, with every
// field set, with none, and with values that need escaping.
func sampleRecords() []Record {
	return []Record{
		PolicyEnforcement{
			Time: t0, TxnID: "txn-1", Agent: "alice", Session: "s1", Upstream: "github", Tool: "create_issue",
			CallID: "7", Decision: "deny", Reason: "tool_denied", PublicReason: "calling \"create_issue\" is not allowed\n",
			ResultMode: "tool_result", PolicyVersion: "v3", RuleID: "static.deny", ApprovalID: "ap-1", Latency: 41 * time.Microsecond,
			Evidence:          Evidence{MatchedToolName: "create_issue", MatchedToolClasses: []string{"sink:network", "x"}, MatchedRouteRuleID: "r", ReasonCode: "tool_denied"},
			ToolInventoryHash: "sha256:ab", TargetEndpoint: "https://api.github.com", CapabilityClassDeclared: "dev.issues",
			ActionTypeDeclared: "write", BoundaryDeclared: "external", ProtocolVersion: "2026-07-28", TraceID: "4bf92f3577b34da6a3ce929d0e0e4736",
			Arguments: Redactor{KeepArguments: true}.Arguments([]byte(`{"title":"x","n":12345678901234567890,"token":"ghp_secret","l":[1,null,true]}`)),
		},
		PolicyEnforcement{TxnID: "txn-2", Tool: "t", Decision: "allow", Reason: "tool_allowed"},
		PolicyEnforcement{},
		IntentClassification{
			Time: t0, TxnID: "txn-1", Agent: "alice", Session: "s1", Upstream: "github", Tool: "create_issue",
			ClassifierID: "urn:sluice:classifier:s1", CapabilityClassDeclared: "dev.issues", CapabilityClassVerdict: "dev.issues",
			CapabilityClassConfidence: 0.9, ConsistentWithDeclaration: true, CompositeConfidence: 0.87,
			Axes: map[string]AxisClassification{
				"action_type": {Classified: "Write", Confidence: 0.9, Source: "llm"},
				"boundary":    {Classified: "external", Confidence: 0.5, ConservativeDefaultApplied: true},
			},
			ActiveProfile: "default", Provider: "builtin", ClassifiedAt: t0.Unix(), Latency: 3 * time.Microsecond,
			Error:     "timeout calling https://user:secret@llm.example/v1",
			RiskLevel: "HIGH", RiskFactors: []string{"write_operation", "tool_poisoning:instruction_tag"},
		},
		IntentClassification{},
	}
}

// TestRecordJSON checks that the events of every call, encoded straight
// from their typed builders, are the documents their Event would give.
func TestRecordJSON(t *testing.T) {
	for i, r := range sampleRecords() {
		e := r.(interface{ Event() Event }).Event()
		want, err := e.AppendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		h := r.Header()
		got, err := AppendRecordJSON(nil, &h, r)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if diff := cmp.Diff(decodeAny(t, want), decodeAny(t, got)); diff != "" {
			t.Errorf("record %d: AppendRecordJSON differs from its Event (-want +got):\n%s\n%s", i, diff, got)
		}
	}
}

func TestAppendEventRejectsWhatJSONCannotHold(t *testing.T) {
	for _, v := range []any{float64Inf(), map[string]any{"f": float64Inf()}, make(chan int), json.Number("1\n"), json.Number("01"), json.Number("1e"), json.Number("-"), json.Number("0x1")} {
		e := Event{ID: "x", Type: "sluice.test", Attrs: map[string]any{"v": v}}
		if _, err := e.AppendJSON(nil); err == nil {
			t.Errorf("AppendJSON with %T: got nil error, want one", v)
		}
	}
	for _, n := range []string{"0", "-0", "12345678901234567890", "1.5e-300", "-2.5E+10", "0.0"} {
		e := Event{ID: "x", Type: "sluice.test", Attrs: map[string]any{"v": json.Number(n)}}
		if _, err := e.AppendJSON(nil); err != nil {
			t.Errorf("AppendJSON with the number %s: %v", n, err)
		}
	}
	far := Event{ID: "x", Type: "sluice.test", Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}
	if _, err := far.AppendJSON(nil); err == nil {
		t.Error("AppendJSON of an event in the year 10000: got nil error, want one (it could not be read back)")
	}
	r := IntentClassification{CompositeConfidence: float64Inf()}
	h := r.Header()
	if _, err := AppendRecordJSON(nil, &h, r); err == nil {
		t.Error("AppendRecordJSON with an infinite confidence: got nil error, want one")
	}
}

func float64Inf() float64 {
	var zero float64
	return 1 / zero
}

// BenchmarkAppendJSON encodes the two events of a call from their maps
// (Event) and from their typed builders (Record).
func BenchmarkAppendJSON(b *testing.B) {
	recs := sampleRecords()
	recs = []Record{recs[0], recs[3]}
	b.Run("Event", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			for _, r := range recs {
				e := r.(interface{ Event() Event }).Event()
				buf, _ = e.AppendJSON(buf[:0])
			}
		}
	})
	b.Run("Record", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			for _, r := range recs {
				h := r.Header()
				buf, _ = AppendRecordJSON(buf[:0], &h, r)
			}
		}
	})
}

// TestAppendRFC3339Nano: the events' own time formatter writes what
// time.Time.AppendFormat(RFC3339Nano) does, for UTC times of every year
// it handles (nanoseconds with and without trailing zeros, none, the
// edges of days and years) and for those it leaves to AppendFormat.
func TestAppendRFC3339Nano(t *testing.T) {
	times := []time.Time{
		time.Unix(0, 0).UTC(), t0, t0.Add(123456789), t0.Add(100 * time.Millisecond), t0.Add(1), t0.Add(999999999),
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(2024, 2, 29, 12, 7, 9, 10, time.UTC), time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 5, time.UTC),
		time.Date(2026, 11, 27, 8, 0, 0, 5000, time.FixedZone("x", 3600)), t0.Local(),
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		times = append(times, time.Unix(r.Int64N(253402300800), r.Int64N(1e9)*int64(r.IntN(2))).UTC())
	}
	for _, tm := range times {
		want := tm.AppendFormat(nil, time.RFC3339Nano)
		if got := appendRFC3339Nano(nil, tm); string(got) != string(want) {
			t.Errorf("%v: got %s, want %s", tm, got, want)
		}
	}
}
