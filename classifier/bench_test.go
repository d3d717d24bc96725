package classifier

import (
	"context"
	"runtime"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// benchDescriptor is a typical call: a real tool definition with
// annotations and a description, arguments with a URL and a path.
var benchDescriptor = &intercept.ActionDescriptor{
	TxnID:           "0123456789abcdef0123456789abcdef",
	ToolName:        "gzip-file-as-resource",
	ToolDescription: "Compresses a single file using gzip compression. Depending upon the selected output type, returns either the compressed data as a gzipped resource or a resource link, allowing it to be downloaded in a subsequent request during the current session.",
	Parameters:      jsontext.Value(`{"name":"README.md.gz","data":"https://raw.githubusercontent.com/modelcontextprotocol/servers/refs/heads/main/README.md","outputType":"resourceLink"}`),
	TargetEndpoint:  "stdio:npx -y @modelcontextprotocol/server-everything",
	SessionID:       "018f4e1d-7e5d",
	Upstream:        "everything",
	Annotations:     jsontext.Value(`{"readOnlyHint":false,"destructiveHint":false,"idempotentHint":true,"openWorldHint":true}`),
}

// cpuLoop runs f b.N times and reports thread CPU time per op as well.
func cpuLoop(b *testing.B, f func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	start, ok := threadCPU()
	n := 0
	for b.Loop() {
		f()
		n++
	}
	if end, ok2 := threadCPU(); ok && ok2 && n > 0 {
		b.ReportMetric(float64(end-start)/float64(n), "cpu-ns/op")
	}
}

func benchmarkBuiltin(b *testing.B, opts Options) {
	c := mustBuiltin(b, opts)
	ctx := context.Background()
	cpuLoop(b, func() {
		if _, err := c.Classify(ctx, benchDescriptor); err != nil {
			b.Fatal(err)
		}
	})
}

// echoDescriptor is sluice bench's call: the demo server's echo tool on a
// loopback URL.
var echoDescriptor = &intercept.ActionDescriptor{
	TxnID:           "0123456789abcdef0123456789abcdef",
	ToolName:        "echo",
	ToolDescription: `Echo a message back, prefixed with "Echo: ".`,
	Parameters:      jsontext.Value(`{"message":"hi"}`),
	TargetEndpoint:  "http://127.0.0.1:40000/mcp",
	SessionID:       "018f4e1d-7e5d",
	Upstream:        "bench",
	Annotations:     jsontext.Value(`{"title":"Echo","readOnlyHint":true,"destructiveHint":false,"idempotentHint":true,"openWorldHint":true}`),
}

// BenchmarkBuiltinEcho classifies sluice bench's call.
func BenchmarkBuiltinEcho(b *testing.B) {
	c := mustBuiltin(b, Options{})
	ctx := context.Background()
	cpuLoop(b, func() {
		if _, err := c.Classify(ctx, echoDescriptor); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkBuiltin: the budget is 5 µs per call.
func BenchmarkBuiltin(b *testing.B) { benchmarkBuiltin(b, Options{}) }

func BenchmarkBuiltinExtended(b *testing.B) {
	benchmarkBuiltin(b, Options{Profile: ProfileExtended, Sensitivity: []SensitivityRule{{Match: "/srv/hr/**", Tier: Regulated}}})
}

func BenchmarkBuiltinParallel(b *testing.B) {
	c := mustBuiltin(b, Options{})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_, _ = c.Classify(context.Background(), benchDescriptor)
		}
	})
}

func BenchmarkDetectInjection(b *testing.B) {
	args := jsontext.Value(`{"to":"bob@example.com","subject":"Q3 report","body":"Hi team, please find attached the quarterly report. Let me know if you have any questions before Friday's review."}`)
	cpuLoop(b, func() { DetectInjection(args) })
}

func BenchmarkNewIntentRecord(b *testing.B) {
	c := mustBuiltin(b, Options{})
	v, _ := c.Classify(context.Background(), benchDescriptor)
	cpuLoop(b, func() { NewIntentRecord(benchDescriptor, v, IntentOptions{}) })
}

// BenchmarkNewIntentRecordRiskOnly is the gateway's use: injection found
// apart, only the risk built.
func BenchmarkNewIntentRecordRiskOnly(b *testing.B) {
	c := mustBuiltin(b, Options{})
	v, _ := c.Classify(context.Background(), benchDescriptor)
	for _, riskOnly := range []bool{false, true} {
		name := "full"
		if riskOnly {
			name = "risk-only"
		}
		b.Run(name, func(b *testing.B) {
			cpuLoop(b, func() { NewIntentRecord(benchDescriptor, v, IntentOptions{SkipInjection: true, RiskOnly: riskOnly}) })
		})
	}
}

// BenchmarkLifecycleClassify classifies sluice bench's call through the
// session lifecycle, as the gateway does: the session provisioned and its
// inventory known after the first call.
func BenchmarkLifecycleClassify(b *testing.B) {
	l := &Lifecycle{}
	c := l.Wrap(mustBuiltin(b, Options{}))
	ctx := context.Background()
	d := *echoDescriptor
	d.ToolInventoryHash = "sha256:0123"
	cpuLoop(b, func() {
		if _, err := c.Classify(ctx, &d); err != nil {
			b.Fatal(err)
		}
	})
}
