package telemetry

import (
	"strings"
	"testing"
)

// TestAttackScrubForeignPasswordKeyEscaped: Python's json.dumps (and the
// JSON log formatters built on it, python-json-logger among them) writes
// every non-ASCII letter as a \u escape, so a stdio server logging
// {"hasło": …} wrote {"has\u0142o": …}: the foreign password keys, each
// with a letter outside ASCII (but haslo, passord, senha), were not
// found, and their values were logged as written. Each line below is
// json.dumps's. Other escaped keys keep their values.
func TestAttackScrubForeignPasswordKeyEscaped(t *testing.T) {
	for _, line := range []string{
		`{"user": "jan", "has\u0142o": "SECRET-1"}`,
		`{"has\u0142em": "SECRET-1"}`,
		`{"contrase\u00f1a": "SECRET-1"}`,
		`{"CONTRASE\u00d1A": "SECRET-1"}`,
		`{"\u043f\u0430\u0440\u043e\u043b\u044c": "SECRET-1"}`,
		`{"\u041f\u0430\u0440\u043e\u043b\u044c": "SECRET-1"}`,
		`{"\u041f\u0410\u0420\u041e\u041b\u042c": "SECRET-1"}`,
		`{"\u043f\u0430\u0440\u043e\u043b\u044c_\u0431\u0434": "SECRET-1"}`,
		`{"l\u00f6senord": "SECRET-1"}`,
		`{"\u015fifre": "SECRET-1"}`,
		`{"\u015e\u0130FRE": "SECRET-1"}`,
		`{"\u5bc6\u7801": "SECRET-1"}`,
		`{"\u5bc6\u78bc": "SECRET-1"}`,
		`{"\u30d1\u30b9\u30ef\u30fc\u30c9": "SECRET-1"}`,
		`{"\ube44\ubc00\ubc88\ud638": "SECRET-1"}`,
		`{"jelsz\u00f3": "SECRET-1"}`,
		`"{\"has\u0142o\": \"SECRET-1\"}"`,
	} {
		if got := Scrub(line); strings.Contains(got, "SECRET-1") {
			t.Errorf("Scrub(%s) = %s, want the value redacted", line, got)
		}
	}
	for _, line := range []string{`{"ma\u0142o": "kept-1"}`, `{"caf\u00e9": "kept-1"}`, `{"\u043f\u0430\u0440\u043a": "kept-1"}`} {
		if got := Scrub(line); got != line {
			t.Errorf("Scrub(%s) = %s, want it as it was", line, got)
		}
	}
}

// TestForeignPasswordFreeTextAsKeys: a JSON pair in free text (a log
// line) is redacted where its key is secret as an argument's key is
// (IsSecretKey): senha and losenord not after a letter, unless they start
// a camelCase word. Free text took losenord after any letter and senha
// after none: closeNordic's value ("north-7", a region) was redacted,
// userSenha's (a password) logged.
func TestForeignPasswordFreeTextAsKeys(t *testing.T) {
	for _, k := range []string{"passOrderId", "bypassOrder", "compassOrder", "passOrdinal", "resenha", "chosenHash",
		"chosenHandler", "loosenHandle", "closeNordic", "closeNord", "hasLoaded", "hasLogin", "passord", "Passordet", "passord2",
		"dbPassord", "db_passord", "PASSORD_2", "haslo", "HASLO", "haslo_db", "db_haslo", "db_haslo_2", "hasło", "HASŁO",
		"senha", "userSenha", "USER_SENHA", "user.senha", "senhaAntiga", "losenord", "db_losenord", "dbLosenord", "dbLösenord",
		"Lösenord", "Пароль", "ПАРОЛЬ", "ŞİFRE", "Şifre", "CONTRASEÑA"} {
		line := `{"` + k + `": "v4lue-1", "region": "north-7"}`
		got := Scrub(line)
		if redacted := !strings.Contains(got, "v4lue-1"); redacted != IsSecretKey(k) || !strings.Contains(got, "north-7") {
			t.Errorf("Scrub(%s) = %s; as an argument's key %q is secret: %v", line, got, k, IsSecretKey(k))
		}
	}
}

// TestForeignPasswordCamelCaseContinued: haslo and passord, written in
// lower case (or capitalized), begin camelCase keys that go on with
// another word (passordHash, hasloDb, passordBekreftelse): such a key is
// a password's, as passord_hash is, in an argument's keys and in free
// text. Only a letter in lower case after them was a word of its own
// (passordet aside); an upper-case one inside them (hasLoaded,
// passOrderId) is still another name.
func TestForeignPasswordCamelCaseContinued(t *testing.T) {
	for _, k := range []string{"passordHash", "hasloDb", "HasloDB", "passordBekreftelse", "nyttPassordHash", "passordetNytt", "dbHasloAdmin"} {
		line := `{"` + k + `": "v4lue-1", "region": "north-7"}`
		if got := Scrub(line); strings.Contains(got, "v4lue-1") || !IsSecretKey(k) {
			t.Errorf("%q: IsSecretKey %v, Scrub(%s) = %s; want a password's key", k, IsSecretKey(k), line, got)
		}
	}
	for _, k := range []string{"hasLoaded", "hasLocation", "passOrderId", "bypassOrder", "passOrdinal", "HasLoaded", "hasLOADED"} {
		line := `{"` + k + `": "v4lue-1", "region": "north-7"}`
		if got := Scrub(line); !strings.Contains(got, "v4lue-1") || IsSecretKey(k) {
			t.Errorf("%q: IsSecretKey %v, Scrub(%s) = %s; want another name's", k, IsSecretKey(k), line, got)
		}
	}
}
