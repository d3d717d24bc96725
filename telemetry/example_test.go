package telemetry_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"

	"github.com/sluicehq/sluice/telemetry"
)

func ExampleRedactor_Arguments() {
	raw := []byte(`{"repo":"acme/api","auth":{"token":"ghp_x","user":"bot"}}`)

	hashed := telemetry.Redactor{}.Arguments(raw)
	fmt.Println(len(hashed.SHA256), hashed.Value)

	kept := telemetry.Redactor{KeepArguments: true}.Arguments(raw)
	out, _ := json.Marshal(kept.Value)
	fmt.Println(string(out))
	// Output:
	// 64 <nil>
	// {"auth":"[REDACTED]","repo":"acme/api"}
}

func ExampleScrub() {
	fmt.Println(telemetry.Scrub("upstream 401: Authorization: Bearer eyJhbGciOi.eyJzdWIiOi.c2lnbmF0dXJl"))
	fmt.Println(telemetry.Scrub("retrying with key AKIAIOSFODNN7EXAMPLE"))
	// Output:
	// upstream 401: Authorization: [REDACTED] [REDACTED]
	// retrying with key [REDACTED]
}

func ExampleScrubHandler() {
	h := slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{} // keep the example's output stable
			}
			return a
		},
	})
	log := slog.New(telemetry.ScrubHandler(h))
	log.Info("calling upstream", "url", "https://bot:hunter2@api.example/v1", "api_key", "k-123")
	// Output:
	// level=INFO msg="calling upstream" url=https://bot:[REDACTED]@api.example/v1 api_key=[REDACTED]
}

func ExampleInjectMeta() {
	// A client's trace context, taken from the request's params._meta...
	in := map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
	ctx := telemetry.ExtractMeta(context.Background(), in)

	// ...becomes the parent of the gateway's span, and with no tracer
	// configured passes on to the upstream unchanged.
	ctx, span := telemetry.StartCall(ctx, telemetry.Nop(), telemetry.Call{Method: "tools/call", Tool: "search"})
	defer span.End(nil)
	out := telemetry.InjectMeta(ctx, nil)
	fmt.Println(out["traceparent"])
	// Output:
	// 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01
}

func ExampleCall_SpanName() {
	fmt.Println(telemetry.Call{Method: "tools/call", Tool: "get-weather"}.SpanName())
	fmt.Println(telemetry.Call{Method: "initialize"}.SpanName())
	// Output:
	// tools/call get-weather
	// initialize
}

func ExamplePolicyEnforcement_Event() {
	args := telemetry.Redactor{}.Arguments([]byte(`{"q":"weather"}`))
	e := telemetry.PolicyEnforcement{
		TxnID: "9f0c", Agent: "claude-code", Tool: "search", Decision: "allow", Reason: "tool_allowed",
		RuleID: "static.allow", Arguments: args,
	}.Event()
	fmt.Println(e.Type, e.Decision, e.Reason, e.Attrs["rule_id"], len(e.Attrs["arguments_sha256"].(string)))
	// Output:
	// sluice.policy_enforced allow tool_allowed static.allow 64
}
