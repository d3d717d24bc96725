package telemetry

import (
	"encoding/json"
	"strings"
	"testing"
)

// Secrets in the shapes today's change set out to cover that still reach
// a kept record.
func TestSecretsWithoutSecretKeysMore(t *testing.T) {
	for _, tt := range []struct{ name, args, secret string }{
		// JSON text in a string: the escaped-quote form takes the value
		// only up to a space, and the quoted-value scrubber does not know
		// escaped quotes.
		{"nested JSON text, passphrase with spaces", `{"config":"{\"inner\":\"{\\\"password\\\":\\\"correct horse battery staple\\\"}\"}"}`, "battery staple"},
		{"nested JSON text, password with & , ;", `{"config":"{\"inner\":\"{\\\"password\\\":\\\"p4ss&w0rd;x,y\\\"}\"}"}`, "w0rd"},
		{"nested JSON text, token with }", `{"body":"{\"inner\":\"{\\\"token\\\":\\\"ab}cdefgh12345\\\"}\"}"}`, "cdefgh12345"},
		// Name/value pairs spelt the other common ways.
		{"header as [name, value] tuple", `{"headers":[["X-Api-Key","k3y-v4lue-1234"]]}`, "k3y-v4lue-1234"},
		{"pair with content member", `{"files":[{"name":"DB_PASSWORD","content":"hunter2hunter2"}]}`, "hunter2hunter2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			kept := Redactor{KeepArguments: true}.Arguments([]byte(tt.args))
			b, _ := json.Marshal(kept.Value)
			if strings.Contains(string(b), tt.secret) {
				t.Errorf("kept arguments hold the secret %q: %s", tt.secret, b)
			}
		})
	}
}

// Ordinary name/value data whose name is prose that merely contains a
// secret word. (A pair named like a secret key, "compass" or "tokenizer",
// is redacted as {"compass": …} is: the key rules err on the safe side.)
func TestPairsNotSecretKept(t *testing.T) {
	for _, args := range []string{
		`{"items":[{"name":"Password Manager Pro licence","value":199}]}`,
		`{"headers":[["Accept","application/json"]]}`,
		`{"files":[{"name":"notes.txt","content":"hello"}]}`,
	} {
		kept := Redactor{KeepArguments: true}.Arguments([]byte(args))
		b, _ := json.Marshal(kept.Value)
		if strings.Contains(string(b), Redacted) {
			t.Errorf("%s: redacted %s", args, b)
		}
	}
}

// A password holding a quote, inside JSON text nested in a string (one
// and two levels deep): the value runs to the quote that closes it at its
// own level of escaping, not to the first escaped quote inside it.
func TestNestedPasswordWithQuote(t *testing.T) {
	const secret = `ab"cd'efgh-secret-tail`
	nest := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	one := nest(map[string]string{"config": nest(map[string]string{"password": secret})})
	two := nest(map[string]string{"config": nest(map[string]string{"inner": nest(map[string]string{"password": secret, "user": "bob"})})})
	for _, args := range []string{one, two} {
		kept := Redactor{KeepArguments: true}.Arguments([]byte(args))
		b, _ := json.Marshal(kept.Value)
		if strings.Contains(string(b), "secret-tail") || strings.Contains(string(b), "efgh") {
			t.Errorf("kept arguments hold the password's tail: %s", b)
		}
		if args == two && !strings.Contains(string(b), "bob") {
			t.Errorf("the member after the password was lost: %s", b)
		}
	}
}
