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
// as: its IPv4 address, or its IPv6 /64 (one host's share of a network),
// and Loopback for every loopback address. On Linux an agent on the
// gateway's host connects from whichever of 127.0.0.0/8 it likes (::1
// and ::ffff:127.x too): each was a client of its own to every bound
// counted by address, held approvals, list cursors, requestStates, task
// owners and sessions, and enough of them filled the gateway's tables
// (TestAttackLoopbackAddressesFillApprovals).
func Client(remoteAddr string) string {
	ap, err := netip.ParseAddrPort(remoteAddr)
	if err != nil {
		return remoteAddr
	}
	if a := ap.Addr(); a.Is4() && !a.IsLoopback() {
		// As written: ParseAddrPort takes an IPv4 address only in its one
		// dotted-decimal form (no leading zeros, no zone), so this is
		// Addr.String without formatting a string for every request.
		return remoteAddr[:strings.LastIndexByte(remoteAddr, ':')]
	}
	return key(ap.Addr())
}

// Loopback is the client every loopback address counts as (Client).
const Loopback = "loopback"

// key is Client of an address.
func key(a netip.Addr) string {
	a = a.Unmap()
	if a.IsLoopback() {
		return Loopback
	}
	if a.Is4() {
		return a.String()
	}
	p, err := a.WithZone("").Prefix(64)
	if err != nil {
		return a.String()
	}
	return p.String()
}

// MaxForwardHops bounds the X-Forwarded-For entries Behind looks at: a
// chain of more trusted proxies than this is taken as malformed.
const MaxForwardHops = 16

// Behind is the client a request from remoteAddr counts as when
// reverse proxies stand in front of the gateway: trusted are the
// proxies' addresses and forwardedFor the request's X-Forwarded-For
// header lines, in order. From a trusted peer, the client is the last
// address of the header that is not itself a trusted proxy: each proxy
// appends the address it was reached from, so what a client writes in
// the header comes before that and is never taken unless only trusted
// proxies stand after it. From any other peer the header is the
// client's own word and is ignored: Client(remoteAddr). A header that
// is missing, malformed where it is read or longer than MaxForwardHops
// trusted hops leaves the request counted as the last trusted hop read
// (the proxy that can be told apart, never a client's claim).
func Behind(remoteAddr string, forwardedFor []string, trusted []netip.Prefix) string {
	if len(trusted) == 0 {
		return Client(remoteAddr)
	}
	a, ok := forwarded(remoteAddr, forwardedFor, trusted)
	if !ok {
		return Client(remoteAddr)
	}
	return key(a)
}

// GuesserBehind is Guesser of the client Behind finds: the one a sign-in
// attempt through a trusted proxy is counted under.
func GuesserBehind(remoteAddr string, forwardedFor []string, trusted []netip.Prefix) string {
	return Behind(remoteAddr, forwardedFor, trusted)
}

// Forwarded is the address of the client a request from remoteAddr came
// from, as Behind finds it (the address itself, not its key), for logs
// and events; remoteAddr as it is when it is not a trusted proxy's.
func Forwarded(remoteAddr string, forwardedFor []string, trusted []netip.Prefix) string {
	if len(trusted) == 0 {
		return remoteAddr
	}
	ap, err := netip.ParseAddrPort(remoteAddr)
	if err != nil || !Trusted(trusted, ap.Addr()) {
		return remoteAddr
	}
	a, _ := forwarded(remoteAddr, forwardedFor, trusted)
	return a.String()
}

// ProxyGuessers is how many clients' worth of wrong sign-in tokens a
// minute one trusted proxy passes on, whoever it names (Via).
const ProxyGuessers = 10

// Via is the key the wrong sign-in tokens of every client behind the
// trusted proxy remoteAddr count against together, up to ProxyGuessers
// clients' allowance: "" when remoteAddr is not a trusted proxy. A peer
// trusted to name its clients can name a fresh one at every guess (an
// agent on a proxy's host connects from its address), so what it sends
// has a ceiling besides each client's own; its Guesser key, so that all
// of loopback is one proxy.
func Via(remoteAddr string, trusted []netip.Prefix) string {
	ap, err := netip.ParseAddrPort(remoteAddr)
	if err != nil || !Trusted(trusted, ap.Addr()) {
		return ""
	}
	return "\x00via " + Guesser(remoteAddr)
}

// forwarded is the client address Behind keys, false if remoteAddr is not
// an address.
func forwarded(remoteAddr string, forwardedFor []string, trusted []netip.Prefix) (netip.Addr, bool) {
	ap, err := netip.ParseAddrPort(remoteAddr)
	if err != nil {
		return netip.Addr{}, false
	}
	last := ap.Addr().Unmap()
	if !Trusted(trusted, last) {
		return last, true
	}
	hops := 0
	for i := len(forwardedFor) - 1; i >= 0; i-- {
		line := forwardedFor[i]
		for line != "" {
			entry := line
			if c := strings.LastIndexByte(line, ','); c >= 0 {
				entry, line = line[c+1:], line[:c]
			} else {
				line = ""
			}
			a, ok := forwardedAddr(strings.TrimSpace(entry))
			if !ok {
				return last, true
			}
			if !Trusted(trusted, a) {
				return a, true
			}
			last = a
			if hops++; hops == MaxForwardHops {
				return last, true
			}
		}
	}
	return last, true
}

// forwardedAddr parses an X-Forwarded-For entry: an address, or an
// address and port (IPv6 in brackets), as proxies write them.
func forwardedAddr(s string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(s); err == nil && a.Zone() == "" {
		return a.Unmap(), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil && ap.Addr().Zone() == "" {
		return ap.Addr().Unmap(), true
	}
	if len(s) > 2 && s[0] == '[' && s[len(s)-1] == ']' {
		return forwardedAddr(s[1 : len(s)-1])
	}
	return netip.Addr{}, false
}

// Trusted reports whether a is in one of prefixes (an IPv4-mapped IPv6
// address as its IPv4 one).
func Trusted(prefixes []netip.Prefix, a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Guesser is the client a sign-in attempt from remoteAddr is counted
// under: Client, every loopback address one client, which would
// otherwise get a sign-in guesser's allowance from each.
func Guesser(remoteAddr string) string {
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
	if _, ok := m[key]; ok || len(m) < MaxCounted || key == Loopback {
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
