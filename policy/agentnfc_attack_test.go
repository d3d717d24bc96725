package policy

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/intercept"
)

// A condition's agent was the name as the client sent it, while the
// manifest and route memory read it in NFC (TestAttackManifestAgentNFD,
// TestAttackRouteMemoryAgentNFD): an agent denied a tool by
// `agent == "josé"` sent its name decomposed, kept its manifest, and
// the deny rule no longer held; the tool was listed to it as well.
func TestAttackConditionAgentNFD(t *testing.T) {
	nfcName, nfd := "jos\u00e9", "jose\u0301"
	p := atkCompile(t, `
default: allow
tool_classes:
  delete_all: [danger]
  read: [safe]
manifests:
  "`+nfcName+`": {allowed_classes: [safe, danger]}
  "*": {allowed_classes: []}
rules:
  - {id: no-jose-delete, match: {match_tool: delete_all}, when: 'agent == "`+nfcName+`"', decision: deny}
`)
	ctx := context.Background()
	for _, agent := range []string{nfcName, nfd} {
		d := call("delete_all")
		d.Agent = agent
		if got, _ := p.Decide(ctx, d); got.Verdict == intercept.Allow {
			t.Errorf("agent %+q: delete_all allowed (%s); rule no-jose-delete denies it to %+q, the same name in NFC", agent, got.Reason, nfcName)
		}
		if p.Visible(ctx, d) {
			t.Errorf("agent %+q: delete_all listed; rule no-jose-delete denies it to %+q, the same name in NFC", agent, nfcName)
		}
		read := call("read")
		read.Agent = agent
		if got, _ := p.Decide(ctx, read); got.Verdict != intercept.Allow {
			t.Errorf("agent %+q: read: %s/%s, want allow (its manifest allows safe)", agent, got.Verdict, got.Reason)
		}
	}
}
