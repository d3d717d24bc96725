package policy

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// A condition's constant pattern past 1 KiB (a DLP rule's list of
// secret names, 2.5 KiB) had its RE2 program worked out anew at every
// call, to charge it: 180 µs of parsing and compiling a call for each
// such pattern, which the cache of program sizes left out as it leaves
// out the arguments' long patterns. A constant is the policy's, and its
// size is known once, when the policy loads.
func TestRegexConstantSizeKnownOnce(t *testing.T) {
	var alts []string
	for i := range 150 {
		alts = append(alts, fmt.Sprintf("secret_token_%03d", i))
	}
	pattern := "(?i)(" + strings.Join(alts, "|") + ")"
	if len(pattern) <= maxCachedPattern {
		t.Fatalf("pattern of %d bytes: want one past %d", len(pattern), maxCachedPattern)
	}
	p := atkCompile(t, "default: allow\nrules:\n  - {id: r, match: {match_tool: post}, when: 'args.body.matches(\""+pattern+"\")', decision: deny}\n")
	if _, ok := programSizes.Load(pattern); !ok {
		t.Error("the policy's constant pattern has no program size once loaded: it is worked out at every call")
	}
	d := call("post")
	d.Parameters = jsontext.Value(`{"body":"a SECRET_TOKEN_149 here"}`)
	if got, _ := p.Decide(context.Background(), d); got.Verdict != intercept.Deny {
		t.Errorf("got %s/%s, want deny", got.Verdict, got.Reason)
	}
}
