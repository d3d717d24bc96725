package telemetry

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestAttackArgvCredentials: a tool that runs a program takes its
// arguments as an array (["login", "--password", "…"]), each option's
// value the next element. A [name, value] pair of two elements was
// redacted, but a longer argv was not: the credential after --password,
// --token, --client-secret or curl's -u reached the record whole with
// keep_arguments and was hashed into arguments_sha256 without it.
func TestAttackArgvCredentials(t *testing.T) {
	const secret = "Zx8pQ2mN7vR4tL9k"
	for _, tt := range []struct{ name, args string }{
		{"docker login", `{"command":"docker","args":["login","--username","ci","--password","` + secret + `","registry.example"]}`},
		{"kubectl token", `{"argv":["kubectl","--token","` + secret + `","get","pods"]}`},
		{"client secret", `{"args":["az","login","--service-principal","--client-secret","` + secret + `"]}`},
		{"curl -u", `{"cmd":["curl","-u","admin:` + secret + `","https://api.example/x"]}`},
		{"nested", `{"steps":[{"run":["tool","--api-key","` + secret + `"]}]}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			kept := Redactor{KeepArguments: true}.Arguments([]byte(tt.args))
			b, _ := json.Marshal(kept.Value)
			if strings.Contains(string(b), secret) {
				t.Errorf("kept arguments hold the credential: %s", b)
			}
			other := strings.ReplaceAll(tt.args, secret, "0000000000000000")
			if h1, h2 := (Redactor{}).Arguments([]byte(tt.args)).SHA256, (Redactor{}).Arguments([]byte(other)).SHA256; h1 != h2 || h1 != kept.SHA256 {
				t.Errorf("arguments_sha256 depends on the credential (%s vs %s, decoded %s)", h1, h2, kept.SHA256)
			}
		})
	}
	// Options naming no credential keep their values; so does a flag at
	// the end, and -u and --user not followed by USER:PASSWORD (git push
	// -u origin, python -u app.py, sort -u, ps --user root), and options
	// naming counts of tokens.
	for _, args := range []string{
		`{"args":["ls","-l","--color","auto","--password"]}`,
		`{"args":["git","push","-u","origin","main"]}`,
		`{"args":["python","-u","app.py"]}`,
		`{"args":["ps","--user","root"]}`,
		`{"args":["llm","--max-tokens","100"]}`,
		`{"args":["aws","secretsmanager","get-secret-value","--secret-id","prod/db"]}`,
		`{"args":["docker","login","--password-stdin","registry.example"]}`,
		`{"args":["kubectl","--token-file","/run/sa/token"]}`,
	} {
		kept := Redactor{KeepArguments: true}.Arguments([]byte(args))
		if b, _ := json.Marshal(kept.Value); string(b) != args {
			t.Errorf("got %s, want %s", b, args)
		}
		if h := (Redactor{}).Arguments([]byte(args)).SHA256; h != kept.SHA256 {
			t.Errorf("hash paths disagree: %s vs %s", h, kept.SHA256)
		}
	}
	// Of -u USER:PASSWORD the user is kept.
	kept := Redactor{KeepArguments: true}.Arguments([]byte(`{"cmd":["curl","-u","admin:` + secret + `"]}`))
	if b, _ := json.Marshal(kept.Value); !strings.Contains(string(b), `"admin:`+Redacted+`"`) {
		t.Errorf("got %s, want the user kept", b)
	}
}
