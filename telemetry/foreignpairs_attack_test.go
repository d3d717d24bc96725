package telemetry

import (
	"strings"
	"testing"
)

// TestAttackForeignPasswordInFreeText: a JSON argument's key "Passwort",
// "contraseña" or "密码" was known for a secret, but the same pair in free
// text (a log line, an error, a stdio server's stderr) was logged as it
// was: Passwort=hunter2. Free text is scrubbed for the same words.
func TestAttackForeignPasswordInFreeText(t *testing.T) {
	for _, tc := range []struct{ in, secret string }{
		{"login failed: Passwort=hunter2xy user=bob", "hunter2xy"},
		{"DB_KENNWORT: s3cr3tpw", "s3cr3tpw"},
		{`{"db_kennwort":"s3cr3t pass"}`, "s3cr3t pass"},
		{`config {\"mot_de_passe\":\"azerty123\"}`, "azerty123"},
		{"mot de passe : azerty123 ok", "azerty123"},
		{"contraseña: 'mi clave secreta'", "mi clave secreta"},
		{"Contrasena=clave1234", "clave1234"},
		{"Senha: abc12345", "abc12345"},
		{"user_senha=abc12345", "abc12345"},
		{"wachtwoord=geheim123", "geheim123"},
		{"hasło=tajne1234", "tajne1234"},
		{"Şifre: gizli1234", "gizli1234"},
		{"Пароль=qwerty12", "qwerty12"},
		{"密码：abc12345。", "abc12345"},
		{"パスワード=himitsu99", "himitsu99"},
		{"비밀번호: bimil1234", "bimil1234"},
		{"salasana => salainen1", "salainen1"},
	} {
		got := Scrub(tc.in)
		if strings.Contains(got, tc.secret) || !strings.Contains(got, Redacted) {
			t.Errorf("Scrub(%q) = %q: want %q redacted", tc.in, got, tc.secret)
		}
	}
	// Words that hold one of them and are not a password's key.
	for _, s := range []string{"resenha: ótimo filme", "Il passe: demain matin", "passer le test=ok"} {
		if got := Scrub(s); got != s {
			t.Errorf("Scrub(%q) = %q: want it unchanged", s, got)
		}
	}
}
