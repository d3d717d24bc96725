package telemetry

import (
	"strings"
	"testing"
)

// TestForeignPasswordKeysNotIdentifiers: the ASCII spellings of Polish
// hasło and Norwegian passord begin ordinary camelCase names (hasLoaded,
// hasLocation, passOrderId, bypassOrder), whose values were redacted as
// passwords; those keys are taken as they are written, with what a key
// appends after a digit or separator (haslo_db, passord2). Turkish
// ŞİFRE, upper case with the dotted İ, is a key too.
func TestForeignPasswordKeysNotIdentifiers(t *testing.T) {
	for _, s := range []string{
		"hasLoaded: true",
		`{"hasLocation":"Paris"}`,
		"hasLogo=true hasLock=false",
		"bypassOrder=12345",
		"passOrderId: 998877",
	} {
		if got := Scrub(s); got != s {
			t.Errorf("Scrub(%q) = %q: want it unchanged", s, got)
		}
	}
	for _, tc := range []struct{ in, secret string }{
		{"haslo=tajne1234", "tajne1234"},
		{"HASLO: tajne1234", "tajne1234"},
		{"db_haslo_2=tajne1234", "tajne1234"},
		{`{"haslo":"tajne 1234"}`, "tajne 1234"},
		{"hasłem: tajne1234", "tajne1234"},
		{"passord=hemmelig1", "hemmelig1"},
		{"Passordet: hemmelig1", "hemmelig1"},
		{"PASSORD2=hemmelig1", "hemmelig1"},
		{"ŞİFRE: gizli1234", "gizli1234"},
	} {
		if got := Scrub(tc.in); strings.Contains(got, tc.secret) || !strings.Contains(got, Redacted) {
			t.Errorf("Scrub(%q) = %q: want %q redacted", tc.in, got, tc.secret)
		}
	}
}
