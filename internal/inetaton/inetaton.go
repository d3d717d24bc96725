// Package inetaton reads a host name as the WHATWG URL standard, browsers
// and inet_aton (so curl and Python) do when its last label is a number:
// as an IPv4 address in any of its forms — 2130706433, 0x7f.1,
// 0177.0.0.1, 127.1 — which a literal comparison of host names misses.
package inetaton

import (
	"net/netip"
	"strconv"
	"strings"
)

// EndsInNumber reports whether host's last label is a decimal number or a
// 0x hex one: then host is read as an IPv4 address (Parse), never as a
// name (the WHATWG "ends in a number" check).
func EndsInNumber(host string) bool {
	last := host[strings.LastIndexByte(host, '.')+1:]
	if last == "" {
		return false
	}
	if strings.Trim(last, "0123456789") == "" {
		return true
	}
	_, ok := part(last)
	return ok && (strings.HasPrefix(last, "0x") || strings.HasPrefix(last, "0X"))
}

// Parse reads host as one to four parts, each decimal, octal (leading 0)
// or hex (0x), the last filling the remaining bytes; ok is false when it
// is no IPv4 address so spelt.
func Parse(host string) (netip.Addr, bool) {
	parts := strings.Split(host, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var n [4]uint64
	for i, p := range parts {
		v, ok := part(p)
		if !ok {
			return netip.Addr{}, false
		}
		n[i] = v
	}
	last := n[len(parts)-1]
	if last >= 1<<(8*(5-len(parts))) {
		return netip.Addr{}, false
	}
	addr := last
	for i, v := range n[:len(parts)-1] {
		if v > 255 {
			return netip.Addr{}, false
		}
		addr |= v << (8 * (3 - i))
	}
	return netip.AddrFrom4([4]byte{byte(addr >> 24), byte(addr >> 16), byte(addr >> 8), byte(addr)}), true
}

// part reads one part: decimal, 0x hex ("0x" alone is 0) or 0 octal.
func part(p string) (uint64, bool) {
	base := 10
	switch {
	case len(p) >= 2 && (p[:2] == "0x" || p[:2] == "0X"):
		p, base = p[2:], 16
		if p == "" {
			return 0, true
		}
	case len(p) >= 2 && p[0] == '0':
		p, base = p[1:], 8
	case p == "":
		return 0, false
	}
	v, err := strconv.ParseUint(p, base, 64)
	return v, err == nil && v < 1<<32
}
