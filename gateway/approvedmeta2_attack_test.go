package gateway

import (
	"strings"
	"testing"
)

// TestAttackApprovedCallProtocolMeta (attacker review): CallExtra left out
// of an approval's binding every _meta key under io.modelcontextprotocol/,
// and baggage and tracestate, as "the protocol's, made afresh per request".
// Only three io.modelcontextprotocol/ keys are (protocolVersion,
// clientInfo, clientCapabilities), and baggage and tracestate are free
// text: the approved add{a:2,b:3} went again with data of the agent's
// choosing under any other io.modelcontextprotocol/ name, or in baggage
// or tracestate, or as a progressToken or traceparent of any length, and
// reached the upstream under the approval. They are bound now; a short
// progress token and a W3C traceparent are not. So, later (attacker
// review), are the three io.modelcontextprotocol/ keys as sent: they had
// been left out whatever they held.
func TestAttackApprovedCallProtocolMeta(t *testing.T) {
	for name, meta := range map[string]string{
		"reserved prefix": `{"io.modelcontextprotocol/note":"SECRET-META"}`,
		"baggage":         `{"baggage":"x=SECRET-META"}`,
		"tracestate":      `{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","tracestate":"v=SECRET-META"}`,
		"traceparent":     `{"traceparent":"SECRET-META"}`,
		"progressToken":   `{"progressToken":"SECRET-META ` + strings.Repeat("x", 100) + `"}`,
		// The three that are the protocol's were left out whatever they
		// held: data of the agent's choosing as its protocol version,
		// client name or an experimental capability.
		"protocolVersion":    `{"io.modelcontextprotocol/protocolVersion":"SECRET-META"}`,
		"clientInfo":         `{"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1","websiteUrl":"https://SECRET-META.example"}}`,
		"clientInfo.version": `{"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"SECRET-META"}}`,
		"clientCapabilities": `{"io.modelcontextprotocol/clientCapabilities":{"experimental":{"SECRET-META":{}}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			f, store := approvalFixture(t, Options{}, true)
			url := f.gw.URL + "/mcp/demo"
			hdr := initializeWith(t, url, `{}`)
			if _, _, body := post(t, url, hdr, addCall); !strings.Contains(body, "approval_required") {
				t.Fatalf("not held: %s", body)
			}
			if _, err := store.Decide(onlyRequest(t, store).ID, true, "operator"); err != nil {
				t.Fatal(err)
			}
			swapped := `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3},"_meta":` + meta + `}}`
			_, _, body := post(t, url, hdr, swapped)
			if f.upstreamSaw("SECRET-") {
				t.Errorf("a call other than the approved one reached the upstream under its approval: %s", body)
			}
			// The approved call, with the trace context and progress
			// token an SDK makes afresh, still goes.
			_, _, body = post(t, url, hdr, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3},"_meta":{"progressToken":"2b0c8f8e-6a53-4c1e-9d3e-0f6f4b1f1a10","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","io.modelcontextprotocol/protocolVersion":"2025-11-25"}}}`)
			if !strings.Contains(body, `"text":"5"`) {
				t.Errorf("the approved call with a fresh progress token and traceparent: %s", body)
			}
		})
	}
}
