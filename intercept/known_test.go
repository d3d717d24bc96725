package intercept

import "testing"

// TestKnown finds each of knownNames, as itself, and nothing else.
func TestKnown(t *testing.T) {
	for _, n := range knownNames {
		if s, ok := known([]byte(n)); !ok || s != n {
			t.Errorf("known(%q) = %q, %v; want it found", n, s, ok)
		}
	}
	for _, n := range []string{"", "x", "Name", "nam", "names", "jsonrpC", "echo", "io.modelcontextprotocol/clientCapabilitiesX", "tools/cal"} {
		if s, ok := known([]byte(n)); ok {
			t.Errorf("known(%q) = %q; want none", n, s)
		}
	}
}

// BenchmarkKnown looks up the names and values of sluice bench's call
// and answer.
func BenchmarkKnown(b *testing.B) {
	names := [][]byte{[]byte("jsonrpc"), []byte("2.0"), []byte("id"), []byte("method"), []byte("tools/call"), []byte("params"),
		[]byte("name"), []byte("echo"), []byte("arguments"), []byte("_meta"), []byte("progressToken"), []byte("result"),
		[]byte("content"), []byte("type"), []byte("text"), []byte("structuredContent"), []byte("message")}
	for b.Loop() {
		for _, n := range names {
			known(n)
		}
	}
}
