package policy

import (
	"errors"
	"fmt"
	"net/mail"
	"net/netip"
	"net/url"
	"path"
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"golang.org/x/net/idna"

	"github.com/sluicehq/sluice/internal/inetaton"
)

// Conditions compare strings literally, and a path, URL or e-mail address
// can be spelt so that a literal comparison and the upstream read it
// differently: /srv/public/../../etc/shadow starts with /srv/public/,
// https://allowed.example@evil.test/ holds allowed.example, bob@EVIL.test
// does not end with @evil.test. These functions give a condition the form
// the upstream acts on; input they cannot read is an error, which denies.
//
//	path_clean(s)    s with . and .. segments resolved and repeated
//	                 slashes joined, lexically (path.Clean), \ read as / (a
//	                 Windows server's separator); no final slash ("/" stays);
//	                 a relative path stays relative; NUL is an error
//	url_host(s)      the host an http(s) client connects to: the URL is
//	                 parsed as a WHATWG parser reads it (surrounding spaces
//	                 dropped, \ as / in special schemes), user info and port
//	                 left out, lower case, one final dot dropped, IDNA to
//	                 ASCII (Bücher.example is xn--bcher-kva.example,
//	                 ＥＶＩＬ.test evil.test), an IPv4 address in any form
//	                 browsers and inet_aton accept (0x7f.1, 2130706433) in
//	                 dotted decimal, IPv6 without brackets in its short form
//	                 (IPv4-mapped, [::ffff:127.0.0.1], as IPv4);
//	                 a URL without a host, or one that does not parse (a
//	                 percent-escape in the host, a control character), is
//	                 an error
//	email_domain(s)  the domain of one RFC 5322 address (net/mail: a display
//	                 name, "quoted@local"@part and comments allowed), in the
//	                 form url_host gives; not exactly one address is an error

func celFuncs() cel.EnvOption {
	unary := func(name string, fn func(string) (string, error)) cel.EnvOption {
		return cel.Function(name, cel.Overload(name+"_string", []*cel.Type{cel.StringType}, cel.StringType,
			cel.UnaryBinding(func(v ref.Val) ref.Val {
				s, ok := v.Value().(string)
				if !ok {
					return types.MaybeNoSuchOverloadErr(v)
				}
				out, err := fn(s)
				if err != nil {
					return types.NewErr("%s: %v", name, err)
				}
				return types.String(out)
			})))
	}
	return cel.Lib(funcLib{unary("path_clean", pathClean), unary("url_host", urlHost), unary("email_domain", emailDomain)})
}

type funcLib []cel.EnvOption

func (l funcLib) CompileOptions() []cel.EnvOption     { return l }
func (l funcLib) ProgramOptions() []cel.ProgramOption { return nil }

func pathClean(s string) (string, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return "", errors.New("the path holds NUL")
	}
	if s == "" {
		return "", errors.New("the path is empty")
	}
	return path.Clean(strings.ReplaceAll(s, `\`, "/")), nil
}

func urlHost(s string) (string, error) {
	s = strings.TrimFunc(s, func(r rune) bool { return r <= ' ' }) // WHATWG: C0 controls and space
	scheme, _, _ := strings.Cut(s, ":")
	switch strings.ToLower(scheme) {
	case "http", "https", "ws", "wss", "ftp", "file":
		// A special scheme: \ is /, so https://evil.test\@allowed.example
		// goes to evil.test.
		s = strings.ReplaceAll(s, `\`, "/")
	}
	// The host is in the authority alone; what follows it (a path with a
	// bare %, as in /50%-off, which Go refuses and browsers send as it
	// is; a query; a fragment) is no reason to fail.
	if rest, ok := strings.CutPrefix(s[len(scheme):], "://"); ok {
		if i := strings.IndexAny(rest, "/?#"); i >= 0 {
			s = s[:len(scheme)+3+i]
		}
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", err
	}
	if u.Host == "" {
		return "", fmt.Errorf("%q has no host", s)
	}
	return normHost(u.Hostname())
}

// hostProfile maps a host as WHATWG URL parsers do (UTS #46, not
// transitional, without the STD3 rules, so that my_host is a host).
var hostProfile = idna.New(idna.MapForLookup(), idna.Transitional(false), idna.StrictDomainName(false),
	idna.CheckHyphens(false), idna.CheckJoiners(true), idna.BidiRule())

// normHost is a host or domain in the form url_host gives.
func normHost(h string) (string, error) {
	if strings.Contains(h, ":") {
		a, err := netip.ParseAddr(h)
		if err != nil {
			return "", fmt.Errorf("host %q: %w", h, err)
		}
		// An IPv4-mapped address reaches that IPv4 address.
		return a.WithZone("").Unmap().String(), nil
	}
	a, err := hostProfile.ToASCII(h)
	if err != nil {
		return "", fmt.Errorf("host %q: %w", h, err)
	}
	a = strings.ToLower(strings.TrimSuffix(a, "."))
	if a == "" {
		return "", fmt.Errorf("host %q is empty", h)
	}
	if ip, ok, err := ipv4(a); ok {
		return ip, err
	}
	return a, nil
}

// ipv4 reads a host whose last label is a number as an IPv4 address, as
// the WHATWG URL parser and inet_aton do (package inetaton); ok is false
// for a host that is a name.
func ipv4(h string) (ip string, ok bool, err error) {
	if !inetaton.EndsInNumber(h) {
		return "", false, nil
	}
	a, good := inetaton.Parse(h)
	if !good {
		return "", true, fmt.Errorf("host %q ends in a number but is no IPv4 address", h)
	}
	return a.String(), true, nil
}

func emailDomain(s string) (string, error) {
	a, err := mail.ParseAddress(s)
	if err != nil {
		return "", err
	}
	at := strings.LastIndexByte(a.Address, '@')
	if at < 0 {
		return "", fmt.Errorf("%q has no domain", s)
	}
	return normHost(a.Address[at+1:])
}
