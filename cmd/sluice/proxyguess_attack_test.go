package main

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"
)

// TestAttackTrustedPeerMintsGuessers: with a reverse proxy on the
// gateway's host (trusted_proxies: [127.0.0.1], as the sign-in tests set
// it up), every process on the host is that proxy to the admin listener.
// An agent there, the guesser the console and admin API throttle as one
// client ("loopback"), wrote a fresh X-Forwarded-For at each wrong token
// and each was counted against a client of its own: 5 guesses a minute
// became one allowance per address it named (the table of counts holds
// 10,000), so a chosen admin token could be guessed at speed again. What
// one trusted peer sends, whoever it forwards for, now has a ceiling of
// its own.
func TestAttackTrustedPeerMintsGuessers(t *testing.T) {
	g := startServe(t, holdAdd+"admin_token: t0k\ntrusted_proxies: [127.0.0.1]\n")
	base := "http://" + g.admin
	forged := func(i int) string { return fmt.Sprintf("198.51.%d.%d", i/250, i%250+1) }
	for _, c := range []struct {
		name  string
		guess func(i int) int
	}{
		{"admin API", func(i int) int {
			return adminDo(t, "GET", base+"/admin/approvals", "", "", map[string]string{
				"Authorization": "Bearer guess", "X-Forwarded-For": forged(i)})
		}},
		{"console", func(i int) int {
			return adminDo(t, "POST", base+"/console/login", "application/x-www-form-urlencoded",
				url.Values{"name": {"mallory"}, "token": {"guess"}}.Encode(), map[string]string{"X-Forwarded-For": forged(i)})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			const tries = 200
			for i := range tries {
				if c.guess(i) == http.StatusTooManyRequests {
					return
				}
			}
			t.Errorf("%d wrong tokens from one local peer, each naming another client in X-Forwarded-For: never throttled (429)", tries)
		})
	}
}
