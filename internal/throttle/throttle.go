// Package throttle keys and bounds what is counted per client: the
// gateway's sessions per client, the console's and admin API's failed
// sign-ins.
package throttle

import (
	"net/netip"
	"strings"
	"time"
)

// Client is the client a connection from remoteAddr (host:port) counts
// as: its IPv4 address, or its IPv6 /64 (one host's share of a network).
func Client(remoteAddr string) string {
	ap, err := netip.ParseAddrPort(remoteAddr)
	if err != nil {
		return remoteAddr
	}
	if ap.Addr().Is4() {
		// As written: ParseAddrPort takes an IPv4 address only in its one
		// dotted-decimal form (no leading zeros, no zone), so this is
		// Addr.String without formatting a string for every request.
		return remoteAddr[:strings.LastIndexByte(remoteAddr, ':')]
	}
	a := ap.Addr().Unmap()
	if a.Is4() {
		return a.String()
	}
	p, err := a.WithZone("").Prefix(64)
	if err != nil {
		return a.String()
	}
	return p.String()
}

// Guesser is Client with every loopback address one client: on Linux an
// agent on the host can connect from any of 127.0.0.0/8, and would
// otherwise get a sign-in guesser's allowance from each.
func Guesser(remoteAddr string) string {
	if ap, err := netip.ParseAddrPort(remoteAddr); err == nil && ap.Addr().Unmap().IsLoopback() {
		return "loopback"
	}
	return Client(remoteAddr)
}

// MaxCounted bounds the clients whose failures are counted.
const MaxCounted = 10_000

// Slot is the key a client's failures are counted under in m, a table of
// at most MaxCounted: key itself while there is room (counts older than
// a minute are dropped to make some), else one slot all the newcomers
// share — a flood of fresh addresses (an IPv6 /48 holds 65,536 /64s)
// then shares one allowance instead of wiping everyone's count. Loopback
// (the operator's own host) never shares it. since is when a count began.
func Slot[F any](m map[string]*F, key string, now time.Time, since func(*F) time.Time) string {
	if _, ok := m[key]; ok || len(m) < MaxCounted || key == "loopback" {
		return key
	}
	for k, f := range m {
		if now.Sub(since(f)) > time.Minute {
			delete(m, k)
		}
	}
	if len(m) < MaxCounted {
		return key
	}
	return "\x00overflow" // no address's key
}
