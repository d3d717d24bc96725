package telemetry

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestIsSecretKey(t *testing.T) {
	secret := []string{
		"password", "PASSWORD", "Password", "user_password", "passwd", "pwd", "passphrase",
		"token", "access_token", "accessToken", "refresh-token", "X-Auth-Token", "id_token",
		"secret", "client_secret", "clientSecret", "SECRET_KEY",
		"api_key", "apiKey", "API-Key", "x-api-key", "apikey", "api.key",
		"authorization", "Authorization", "proxy_authorization", "auth",
		"cookie", "Set-Cookie", "session_cookie",
		"private_key", "privateKey", "PRIVATE-KEY", "ssh_private_key",
		"credentials", "aws_secret_access_key", "aws_access_key_id", "signing_key", "jwt",
	}
	for _, k := range secret {
		if !IsSecretKey(k) {
			t.Errorf("IsSecretKey(%q): got false, want true", k)
		}
	}
	public := []string{"query", "title", "author", "keyword", "path", "max_tokens", "tokens", "monkey", "passage", "url", "name", "description"}
	for _, k := range public {
		if IsSecretKey(k) {
			t.Errorf("IsSecretKey(%q): got true, want false", k)
		}
	}
}

func TestRedactNested(t *testing.T) {
	raw := `{
		"query": "weather in Paris",
		"Authorization": "Bearer abc.def.ghi",
		"config": {"api_key": "k-123", "nested": {"Password": "hunter2", "depth": 3, "list": [{"token": "t1"}, {"ok": "fine"}]}},
		"headers": [{"name": "Cookie", "COOKIE": "session=1"}],
		"credentials": {"user": "u", "pass": "p"},
		"note": "use sk-proj-ABCDEFGHIJKLMNOPQRSTUV to log in",
		"count": 2, "enabled": true, "nothing": null
	}`
	var v any
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		t.Fatal(err)
	}
	got := Redactor{}.Redact(v)
	want := map[string]any{
		"query":         "weather in Paris",
		"Authorization": Redacted,
		"config": map[string]any{"api_key": Redacted, "nested": map[string]any{
			"Password": Redacted, "depth": 3.0,
			"list": []any{map[string]any{"token": Redacted}, map[string]any{"ok": "fine"}},
		}},
		"headers":     []any{map[string]any{"name": "Cookie", "COOKIE": Redacted}},
		"credentials": Redacted,
		"note":        "use " + Redacted + " to log in",
		"count":       2.0, "enabled": true, "nothing": nil,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Redact (-want +got):\n%s", diff)
	}
	// The input is untouched.
	if v.(map[string]any)["config"].(map[string]any)["api_key"] != "k-123" {
		t.Error("Redact changed its input")
	}
	// More secret keys by configuration.
	got = Redactor{SecretKeys: []string{"Account-Number"}}.Redact(map[string]any{"account_number": "123", "x": "y"})
	if diff := cmp.Diff(map[string]any{"account_number": Redacted, "x": "y"}, got); diff != "" {
		t.Errorf("Redact with SecretKeys (-want +got):\n%s", diff)
	}
}

func TestArguments(t *testing.T) {
	a := Redactor{}.Arguments([]byte(`{"b": 1, "a": "x", "token": "secret-1"}`))
	if a.Value != nil {
		t.Errorf("default Redactor kept the arguments: %v", a.Value)
	}
	if len(a.SHA256) != 64 {
		t.Errorf("hash: got %q, want 64 hex digits", a.SHA256)
	}
	// Key order and whitespace do not change the hash; neither does the
	// secret, which is hashed only redacted.
	for _, raw := range []string{`{"a":"x","b":1,"token":"secret-1"}`, ` {"token":"other","a":"x","b":1.0} `} {
		if b := (Redactor{}).Arguments([]byte(raw)); b.SHA256 != a.SHA256 {
			t.Errorf("hash of %s: got %s, want %s", raw, b.SHA256, a.SHA256)
		}
	}
	if b := (Redactor{}).Arguments([]byte(`{"a":"y","b":1,"token":"secret-1"}`)); b.SHA256 == a.SHA256 {
		t.Error("different arguments hash the same")
	}

	kept := Redactor{KeepArguments: true}.Arguments([]byte(`{"path":"/tmp","password":"p"}`))
	if diff := cmp.Diff(map[string]any{"path": "/tmp", "password": Redacted}, kept.Value); diff != "" {
		t.Errorf("KeepArguments (-want +got):\n%s", diff)
	}
	if kept.SHA256 == "" {
		t.Error("KeepArguments dropped the hash")
	}

	// Kept numbers are exact, for replay.
	big := Redactor{KeepArguments: true}.Arguments([]byte(`{"id":12345678901234567890,"f":1.10}`))
	if out, _ := json.Marshal(big.Value); string(out) != `{"f":1.10,"id":12345678901234567890}` {
		t.Errorf("kept numbers: got %s", out)
	}
	if trailing := (Redactor{KeepArguments: true}).Arguments([]byte(`{"a":1} {"b":2}`)); trailing.Value != nil {
		t.Errorf("two JSON values: got kept value %v, want none", trailing.Value)
	}

	if z := (Redactor{}).Arguments(nil); z != (Arguments{}) {
		t.Errorf("no arguments: got %+v, want zero", z)
	}
	bad := Redactor{KeepArguments: true}.Arguments([]byte(`{"password": "p"`))
	if bad.Value != nil || len(bad.SHA256) != 64 {
		t.Errorf("invalid JSON: got %+v, want a hash and no value", bad)
	}
}

// TestCanonicalJSON uses the examples of RFC 8785.
func TestCanonicalJSON(t *testing.T) {
	tests := []struct{ in, want string }{
		// §3.2.2.3 numbers.
		{`[1e30, 4.50, 0.002, 1e-27, 333333333.33333329, -0, 1E+21, 1e20, 100, -1.5e-7]`,
			`[1e+30,4.5,0.002,1e-27,333333333.3333333,0,1e+21,100000000000000000000,100,-1.5e-7]`},
		// §3.2.3 sorting by UTF-16 code units.
		{`{"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\ud83d\ude00":"Emoji: Grinning Face","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis"}`,
			"{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"\u00f6\":\"Latin Small Letter O With Diaeresis\",\"\u20ac\":\"Euro Sign\",\"\U0001F600\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}"},
		// §3.2.2.2 strings.
		{`{"s":"\u20ac$\u000f\u000aA'\u0042\u0022\u005c\\\"\/"}`, `{"s":"€$\u000f\nA'B\"\\\\\"/"}`},
		{`{"b":[true,false,null],"a":{}}`, `{"a":{},"b":[true,false,null]}`},
	}
	for _, tt := range tests {
		var v any
		if err := json.Unmarshal([]byte(tt.in), &v); err != nil {
			t.Fatalf("%s: %v", tt.in, err)
		}
		got, err := CanonicalJSON(v)
		if err != nil {
			t.Fatalf("CanonicalJSON(%s): %v", tt.in, err)
		}
		if string(got) != tt.want {
			t.Errorf("CanonicalJSON(%s):\n got %s\nwant %s", tt.in, got, tt.want)
		}
	}
}

func TestScrub(t *testing.T) {
	tests := []struct {
		in      string
		leak    string // must not survive
		keep    string // must survive
		changed bool
	}{
		{"GET /x Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "dozjgNryP4J3", "GET /x", true},
		{"token bearer abcdefghijklmnopqrstuvwxyz012345", "abcdefghijklmnop", "", true},
		{"Basic dXNlcjpwYXNzd29yZA== sent", "dXNlcjpwYXNzd29yZA", "sent", true},
		{"key id AKIAIOSFODNN7EXAMPLE in use", "AKIAIOSFODNN7EXAMPLE", "in use", true},
		{"-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA75\n-----END RSA PRIVATE KEY-----\nafter", "MIIEpAIBAAKCAQEA75", "after", true},
		{"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA (cut off", "b3BlbnNzaC1rZXkt", "", true},
		{"OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwx", "abcdefghijklmnop", "OPENAI_API_KEY=", true},
		{"using sk-ant-api03-abcdefghijklmnopqrstuv", "sk-ant-api03-abcdefgh", "using", true},
		{"ghp_abcdefghijklmnopqrstuvwxyz0123456789 pushed", "ghp_abcdefgh", "pushed", true},
		{"xoxb-123456789012-abcdefghij posted", "xoxb-1234", "posted", true},
		{"connect postgres://admin:s3cr3t@db:5432/app", "s3cr3t", "admin", true},
		{`{"password": "hunter2", "user": "bob"}`, "hunter2", `"user": "bob"`, true},
		{"client_secret=abc123&scope=read", "abc123", "scope=read", true},
		{"the token expired; retry later", "", "the token expired; retry later", false},
		{"tools/call search took 12ms", "", "tools/call search took 12ms", false},
		{"", "", "", false},
	}
	for _, tt := range tests {
		got := Scrub(tt.in)
		if tt.leak != "" && strings.Contains(got, tt.leak) {
			t.Errorf("Scrub(%q) = %q: still has %q", tt.in, got, tt.leak)
		}
		if tt.keep != "" && !strings.Contains(got, tt.keep) {
			t.Errorf("Scrub(%q) = %q: lost %q", tt.in, got, tt.keep)
		}
		if (got != tt.in) != tt.changed {
			t.Errorf("Scrub(%q) = %q: changed %v, want %v", tt.in, got, got != tt.in, tt.changed)
		}
	}
}

// TestArgumentsHashTokenPath checks that ordinary arguments take the
// token path (FuzzArgumentsHash checks it agrees with decoding) and that
// what it cannot take falls back to the same answer.
func TestArgumentsHashTokenPath(t *testing.T) {
	for _, raw := range []string{`{"message":"hello"}`, `{"a":[1,2.5,{"token":"x"}],"b":null,"c":true}`, `[]`, `"s"`} {
		if _, ok := hashArguments([]byte(raw), nil); !ok {
			t.Errorf("hashArguments(%s): not taken", raw)
		}
	}
	for _, raw := range []string{`{"a":1,"a":2}`, "{\"a\":\"\xff\"}", `{"a":1}{}`, `{"x":1e400}`} {
		if _, ok := hashArguments([]byte(raw), nil); ok {
			t.Errorf("hashArguments(%q): taken, want the decoding path", raw)
		}
		if got := (Redactor{}).Arguments([]byte(raw)); len(got.SHA256) != 64 {
			t.Errorf("Arguments(%q): no hash", raw)
		}
	}
}

func BenchmarkArguments(b *testing.B) {
	raw := []byte(`{"message":"hello from the benchmark","count":3,"options":{"api_key":"sk-abcdefghijklmnopqrstuv","verbose":true}}`)
	b.Run("flat", func(b *testing.B) {
		// sluice bench's arguments: hashFlat's.
		flat := []byte(`{"message":"hi"}`)
		b.ReportAllocs()
		for b.Loop() {
			Redactor{}.Arguments(flat)
		}
	})
	for _, keep := range []bool{false, true} {
		b.Run(map[bool]string{false: "hash", true: "keep"}[keep], func(b *testing.B) {
			r := Redactor{KeepArguments: keep}
			b.ReportAllocs()
			for b.Loop() {
				r.Arguments(raw)
			}
		})
	}
}

// TestSecretKeysOtherLanguages (attack review): a key naming a password
// in another language was kept: {"Passwort": …}, {"mot_de_passe": …},
// {"contraseña": …}, {"senha": …}, {"пароль": …}, {"密码": …}. Words that
// are ordinary as parts of longer keys ("parola", "clave") count only
// as the whole key.
func TestSecretKeysOtherLanguages(t *testing.T) {
	for _, k := range []string{"Passwort", "db_kennwort", "mot_de_passe", "contraseña", "Contrasena", "senha", "user_senha", "wachtwoord",
		"salasana", "lösenord", "adgangskode", "passord", "jelszó", "hasło", "haslo", "şifre", "sifre", "пароль", "密码", "パスワード", "비밀번호",
		"parola", "clave", "heslo", "geheim", "Geheimnis"} {
		if !IsSecretKey(k) {
			t.Errorf("%q: not taken for a secret key", k)
		}
	}
	for _, k := range []string{"parola_chiave_ricerca", "autoclave", "enclave", "heslop", "geheimtipp_title", "sifreleme_yontemi"} {
		if IsSecretKey(k) {
			t.Errorf("%q: taken for a secret key", k)
		}
	}
}
