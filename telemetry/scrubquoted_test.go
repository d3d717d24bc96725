package telemetry

import (
	"strings"
	"testing"
)

// TestScrubQuotedCommandLinePassword: a shell quotes a password with
// spaces or shell characters (mysql -p'…', sshpass -p "…"); the value
// scrubbers took only an unquoted one, and the quoted one was kept whole.
func TestScrubQuotedCommandLinePassword(t *testing.T) {
	for _, tt := range []struct{ text, secret, kept string }{
		{`mysql -u root -p'hunter2 hunter2' shop`, "hunter2", "shop"},
		{`mariadb -p"S3cr3t!x" -h db`, "S3cr3t!x", "-h db"},
		{`sshpass -p 'correct horse' ssh deploy@host`, "horse", "ssh deploy@host"},
		{`sshpass -p"tr0ub4dor&3" ssh deploy@host`, "tr0ub4dor", "ssh deploy@host"},
		{`mysql -p'cut off`, "cut off", "mysql -p"},
		{`mysql -p''hunter2 shop`, "hunter2", "shop"},
		{`mysql -p"ab"cd"ef" shop`, "cd", "shop"},
	} {
		once := Scrub(tt.text)
		if strings.Contains(once, tt.secret) || !strings.Contains(once, tt.kept) {
			t.Errorf("Scrub(%q) = %q: want %q gone and %q kept", tt.text, once, tt.secret, tt.kept)
		}
		if twice := Scrub(once); twice != once {
			t.Errorf("Scrub not stable: %q, then %q", once, twice)
		}
	}
}

// TestScrubCommandLineInJSON: a command line ending in -p inside a JSON
// string is not taken for a quoted password: the JSON around it stays.
func TestScrubCommandLineInJSON(t *testing.T) {
	for _, text := range []string{
		`{"command":"mysql -u root -p","db":"shop"}`,
		`["sshpass -p","x"]`,
		`{"cmd":"mysql -p"}`,
	} {
		if got := Scrub(text); got != text {
			t.Errorf("Scrub(%q) = %q, want it unchanged", text, got)
		}
	}
}
