package a2a

import (
	"context"
	"fmt"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/internal/inetaton"
)

// File parts that point at a URI: the agent fetches it, from its own
// network, with its own credentials. A client that names
// http://169.254.169.254/… or file:///etc/passwd there makes the agent its
// proxy into places the client cannot reach. The gateway passes on only
// http(s) URIs of public hosts, unless the agent's allow_file_uris names
// the scheme, host or address.

// fileURIs is an agent's compiled allow_file_uris; the zero value allows
// nothing beyond public http(s) URIs.
type fileURIs struct {
	schemes  []string       // "gs", "data": any URI of the scheme
	hosts    []string       // exact host names, lower case
	suffixes []string       // ".example.com", from "*.example.com"
	prefixes []netip.Prefix // addresses
}

// compileFileURIs reads allow_file_uris: "scheme:" (gs:, s3:, data:, even
// file:), a host name, "*.domain", an IP address or a CIDR prefix.
func compileFileURIs(list []string) (*fileURIs, error) {
	f := &fileURIs{}
	for i, e := range list {
		e = strings.ToLower(strings.TrimSpace(e))
		bad := func(why string) error {
			return fmt.Errorf("allow_file_uris[%d] %q: %s; write a scheme (\"gs:\"), a host (\"files.example.com\", \"*.example.com\"), an address or a CIDR prefix", i, list[i], why)
		}
		switch {
		case e == "":
			return nil, bad("empty")
		case strings.HasSuffix(e, ":") && !strings.Contains(e, "/"):
			s := strings.TrimSuffix(e, ":")
			if s == "" || strings.Trim(s, "abcdefghijklmnopqrstuvwxyz0123456789+-.") != "" {
				return nil, bad("not a scheme")
			}
			f.schemes = append(f.schemes, s)
		case strings.Contains(e, "/"):
			p, err := netip.ParsePrefix(e)
			if err != nil {
				return nil, bad("not a CIDR prefix")
			}
			f.prefixes = append(f.prefixes, p.Masked())
		default:
			if ip, err := netip.ParseAddr(e); err == nil {
				f.prefixes = append(f.prefixes, netip.PrefixFrom(ip.Unmap(), ip.Unmap().BitLen()))
				continue
			}
			if s, ok := strings.CutPrefix(e, "*."); ok {
				e = "." + s
			}
			if strings.Trim(e, "abcdefghijklmnopqrstuvwxyz0123456789-.") != "" || strings.Contains(e, "*") {
				return nil, bad("not a host name")
			}
			if strings.HasPrefix(e, ".") {
				f.suffixes = append(f.suffixes, strings.TrimSuffix(e, "."))
			} else {
				f.hosts = append(f.hosts, strings.TrimSuffix(e, "."))
			}
		}
	}
	return f, nil
}

// A host name in a file URI is resolved to see where it leads: one lookup
// each, from the gateway, while the message waits. One message may carry
// thousands of parts, each naming another host of a domain whose server
// answers slowly, so the names of one message are looked up each once,
// at most maxFileHosts of them, all within fileLookupTime and the
// request (a client that hangs up ends them).
const (
	maxFileHosts   = 16
	fileLookupTime = 2 * time.Second
)

// hostChecks are the host name lookups of one message's file URIs.
type hostChecks struct {
	ctx    context.Context // the request's, then bounded by fileLookupTime
	cancel context.CancelFunc
	seen   map[string]string // host -> why not, or ""
	what   string            // where the message names hosts
	// allowed are addresses let through (an agent's AllowPushAddresses).
	allowed []netip.Prefix
}

func newHostChecks(ctx context.Context) *hostChecks {
	return &hostChecks{ctx: ctx, what: "its file URIs"}
}

// private says why host, a name, must not be fetched, or "".
func (h *hostChecks) private(host string) string {
	if why, ok := h.seen[host]; ok {
		return why
	}
	if len(h.seen) >= maxFileHosts {
		return fmt.Sprintf("a host name past the %d one message may name in %s", maxFileHosts, h.what)
	}
	if h.cancel == nil {
		h.ctx, h.cancel = context.WithTimeout(h.ctx, fileLookupTime)
	}
	why := privateHostAllowing(h.ctx, host, h.allowed)
	if h.seen == nil {
		h.seen = map[string]string{}
	}
	h.seen[host] = why
	return why
}

// done ends the lookups' deadline.
func (h *hostChecks) done() {
	if h.cancel != nil {
		h.cancel()
	}
}

// check says why uri must not go to the agent as a file part's, or "";
// host names are looked up through h.
func (f *fileURIs) check(h *hostChecks, uri string) string {
	for _, c := range uri {
		// Parsers disagree on these: a WHATWG parser drops tabs and
		// newlines and reads '\' as '/', Go refuses some, Python keeps
		// others. Whoever reads it, it is not what was checked.
		if c <= ' ' || c == 0x7f || c == '\\' {
			return "spaces, control characters or backslashes"
		}
	}
	u, err := url.Parse(uri)
	if err != nil {
		return "not a URI"
	}
	scheme := strings.ToLower(u.Scheme)
	for _, s := range f.schemes {
		if scheme == s {
			return ""
		}
	}
	if scheme != "http" && scheme != "https" {
		if scheme == "" {
			return "not an absolute URI"
		}
		return "a " + scheme + ": URI (only http and https reach the agent)"
	}
	if u.Opaque != "" || u.Host == "" {
		return "an http(s) URI without a host"
	}
	if u.User != nil {
		// "http://public.example@127.0.0.1/": readers disagree on which
		// is the host; and credentials have no place in a file's URI.
		return "user information before its host"
	}
	host := strings.ToLower(u.Hostname())
	for _, c := range host {
		if c >= 0x80 {
			return "a host name that is not ASCII (write its xn-- form)"
		}
	}
	host = strings.TrimSuffix(host, ".")
	if host == "" {
		return "an http(s) URI without a host"
	}
	ip, err := netip.ParseAddr(host)
	if err != nil && inetaton.EndsInNumber(host) {
		// 2130706433, 0x7f.1, 0177.0.0.1, 127.1: what browsers and
		// inet_aton (so curl and Python) read as IPv4.
		var ok bool
		if ip, ok = inetaton.Parse(host); !ok {
			return "a malformed IP address"
		}
		err = nil
	}
	if err == nil {
		ip = ip.WithZone("")
		for _, p := range f.prefixes {
			if p.Contains(ip.Unmap()) {
				return ""
			}
		}
		if why := privateHost(ip.String()); why != "" {
			return why
		}
		return ""
	}
	for _, h := range f.hosts {
		if host == h {
			return ""
		}
	}
	for _, s := range f.suffixes {
		if strings.HasSuffix(host, s) {
			return ""
		}
	}
	if !strings.Contains(host, ".") {
		return "a single-label host name (the agent's network resolves it)"
	}
	for _, s := range internalSuffixes {
		if strings.HasSuffix(host, s) {
			return "an internal host name (" + s + ")"
		}
	}
	return h.private(host)
}

// internalSuffixes are domains that name hosts inside a network
// (metadata.google.internal, printer.local, *.home.arpa).
var internalSuffixes = []string{".localhost", ".local", ".internal", ".intranet", ".lan", ".localdomain", ".home.arpa", ".corp", ".private"}

// checkPart refuses a part (or its v0.3 file) carrying a URI the agent
// must not be sent to fetch: every member whose name says it holds one
// (uri, url, fileWithUri, file_with_uri…), whichever an agent reads.
func (f *fileURIs) checkPart(part jsontext.Value) error {
	h := newHostChecks(context.Background())
	defer h.done()
	return f.checkPartIn(h, part)
}

// checkPartIn is checkPart with the lookups of a message, h.
func (f *fileURIs) checkPartIn(h *hostChecks, part jsontext.Value) error {
	if f == nil {
		f = &fileURIs{}
	}
	var bad error
	for _, v := range []jsontext.Value{part, intercept.Member(part, "file")} {
		if v.Kind() != '{' {
			continue
		}
		_ = intercept.EachMember(v, func(k string, m jsontext.Value) error {
			name := strings.ToLower(k)
			if bad != nil || !strings.Contains(name, "uri") && !strings.Contains(name, "url") {
				return nil
			}
			if m.Kind() != '"' {
				bad = fmt.Errorf("file %s is not a string", k)
				return nil
			}
			s := unquote(m)
			if s == "" {
				return nil // none
			}
			if why := f.check(h, s); why != "" {
				bad = fmt.Errorf("file %s %q names %s; the gateway does not let a message send the agent to fetch it (agents[].allow_file_uris)", k, s, why)
			}
			return nil
		})
	}
	return bad
}
