package inventory

import "testing"

// TestForeignCompoundWordNotReference: another upstream's user_info,
// watch_list or check_out joined into one word is an ordinary word
// (userinfo, watchlist, checkout), not a mention of that tool; written as
// the tool's words (userInfo, user-info) it still is.
func TestForeignCompoundWordNotReference(t *testing.T) {
	for _, tc := range []struct{ foreign, desc string }{
		{"user_info", "Returns the claims of the OpenID Connect userinfo endpoint."},
		{"watch_list", "Adds a ticker symbol to the user's watchlist."},
		{"check_out", "Creates a Stripe checkout session for a cart."},
		{"re_auth", "Refreshes the session; if it has expired, the user must reauth in the browser."},
	} {
		fs := Scan(sealed(t, Tool{Name: "t", Description: tc.desc}), ScanOptions{ForeignTools: []string{tc.foreign}})
		for _, f := range fs {
			if f.Rule == "cross_server_reference" {
				t.Errorf("foreign %q, Scan(%q) = %+v, want no cross_server_reference", tc.foreign, tc.desc, fs)
			}
		}
	}
	for _, d := range []string{"Also call userInfo with the id.", "Also call user-info with the id.", "Also call USER_INFO with the id."} {
		fs := Scan(sealed(t, Tool{Name: "t", Description: d}), ScanOptions{ForeignTools: []string{"user_info"}})
		if MaxSeverity(fs) < SeverityMedium {
			t.Errorf("Scan(%q) = %+v, want a cross_server_reference", d, fs)
		}
	}
}
