package main

import (
	"strings"
	"testing"
)

// TestManifestBoundaryCeilingReadsDeclarations: a manifest's
// boundary_ceiling compares the boundary the operator declared for the
// tool (classifier.tools, else the upstream's zone) with the ceiling.
// Nothing handed the declarations to the descriptors policy reads, so an
// agent under a ceiling below external was denied every call, those its
// operator declared local included (the README's own manifest example
// allowed nothing), and RESTRICT_BOUNDARY never saw a declared boundary.
func TestManifestBoundaryCeilingReadsDeclarations(t *testing.T) {
	g := startServe(t, `
policy:
  default: allow
  result_mode: tool_result
  manifests:
    capped: {boundary_ceiling: intra-org}
classifier:
  tools:
    demo/echo: {boundary: Local}
    send_email: {boundary: External}
`)
	call := func(agent, tool, args string) string {
		return modernCallAs(t, g.url, agent, "tools/call", tool, `{"name":"`+tool+`","arguments":`+args+`}`)
	}
	if got := call("capped", "echo", `{"message":"hi"}`); !strings.Contains(got, "Echo: hi") {
		t.Errorf("echo, declared Local, under an intra-org ceiling: got %s, want it to run", got)
	}
	email := `{"to":"a@example.com","subject":"s","body":"b"}`
	if got := call("capped", "send_email", email); !strings.Contains(got, "manifest_boundary_exceeded") {
		t.Errorf("send_email, declared External, under an intra-org ceiling: got %s, want manifest_boundary_exceeded", got)
	}
	if got := call("capped", "add", `{"a":1,"b":2}`); !strings.Contains(got, "manifest_boundary_exceeded") || !strings.Contains(got, "nothing declares this tool") {
		t.Errorf("add, declaring no boundary: got %s, want manifest_boundary_exceeded saying nothing declares its boundary", got)
	}
	if got := call("free", "send_email", email); strings.Contains(got, "manifest_boundary_exceeded") {
		t.Errorf("an agent without a manifest: got %s", got)
	}
}

// TestManifestBoundaryCeilingUpstreamZone: an upstream's zone is the
// declared boundary of its tools that declare none.
func TestManifestBoundaryCeilingUpstreamZone(t *testing.T) {
	g := startServe(t, `
policy:
  default: allow
  manifests:
    capped: {boundary_ceiling: intra-org}
classifier:
  upstreams: {demo: {zone: Intra-org}}
  tools:
    send_email: {boundary: External}
`)
	if got := modernCallAs(t, g.url, "capped", "tools/call", "echo", `{"name":"echo","arguments":{"message":"hi"}}`); !strings.Contains(got, "Echo: hi") {
		t.Errorf("echo on an Intra-org upstream under an intra-org ceiling: got %s, want it to run", got)
	}
	if got := modernCallAs(t, g.url, "capped", "tools/call", "send_email", `{"name":"send_email","arguments":{"to":"a@example.com","subject":"s","body":"b"}}`); !strings.Contains(got, "manifest_boundary_exceeded") {
		t.Errorf("send_email, declared External on an Intra-org upstream: got %s, want manifest_boundary_exceeded", got)
	}
}

// TestConfigValidateWarnsUndeclaredCeiling: a manifest with a ceiling
// below external where nothing declares a boundary denies every call of
// its agent; config validate says so.
func TestConfigValidateWarnsUndeclaredCeiling(t *testing.T) {
	for _, tt := range []struct {
		name, yaml string
		warn       bool
	}{
		{"nothing declared", "policy: {default: allow, manifests: {capped: {boundary_ceiling: local}}}\n", true},
		{"a tool declared", "policy: {default: allow, manifests: {capped: {boundary_ceiling: local}}}\nclassifier: {tools: {echo: {boundary: Local}}}\n", false},
		{"a zone", "policy: {default: allow, manifests: {capped: {boundary_ceiling: intra-org}}}\nclassifier: {upstreams: {demo: {zone: Intra-org}}}\n", false},
		{"external ceiling", "policy: {default: allow, manifests: {capped: {boundary_ceiling: external}}}\n", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := validateOut(t, tt.yaml)
			if warned := strings.Contains(out, "capped set boundary_ceiling, but nothing declares a boundary"); warned != tt.warn {
				t.Errorf("config validate said %q: warned %v, want %v", out, warned, tt.warn)
			}
		})
	}
}
