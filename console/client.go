package console

import (
	"net"
	"net/netip"
	"time"
)

// ClientKey is whom failed sign-ins are counted against: the address of
// remoteAddr (host:port), with every loopback address one client (on
// Linux an agent on the host can connect from any of 127.0.0.0/8, and
// would otherwise get five guesses a minute from each) and an IPv6
// address its /64.
func ClientKey(remoteAddr string) string {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	a = a.Unmap()
	switch {
	case a.IsLoopback():
		return "loopback"
	case a.Is6():
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}

// MaxThrottled bounds the clients whose failed sign-ins are counted.
const MaxThrottled = 10_000

// ThrottleSlot is the key a client's failures are counted under in m, a
// table of at most MaxThrottled: key itself while there is room (counts
// older than a minute are dropped to make some), else one slot all the
// newcomers share. A flood of fresh addresses (an IPv6 /48 holds 65,536
// /64s) then shares five guesses a minute instead of clearing everyone's
// count. since is when a count began.
func ThrottleSlot[F any](m map[string]*F, key string, now time.Time, since func(*F) time.Time) string {
	if _, ok := m[key]; ok || len(m) < MaxThrottled || key == "loopback" {
		// Loopback (the operator's own host) never shares the newcomers'
		// slot: a flood from afar must not lock it out.
		return key
	}
	for k, f := range m {
		if now.Sub(since(f)) > time.Minute {
			delete(m, k)
		}
	}
	if len(m) < MaxThrottled {
		return key
	}
	return "\x00overflow" // no address's key
}
