package audit

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/telemetry"
)

// BenchmarkEncodeCall encodes the two events of an allowed tools/call as
// the gateway records them (its intent classification and its policy
// decision, through AppendRecord): the audit store's work on the
// caller's goroutine.
func BenchmarkEncodeCall(b *testing.B) {
	ic := &telemetry.IntentClassification{
		TxnID: "0c5f9e0b8d3a4f1e9a7b6c5d4e3f2a1b", Agent: "claude-code", Session: "018f4e1d-7e5d", Upstream: "bench", Tool: "echo",
		ClassifierID: "sluice-builtin", CapabilityClassVerdict: "bench.read", CapabilityClassConfidence: 0.63,
		ConsistentWithDeclaration: true, CompositeConfidence: 0.5900000000000001, ActiveProfile: "default", Provider: "builtin",
		ClassifiedAt: 1764230000, Latency: 4 * time.Microsecond, RiskLevel: "LOW",
		Axes: map[string]telemetry.AxisClassification{
			"action_type": {Classified: "read", Confidence: 0.7, Source: "tool_name"},
			"boundary":    {Classified: "external", Confidence: 0.3, Source: "none", ConservativeDefaultApplied: true},
		},
	}
	pe := &telemetry.PolicyEnforcement{
		TxnID: "0c5f9e0b8d3a4f1e9a7b6c5d4e3f2a1b", Agent: "claude-code", Session: "018f4e1d-7e5d", Upstream: "bench",
		Tool: "echo", CallID: "42", Decision: "allow", Reason: "policy_allow", PolicyVersion: "sha256:4f1e9a7b",
		RuleID: "allow-all", Latency: 35 * time.Microsecond, TargetEndpoint: "http://127.0.0.1:8080/mcp", ProtocolVersion: "2025-06-18",
		Evidence:  telemetry.Evidence{MatchedToolName: "echo", ReasonCode: "policy_allow"},
		Arguments: telemetry.Arguments{SHA256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"},
	}
	now := time.Now
	b.ReportAllocs()
	for b.Loop() {
		ic.Time, pe.Time = time.Now(), time.Now()
		for _, r := range []telemetry.Record{ic, pe} {
			p, err := encode(r.Header(), r, now)
			if err != nil {
				b.Fatal(err)
			}
			p.release()
		}
	}
}
