package policy

import (
	"context"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// TestVisibleRead: Visible of a read (a virtual server's resource
// subscriptions are screened with it: intercept.Interceptor.Readable) is
// false only when Decide denies every such read. Reads no rule decides
// follow default_read, not default: with default deny and default_read
// allow, a read was reported never allowed, and a subscription to a
// resource the client reads freely was left out. And the look-alike
// check, which Decide makes of tools only, hid the read of "echo" where
// a tool "rеsource:echo" (a Cyrillic е) is configured.
func TestVisibleRead(t *testing.T) {
	ctx := context.Background()
	read := func(uri string) *intercept.ActionDescriptor {
		return &intercept.ActionDescriptor{Method: "resources/read", ToolName: intercept.ResourcePrefix + uri, Upstream: "docs", Agent: "a", Parameters: jsontext.Value("{}")}
	}
	for _, tc := range []struct {
		name, policy, uri string
		visible           bool
	}{
		{"default deny, default_read allow", "default: deny\ndefault_read: allow\n", "docs://readme", true},
		{"default allow, default_read deny", "default: allow\ndefault_read: deny\n", "docs://readme", false},
		{"default_read deny, allowed by a rule", "default: allow\ndefault_read: deny\nallow: [\"resource:docs://readme\"]\n", "docs://readme", true},
		{"denied by a rule", "default: deny\ndefault_read: allow\ndeny: [\"resource:docs://payroll\"]\n", "docs://payroll", false},
		{"a tool's look-alike", "default: deny\ndefault_read: allow\nallow: [\"rеsource:echo\"]\n", "echo", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mustCompile(t, tc.policy)
			d := read(tc.uri)
			if got := p.Visible(ctx, d); got != tc.visible {
				t.Errorf("Visible(read of %s) = %v, want %v", tc.uri, got, tc.visible)
			}
			if dec := intercept.Decide(ctx, p, read(tc.uri)); (dec.Verdict != intercept.Deny) != tc.visible {
				t.Errorf("Decide(read of %s) = %s (%s), which Visible %v contradicts", tc.uri, dec.Verdict, dec.Reason, tc.visible)
			}
		})
	}
}
