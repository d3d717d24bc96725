package intercept

import (
	"fmt"
	"strings"
	"testing"
)

// TestArgumentNamesDifferingInCase: a call whose arguments hold two
// members whose names differ only in case, at any depth, is refused with
// -32602: policy reads one, an upstream binding a struct with
// encoding/json may take the other. Names that differ otherwise pass.
func TestArgumentNamesDifferingInCase(t *testing.T) {
	call := func(args string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fetch","arguments":` + args + `}}`
	}
	many := func(extra string) string {
		var b strings.Builder
		b.WriteString(`{`)
		for i := range 40 {
			fmt.Fprintf(&b, `"k%d":%d,`, i, i)
		}
		b.WriteString(extra + `}`)
		return b.String()
	}
	for _, args := range []string{
		`{"url":"https://intranet/","URL":"https://evil/"}`,
		`{"url":"a","Url":"b"}`,
		`{"url":"a","\u0055RL":"b"}`,
		`{"mask":"a","mas\u212a":"b"}`, // KELVIN SIGN folds to k
		`{"sort":"a","\u017fort":"b"}`, // LONG S folds to s
		`{"outer":{"inner":[{"path":"/a","PATH":"/etc/passwd"}]}}`,
		many(`"url":"a","URL":"b"`),
		many(`"K1":"shadow"`),
	} {
		_, _, err := Decode([]byte(call(args)))
		if we, ok := err.(*WireError); !ok || we.Code != CodeInvalidParams || !strings.Contains(we.Message, "only in case") {
			t.Errorf("%.80s: got %v, want -32602 naming the two members", args, err)
		}
	}
	for _, args := range []string{
		`{}`, `{"url":"a"}`, `{"url":"a","uri":"b","urls":["URL","url"]}`,
		`{"a":{"x":1},"b":{"x":2}}`, `{"message":"URL: url"}`, many(`"url":"a"`),
	} {
		if _, _, err := Decode([]byte(call(args))); err != nil {
			t.Errorf("%.80s: %v, want it accepted", args, err)
		}
	}
	// prompts/get arguments too.
	if _, _, err := Decode([]byte(`{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"p","arguments":{"lang":"en","LANG":"x"}}}`)); err == nil {
		t.Error("prompts/get with arguments differing in case: accepted")
	}
}

// TestNamesWithControlCharacters: a tool, prompt or resource name holding
// a control or format character (ESC, CR, a bidirectional override) is
// refused: it reaches logs, terminals and the console.
func TestNamesWithControlCharacters(t *testing.T) {
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x\u001b[2K\rlooks_fine","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"pay\u202egnp.exe","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"p\u0085"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///a\u2066b"}}`,
	} {
		if _, _, err := Decode([]byte(body)); err == nil || !strings.Contains(err.Error(), "control or formatting") {
			t.Errorf("%s: got %v, want it refused", body, err)
		}
	}
	if _, _, err := Decode([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"búsqueda_web","arguments":{}}}`)); err != nil {
		t.Errorf("a name in another script: %v", err)
	}
}
