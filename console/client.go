package console

import (
	"net"
	"net/netip"
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
