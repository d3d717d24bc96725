package intercept

import (
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// versionFromMetaRef is how the gateway read a request's protocol version
// and client name before Decode read them (a walk of _meta of its own).
func versionFromMetaRef(meta jsontext.Value) (version, client string) {
	if meta == nil {
		return "", ""
	}
	v, info := ValidMembers(meta, "io.modelcontextprotocol/protocolVersion", "io.modelcontextprotocol/clientInfo")
	if info != nil {
		client = ValidStringMember(info, "name")
	}
	return ValidString(v), client
}

// benchCall is sluice bench's tools/call.
const benchCall = `{"jsonrpc":"2.0","id":12345,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`

var readMetaSeeds = []string{
	benchCall,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":null}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":[1]}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"progressToken":7,"traceparent":"00-0123456789abcdef0123456789abcdef-0123456789abcdef-01"}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"note":"x","io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":7,"io.modelcontextprotocol/clientInfo":"x"}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"io.modelcontextprotocol/protocol\u0056ersion":"v","io.modelcontextprotocol/clientInfo":{"na\u006de":"n\u00e9"}}}}`,
	`{"jsonrpc":"2.0","method":"notifications/progress","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"progressToken":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}}}`,
}

// TestReadMetaAgrees: what Decode reads of _meta is what a walk of its
// own for each question read (MetaVersion, and CallExtra's look beyond
// the protocol's members), whether Decode made the message or not.
func TestReadMetaAgrees(t *testing.T) {
	for _, s := range readMetaSeeds {
		checkReadMeta(t, []byte(s))
	}
	msgs, _, err := Decode([]byte(benchCall))
	if err != nil {
		t.Fatal(err)
	}
	if v, c := msgs[0].MetaVersion(); v != "2026-07-28" || c != "bench" {
		t.Errorf("MetaVersion() = %q, %q; want 2026-07-28, bench", v, c)
	}
}

func checkReadMeta(t *testing.T, body []byte) {
	msgs, _, err := Decode(body)
	if err != nil {
		return
	}
	for _, m := range msgs {
		wantV, wantC := versionFromMetaRef(m.Meta)
		for _, mm := range []*Message{m, {Meta: m.Meta}} { // decoded, and made otherwise
			if v, c := mm.MetaVersion(); v != wantV || c != wantC {
				t.Errorf("%s: MetaVersion() = %q, %q; want %q, %q", body, v, c, wantV, wantC)
			}
			if got, want := mm.metaFacts().beyond, metaBeyondProtocol(m.Meta); got != want {
				t.Errorf("%s: beyond = %v, want %v", body, got, want)
			}
		}
	}
}

func FuzzReadMeta(f *testing.F) {
	for _, s := range readMetaSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkReadMeta)
}

// BenchmarkCallMeta decodes sluice bench's call and asks what the gateway
// asks of its _meta: its protocol version and client (identify), and
// whether it holds more than the protocol's members (CallExtra). "walks"
// is the way before Decode read them: a walk of _meta for each.
func BenchmarkCallMeta(b *testing.B) {
	body := []byte(benchCall)
	b.Run("decoded", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			msgs, _, err := Decode(body)
			if err != nil {
				b.Fatal(err)
			}
			if v, _ := msgs[0].MetaVersion(); v == "" || CallExtra(msgs[0]) != nil {
				b.Fatal("wrong meta")
			}
		}
	})
	b.Run("walks", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			msgs, _, err := Decode(body)
			if err != nil {
				b.Fatal(err)
			}
			if v, _ := versionFromMetaRef(msgs[0].Meta); v == "" || metaBeyondProtocol(msgs[0].Meta) {
				b.Fatal("wrong meta")
			}
		}
	})
}
