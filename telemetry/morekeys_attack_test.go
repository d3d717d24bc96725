package telemetry

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestAttackMoreSecretNamesAndShapes: arguments an agent sends with a
// credential under a key none of the secret words named (a wallet's
// recovery phrase, an Azure API Management subscription key, a PGP key),
// and credentials in a command line or text whose shape no scrubber knew
// (a MySQL password glued to -p, sshpass -p, an age secret key, a
// DigitalOcean token), were recorded whole.
func TestAttackMoreSecretNamesAndShapes(t *testing.T) {
	args := `{"mnemonic":"abandon ability able about above absent absorb abstract absurd abuse access accident",` +
		`"seed_phrase":"legal winner thank year wave sausage worth useful legal winner thank yellow",` +
		`"Ocp-Apim-Subscription-Key":"0123456789abcdef0123456789abcdef",` +
		`"pgp_key":"lQOYBGXsecretmaterial","priv_key":"5HueCGU8rMjxEXxiPuD5BDku4MkFqeZyd4dZ1jvhTVqvbTLvyTJ"}`
	kept := Redactor{KeepArguments: true}.Arguments([]byte(args))
	b, _ := json.Marshal(kept.Value)
	for _, secret := range []string{"absurd abuse", "sausage worth", "0123456789abcdef0123456789abcdef", "lQOYBGXsecretmaterial", "5HueCGU8rMjxEXxiPuD5BDku4MkFqeZyd4dZ1jvhTVqvbTLvyTJ"} {
		if strings.Contains(string(b), secret) {
			t.Errorf("kept arguments hold %q: %s", secret, b)
		}
	}
	for _, tt := range []struct{ text, secret, kept string }{
		{"mysql -u root -phunter2hunter2 shop", "hunter2hunter2", "mysql -u root -p"},
		{"mysqldump --user=root -pS3cr3t! shop > dump.sql", "S3cr3t!", "shop > dump.sql"},
		{"sshpass -p hunter2hunter2 ssh deploy@host", "hunter2hunter2", "ssh deploy@host"},
		{"AGE-SECRET-KEY-1QYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQS3290GG", "QYQSZQGPQYQSZQGP", ""},
		{"DO token dop_v1_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "0123456789abcdef0123", "DO token"},
	} {
		got := Scrub(tt.text)
		if strings.Contains(got, tt.secret) || !strings.Contains(got, tt.kept) {
			t.Errorf("Scrub(%q) = %q: want %q gone and %q kept", tt.text, got, tt.secret, tt.kept)
		}
	}
	// Ports and names stay: -p is a port to ssh, a path to mkdir.
	for _, text := range []string{"ssh -p 2222 deploy@host", "mkdir -p /tmp/a/b", "mysql -u root -p shop", "the mnemonic device"} {
		if got := Scrub(text); got != text {
			t.Errorf("Scrub(%q) = %q, want it unchanged", text, got)
		}
	}
}
