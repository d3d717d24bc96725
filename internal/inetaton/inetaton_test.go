package inetaton

import "testing"

func TestParse(t *testing.T) {
	for _, tt := range []struct {
		host string
		want string // "" for no address
	}{
		{"127.0.0.1", "127.0.0.1"}, {"2130706433", "127.0.0.1"}, {"0x7f000001", "127.0.0.1"}, {"0X7F.1", "127.0.0.1"},
		{"0177.0.0.1", "127.0.0.1"}, {"127.1", "127.0.0.1"}, {"0xa9.0xfe.0xa9.0xfe", "169.254.169.254"}, {"0", "0.0.0.0"},
		{"0x", "0.0.0.0"}, {"1.2.3.4.5", ""}, {"256.1.1.1", ""}, {"1.2.3.256", ""}, {"4294967296", ""}, {"1..2", ""},
		{"09.1.1.1", ""}, {"0xg.1", ""},
	} {
		ip, ok := Parse(tt.host)
		if got := map[bool]string{true: ip.String(), false: ""}[ok]; got != tt.want {
			t.Errorf("Parse(%q) = %q, want %q", tt.host, got, tt.want)
		}
	}
	for host, want := range map[string]bool{"a.b.7": true, "x.0x1f": true, "example.com": false, "1.2.3.": false, "0xg": false, "x.0X1F": true} {
		if got := EndsInNumber(host); got != want {
			t.Errorf("EndsInNumber(%q) = %v, want %v", host, got, want)
		}
	}
}
