package gateway

import "testing"

// echoAnswer is the answer of sluice bench's upstream to its tools/call.
const echoAnswer = `{"jsonrpc":"2.0","id":7,"result":{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"sluice-demo-server","version":"0.1.0"}},"content":[{"type":"text","text":"Echo: hi"}],"resultType":"complete"}}`

var mayNeedScreenSeeds = []string{
	echoAnswer,
	`{"jsonrpc":"2.0","id":1,"result":{"task":{"taskId":"t1"}}}`,
	`{"jsonrpc":"2.0","id":1,"result":{"TASKID":"t1"}}`,
	`{"jsonrpc":"2.0","id":1,"result":{"taſkId":"t1"}}`,
	`{"jsonrpc":"2.0","id":1,"result":{"requestState":"x"}}`,
	`{"jsonrpc":"2.0","id":1,"result":{"RequestState":"x"}}`,
	`{"jsonrpc":"2.0","id":1,"result":{"cacheScope":"public"}}`,
	`{"jsonrpc":"2.0","id":1,"result":{"ttlMs":5}}`,
	`{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"x"}}`,
	`{"jsonrpc":"2.0","id":1,"ERROR":{"code":-32001,"message":"x"}}`,
	`{"jsonrpc":"2.0","id":1,"result":{"isError":true,"structuredContent":{"status":"denied"}}}`,
	`{"jsonrpc":"2.0","id":1,"result":{"isError":true,"StructuredContent":{"status":"approval_required"}}}`,
	`{"jsonrpc":"2.0","id":1,"result":{"structuredContent":{"status":"ok"}}}`,
	`{"jsonrpc":"2.0","id":1,"result":{"text":"\u0065rror"}}`,
	`{"jsonrpc":"2.0","id":1,"result":{"text":"K"}}`,
	`"`, `""`, `"t`, `"e`, `"errö`, ``,
	// Spellings an upstream may hide a name in: escaped, as a value, in
	// another case, folded through the Kelvin sign, in a batch, past a
	// quote that ends the text.
	`{"jsonrpc":"2.0","id":1,"result":{"\u0074askId":"t1"}}`,
	`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"taskId"}],"note":"taskId"}}`,
	`{"jsonrpc":"2.0","id":1,"result":{"x":"taskId"}}`,
	`{"jsonrpc":"2.0","id":1,"result":{"tasKId":"t1"}}`,
	`{"jsonrpc":"2.0","id":1,"result":{"TaskID":"t1","Error":null}}`,
	`[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"result":{"task":{"taskId":"t"}}}]`,
	`[{"jsonrpc":"2.0","id":1,"result":{"isError":true,"content":[]}},{"jsonrpc":"2.0","id":2,"result":{"STRUCTUREDCONTENT":{"status":"denied"}}}]`,
	`{"jsonrpc":"2.0","id":1,"result":{"structuredContent":{"status":"Denied"}}}`,
	`{"jsonrpc":"2.0","id":1,"result":{"ttlms":5,"CacheScope":"public","requeststate":"x"}}`,
	`{"jsonrpc":"2.0","id":1,"result":{"x":""taskId"}}`,
}

// TestMayNeedScreenAgrees: the one-pass test says what the three tests it
// stands for say together.
func TestMayNeedScreenAgrees(t *testing.T) {
	for _, s := range mayNeedScreenSeeds {
		b := []byte(s)
		if got, want := mayNeedScreen(b), recorded(b) || cacheHinted(b) || mayForgeEnvelope(b); got != want {
			t.Errorf("mayNeedScreen(%s) = %v, want %v", s, got, want)
		}
	}
	if mayNeedScreen([]byte(echoAnswer)) {
		t.Error("the echo answer needs no screen")
	}
}

func FuzzMayNeedScreen(f *testing.F) {
	for _, s := range mayNeedScreenSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := mayNeedScreen(b), recorded(b) || cacheHinted(b) || mayForgeEnvelope(b); got != want {
			t.Errorf("mayNeedScreen(%q) = %v, want %v", b, got, want)
		}
	})
}

// BenchmarkMayNeedScreen is the test of sluice bench's answer, one pass
// (one) against the three searches it replaced (three).
func BenchmarkMayNeedScreen(b *testing.B) {
	msg := []byte(echoAnswer)
	b.Run("one", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if mayNeedScreen(msg) {
				b.Fatal("screened")
			}
		}
	})
	b.Run("three", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if recorded(msg) || cacheHinted(msg) || mayForgeEnvelope(msg) {
				b.Fatal("screened")
			}
		}
	})
}
