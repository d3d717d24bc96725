package intercept

import (
	"errors"
	"testing"
)

func TestDecodeRejects(t *testing.T) {
	tests := []struct {
		name string
		body string
		code int
	}{
		{"empty", ``, CodeParseError},
		{"malformed", `{"jsonrpc":"2.0",`, CodeParseError},
		{"trailing data", `{"jsonrpc":"2.0","method":"ping","id":1} {}`, CodeParseError},
		{"invalid utf8", "{\"jsonrpc\":\"2.0\",\"method\":\"tools/call\",\"id\":1,\"params\":{\"name\":\"a\xff\"}}", CodeParseError},
		{"duplicate top-level key", `{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call","params":{"name":"x"}}`, CodeInvalidRequest},
		{"duplicate nested key", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read","arguments":{"path":"/a","path":"/etc/passwd"}}}`, CodeInvalidRequest},
		{"duplicate name in params", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read","name":"delete"}}`, CodeInvalidRequest},
		{"case variant of method", `{"jsonrpc":"2.0","id":1,"method":"tools/list","Method":"tools/call"}`, CodeInvalidRequest},
		{"case variant of name", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read","Name":"delete"}}`, CodeInvalidParams},
		// mcp-go's server reads "Task" as task: a call the gateway saw as
		// plain would run as a task.
		{"case variant of task", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read","Task":{}}}`, CodeInvalidParams},
		{"task beside a case variant", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read","task":null,"TASK":{}}}`, CodeInvalidParams},
		{"not an object", `"hello"`, CodeInvalidRequest},
		{"number", `42`, CodeInvalidRequest},
		{"no version", `{"id":1,"method":"ping"}`, CodeInvalidRequest},
		{"wrong version", `{"jsonrpc":"1.0","id":1,"method":"ping"}`, CodeInvalidRequest},
		{"method not string", `{"jsonrpc":"2.0","id":1,"method":7}`, CodeInvalidRequest},
		{"object id", `{"jsonrpc":"2.0","id":{},"method":"ping"}`, CodeInvalidRequest},
		{"null id on request", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, CodeInvalidRequest},
		// A server reads these as another spelling of an integer (or, past
		// 2^53, another integer) and answers with its own: see IDKey.
		{"fraction id", `{"jsonrpc":"2.0","id":1.0,"method":"ping"}`, CodeInvalidRequest},
		{"exponent id", `{"jsonrpc":"2.0","id":1e0,"method":"ping"}`, CodeInvalidRequest},
		{"minus zero id", `{"jsonrpc":"2.0","id":-0,"method":"ping"}`, CodeInvalidRequest},
		{"id past 2^53", `{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`, CodeInvalidRequest},
		{"response id with a fraction", `{"jsonrpc":"2.0","id":7.0,"result":{}}`, CodeInvalidRequest},
		{"result and error", `{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}`, CodeInvalidRequest},
		{"response without id", `{"jsonrpc":"2.0","result":{}}`, CodeInvalidRequest},
		{"call without name", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}`, CodeInvalidParams},
		{"call without params", `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, CodeInvalidParams},
		{"call with array arguments", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":[1]}}`, CodeInvalidParams},
		{"only whitespace", " \t\r\n", CodeParseError},
		// Whitespace other than JSON's is not trimmed: the body would be
		// checked without it and forwarded with it.
		{"leading NBSP", "\u00a0{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", CodeParseError},
		{"leading vertical tab", "\v{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", CodeParseError},
		{"leading form feed", "\f{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", CodeParseError},
		{"trailing NEL", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\u0085", CodeParseError},
		{"trailing line separator", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\u2028", CodeParseError},
		{"empty batch", `[]`, CodeInvalidRequest},
		{"batch with bad element", `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0"}]`, CodeInvalidRequest},
		// Their answers could not be told apart (TestAttackReusedIDMasksList).
		{"batch reusing an id", `[{"jsonrpc":"2.0","id":1,"method":"tasks/list"},{"jsonrpc":"2.0","id":1,"method":"ping"}]`, CodeInvalidRequest},
		{"batch reusing an id respelled", `[{"jsonrpc":"2.0","id":"a\u0062","method":"tasks/list"},{"jsonrpc":"2.0","id":"ab","method":"ping"}]`, CodeInvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Decode([]byte(tt.body))
			if err == nil {
				t.Fatalf("Decode(%q) succeeded, want error %d", tt.body, tt.code)
			}
			var we *WireError
			if !errors.As(err, &we) || we.Code != tt.code {
				t.Fatalf("Decode(%q) = %v, want code %d", tt.body, err, tt.code)
			}
			if !errors.Is(err, &WireError{Code: tt.code}) {
				t.Errorf("errors.Is(%v, code %d) = false", err, tt.code)
			}
		})
	}
}

func TestDecodeAccepts(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		kind   Kind
		method string
		tool   string
		args   string
		batch  bool
	}{
		{"call", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`, KindRequest, "tools/call", "echo", `{"message":"hi"}`, false},
		{"call with string id and meta", ` {"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"é","_meta":{"progressToken":1}}} `, KindRequest, "tools/call", "é", "", false},
		{"escaped name", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"\u0065cho"}}`, KindRequest, "tools/call", "echo", "", false},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, KindNotification, "notifications/initialized", "", "", false},
		{"response", `{"jsonrpc":"2.0","id":3,"result":{"tools":[]}}`, KindResponse, "", "", "", false},
		{"error with null id", `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}`, KindError, "", "", "", false},
		{"prompt name", `{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"p"}}`, KindRequest, "prompts/get", "p", "", false},
		{"resource uri", `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///a"}}`, KindRequest, "resources/read", "file:///a", "", false},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}]`, KindRequest, "tools/call", "x", "", true},
		{"JSON whitespace around", " \t\r\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r\n\t ", KindRequest, "ping", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msgs, batch, err := Decode([]byte(tt.body))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			m := msgs[0]
			if batch != tt.batch || m.Kind != tt.kind || m.Method != tt.method || m.Name != tt.tool || string(m.Arguments) != tt.args {
				t.Errorf("got batch=%v kind=%v method=%q name=%q args=%s, want %v %v %q %q %s",
					batch, m.Kind, m.Method, m.Name, m.Arguments, tt.batch, tt.kind, tt.method, tt.tool, tt.args)
			}
		})
	}
}

// FuzzDecode checks the decoder never panics and that whatever it accepts
// is self-consistent: every accepted tools/call has a name, and the raw
// bytes of each message decode again to the same thing.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"a":1}}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}},{"jsonrpc":"2.0","method":"n"}]`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","Name":"b"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		msgs, _, err := Decode(body)
		if err != nil {
			var we *WireError
			if !errors.As(err, &we) {
				t.Fatalf("error %v is not a *WireError", err)
			}
			return
		}
		for _, m := range msgs {
			if m.IsCall() && m.Name == "" {
				t.Fatalf("accepted tools/call without a name: %s", body)
			}
			again, err := DecodeMessage(m.Raw)
			if err != nil {
				t.Fatalf("re-decoding accepted message %s: %v", m.Raw, err)
			}
			if again.Method != m.Method || again.Name != m.Name || again.Kind != m.Kind {
				t.Fatalf("re-decoded %s differently", m.Raw)
			}
		}
	})
}

// TestIDKey: ids that peers read as the same id have the same key, and
// only those.
func TestIDKey(t *testing.T) {
	key := func(id string) string {
		t.Helper()
		m, err := DecodeMessage([]byte(`{"jsonrpc":"2.0","id":` + id + `,"result":{}}`))
		if err != nil {
			t.Fatalf("id %s: %v", id, err)
		}
		return m.IDKey()
	}
	for _, same := range [][2]string{
		{`"<a>"`, `"\u003ca\u003e"`}, // Go's encoding/json writes < so
		{`"ab"`, `"a\u0062"`},
		{"\"\u2028\"", `"\u2028"`}, // raw, and escaped as Sluice's framing sends it
		{`9007199254740991`, `9007199254740991`},
		{`-3`, `-3`},
	} {
		if a, b := key(same[0]), key(same[1]); a != b {
			t.Errorf("IDKey(%s) = %s, IDKey(%s) = %s: want equal", same[0], a, same[1], b)
		}
	}
	for _, other := range [][2]string{{`1`, `"1"`}, {`"a"`, `"A"`}, {`0`, `"0"`}} {
		if a, b := key(other[0]), key(other[1]); a == b {
			t.Errorf("IDKey(%s) = IDKey(%s) = %s: want different", other[0], other[1], a)
		}
	}
}

// TestIDKeyOf: a value keys as the same id in a message does, whatever
// its spelling.
func TestIDKeyOf(t *testing.T) {
	for _, id := range []string{`"a\u0062"`, `"ab"`, `7`, `-3`, `"\u003ca\u003e"`, `""`} {
		m, err := DecodeMessage([]byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := IDKeyOf(m.ID), m.IDKey(); got != want {
			t.Errorf("IDKeyOf(%s) = %s, want %s", id, got, want)
		}
	}
}
