package main

import (
	"strings"
	"testing"
)

// TestManifestBoundaryCeilingA2A: a manifest's boundary_ceiling is
// compared on an A2A message as on a tools/call, with the boundary the
// operator declared for the agent (classifier.upstreams["a2a:NAME"].zone,
// classifier.tools["a2a:NAME/skill"]). The A2A descriptors never carried
// the declarations, so a capped agent was denied every message, those to
// an agent its operator declared inside the ceiling included.
func TestManifestBoundaryCeilingA2A(t *testing.T) {
	base := serveBenchAgent(t)
	r := startServe(t, `agent_header: X-Agent
policy:
  default: allow
  manifests:
    capped: {boundary_ceiling: intra-org}
classifier:
  upstreams:
    "a2a:inside": {zone: Intra-org}
    "a2a:outside": {zone: External}
agents: [{name: inside, url: `+base+`}, {name: outside, url: `+base+`}]
`)
	root := strings.TrimSuffix(r.url, "/mcp/demo")
	send := func(agentName, who string) string {
		return a2aPost(t, root+"/a2a/"+agentName, who, `{"jsonrpc":"2.0","id":7,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`)
	}
	if got := send("inside", "capped"); !strings.Contains(got, "TASK_STATE_COMPLETED") {
		t.Errorf("capped agent to an agent declared Intra-org: got %s, want it sent", got)
	}
	if got := send("outside", "capped"); !strings.Contains(got, "manifest_boundary_exceeded") || strings.Contains(got, "nothing declares") {
		t.Errorf("capped agent to an agent declared External: got %s, want manifest_boundary_exceeded above the ceiling", got)
	}
	if got := send("outside", "free"); !strings.Contains(got, "TASK_STATE_COMPLETED") {
		t.Errorf("an agent without a manifest: got %s", got)
	}
}
