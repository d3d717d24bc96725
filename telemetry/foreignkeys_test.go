package telemetry

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestForeignPasswordKeysNotIdentifierKeys: as fragments of a normalized
// key, Norwegian passord, Portuguese senha and Swedish losenord are parts
// of ordinary camelCase names (passOrderId, bypassOrder, chosenHash,
// closeNordic), whose values an audit record lost as passwords. Those
// words count as Scrub counts them (TestForeignPasswordKeysNotIdentifiers):
// passord and haslo with no letter after them, senha and losenord with
// no letter before them (but a camelCase start). Upper-case spellings
// outside ASCII (ПАРОЛЬ, ŞİFRE, HASŁO) are keys too.
func TestForeignPasswordKeysNotIdentifierKeys(t *testing.T) {
	for _, k := range []string{"passOrderId", "bypassOrder", "compassOrder", "passOrdinal", "resenha", "chosenHash",
		"chosenHandler", "loosenHandle", "closeNordic", "hasLoaded", "hasLogin"} {
		if IsSecretKey(k) {
			t.Errorf("%q: taken for a secret key", k)
		}
	}
	for _, k := range []string{"passord", "Passordet", "passord2", "dbPassord", "db_passord", "PASSORD_2", "haslo", "HASLO", "haslo_db",
		"db_haslo", "db_haslo_2", "hasło", "HASŁO", "senha", "userSenha", "USER_SENHA", "user.senha", "losenord", "db_losenord",
		"Lösenord", "Пароль", "ПАРОЛЬ", "ŞİFRE", "Şifre", "CONTRASEÑA"} {
		if !IsSecretKey(k) {
			t.Errorf("%q: not taken for a secret key", k)
		}
	}
	raw := []byte(`{"passOrderId":"998877","db_haslo":"tajne1234","ПАРОЛЬ":"секрет99"}`)
	kept := Redactor{KeepArguments: true}.Arguments(raw)
	if hashed := (Redactor{}).Arguments(raw); hashed.SHA256 != kept.SHA256 {
		t.Errorf("hash of the arguments %s, of the kept arguments %s", hashed.SHA256, kept.SHA256)
	}
	b, err := json.Marshal(kept.Value)
	if err != nil {
		t.Fatal(err)
	}
	out := string(b)
	for _, s := range []string{"tajne1234", "секрет99"} {
		if strings.Contains(out, s) {
			t.Errorf("Arguments kept %q: %s", s, out)
		}
	}
	if !strings.Contains(out, "998877") {
		t.Errorf("Arguments redacted passOrderId: %s", out)
	}
}
