package intercept

import "testing"

// BenchmarkDecode decodes what every tools/call brings: the request, and
// the upstream's answer the gateway reads back.
func BenchmarkDecode(b *testing.B) {
	for _, bb := range []struct{ name, body string }{
		{"call", `{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"},"_meta":{"progressToken":17}}}`},
		{"result", `{"jsonrpc":"2.0","id":17,"result":{"content":[{"type":"text","text":"Echo: hi"}],"structuredContent":{"message":"Echo: hi"}}}`},
	} {
		b.Run(bb.name, func(b *testing.B) {
			body := []byte(bb.body)
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := Decode(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
