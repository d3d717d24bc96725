package policy

import (
	"net/url"
	"path"
	"strings"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/internal/inetaton"
)

// Reads (resources/read and prompts/get) are decided like tools, under
// names that cannot be a tool's: resource:URI and prompt:NAME, as the
// interceptor builds them. tool_classes, match_tool and the allow, deny and
// require_approval lists take these names, pinned to an upstream like
// tools (docs/resource:file:///a). In tool_classes only, a name ending in
// * classifies every resource or prompt whose name starts with the rest
// (resource:file:///srv/secret/*); the longest such prefix applies, and an
// exact name beats every prefix. A read no rule decides gets default_read
// (allow unless set), not default.
//
// A resource URI is compared in a normal form — scheme and host in lower
// case, percent-encoding decoded, dot segments removed — on both sides, so
// that file:///srv/public/../secret/x does not escape a prefix of
// file:///srv/secret/. What a server makes of a URI beyond that (symbolic
// links, case-insensitive file systems) the gateway cannot see.

// prefixClass is a tool_classes entry ending in *.
type prefixClass struct {
	upstream string // "" for every upstream
	prefix   string // the action name's prefix, normalised
	classes  []string
}

// isRead reports whether name is a read's action name.
func isRead(name string) bool {
	return strings.HasPrefix(name, intercept.ResourcePrefix) || strings.HasPrefix(name, intercept.PromptPrefix)
}

// actionName is the name policy matches d under, and whether d is a read.
// A descriptor without a method is a read when its name says so (events
// replayed from the audit log, `sluice policy explain resource:…`).
// reserved is set for a tools/call whose tool name is a read's name or a
// carry's (mcp:…).
func actionName(d *intercept.ActionDescriptor) (name string, read, reserved bool) {
	name = nfc(d.ToolName)
	switch d.Method {
	case "", "resources/read", "prompts/get":
		read = isRead(name)
	case "tools/call":
		return name, false, isRead(name) || strings.HasPrefix(name, intercept.CarryPrefix)
	default: // a carry (carry.go), or a method policy does not know
		return name, false, isRead(name)
	}
	if read {
		name = normRead(name)
	}
	return name, read, false
}

// ActionName is the name policy matches d under: a tool's name, or a
// read's name (resource:URI, prompt:NAME) in the normal form above, all
// in NFC. Other deciders that match names (rate limits) use it, so that a
// spelling policy treats as the same read is the same read to them.
func ActionName(d *intercept.ActionDescriptor) string {
	name, _, _ := actionName(d)
	return name
}

// NormalName is a name written in configuration (a rule's pattern) in
// the form ActionName gives. A read's name ending in * is a prefix, put
// in normal form without its * as tool_classes' prefixes are: a URI's
// serialisation escapes a * in its path (resource:file:///srv/* would be
// resource:file:///srv/%2A, which no read's name matches).
func NormalName(name string) string {
	name = nfc(name)
	if !isRead(name) {
		return name
	}
	if prefix, ok := strings.CutSuffix(name, "*"); ok {
		return normReadPrefix(prefix) + "*"
	}
	return normRead(name)
}

// defaultPorts are the ports of the special schemes whose URIs name a
// server, which a URI may spell or leave out.
var defaultPorts = map[string]string{"http": "80", "https": "443", "ws": "80", "wss": "443", "ftp": "21"}

// normRead puts a read's name in the normal form rules are compiled in.
func normRead(name string) string {
	if uri, ok := strings.CutPrefix(name, intercept.ResourcePrefix); ok {
		return intercept.ResourcePrefix + normURI(uri)
	}
	return name
}

// normReadPrefix is normRead for a read's prefix (a name that ended in
// *). A server URI's prefix that ends within its authority
// ("resource:http://192.168.*") names a host or port begun, not one
// named: it is lower-cased only, since read as a whole host it would lose
// its trailing dot (matching http://192.168evil) or turn into another
// address (192.168 is 192.0.0.168).
func normReadPrefix(prefix string) string {
	uri, ok := strings.CutPrefix(prefix, intercept.ResourcePrefix)
	if !ok {
		return prefix
	}
	scheme, rest, found := strings.Cut(strings.TrimLeft(uri, " "), "://")
	if _, server := defaultPorts[strings.ToLower(scheme)]; found && server && !strings.ContainsAny(rest, `/?#\`) {
		return intercept.ResourcePrefix + strings.ToLower(strings.TrimLeft(uri, " "))
	}
	return normRead(prefix)
}

// normURI lower-cases a URI's scheme and host, decodes its path and
// removes dot segments from it (keeping a final slash). A URI that does
// not parse, or has no hierarchical path, is returned as it is. Special
// schemes (file, http, https, ws, wss, ftp) are read as the WHATWG URL
// parser reads them, which is how a TypeScript server turns a resource URI
// into a path or request: surrounding spaces and control characters go, so
// does a fragment (and a file URI's query), a backslash before the query is
// a slash, and a file URI's host "localhost" or missing authority (file:/p,
// file:p) is file:///p. A server's URI (http, https, ws, wss, ftp) loses
// its userinfo, its scheme's default port and its host's trailing dot,
// has "/" for an empty path (the root it fetches), takes any number of
// slashes after its colon, and has its host read as
// a WHATWG parser reads it (serverAuthority, normHost).
func normURI(s string) string {
	trimmed := strings.TrimFunc(s, func(r rune) bool { return r <= ' ' }) // WHATWG: C0 controls and space
	scheme, _, _ := strings.Cut(trimmed, ":")
	scheme = strings.ToLower(scheme)
	special := scheme == "file" || scheme == "http" || scheme == "https" || scheme == "ws" || scheme == "wss" || scheme == "ftp"
	if special {
		s = trimmed
		// A fragment never reaches a server, and a file path has no
		// query (Node's fileURLToPath drops both).
		if i := strings.IndexByte(s, '#'); i >= 0 {
			s = s[:i]
		}
		if i := strings.IndexByte(s, '?'); i >= 0 && scheme == "file" {
			s = s[:i]
		}
		end := strings.IndexAny(s, "?#")
		if end < 0 {
			end = len(s)
		}
		if strings.Contains(s[:end], `\`) {
			s = strings.ReplaceAll(s[:end], `\`, "/") + s[end:]
		}
		if _, server := defaultPorts[scheme]; server {
			s = serverAuthority(s, len(scheme))
		}
	}
	u, err := url.Parse(s)
	if err != nil {
		return s
	}
	if scheme == "file" && u.Opaque != "" {
		// file:srv/keys is file:///srv/keys.
		p, err := url.PathUnescape(u.Opaque)
		if err != nil {
			return s
		}
		u.Opaque, u.Path = "", "/"+p
	}
	if u.Opaque != "" {
		return s
	}
	u.Scheme, u.Host = strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	if port, ok := defaultPorts[u.Scheme]; ok {
		// The same server, however the URI names it: userinfo is not where
		// it is, the scheme's own port is no port, and a fully qualified
		// host's trailing dot is the host (a server's fetch goes to each).
		u.User = nil
		host, p := u.Hostname(), u.Port()
		if t := strings.TrimLeft(p, "0"); p != "" && t != p {
			// :0443 is port 443 (WHATWG, and Python's int()).
			if t == "" {
				t = "0"
			}
			p = t
		}
		if p == port {
			p = ""
		}
		if h := strings.TrimSuffix(host, "."); plainHost(h) {
			host = h
		} else if h, err := normHost(host); err == nil {
			// As a WHATWG parser reads the host: mapped by UTS #46
			// (ＩＮＴＲＡＮＥＴ。example is intranet.example), 167772161,
			// 0xa.0.0.1, 012.0.0.1 and 10.1 are 10.0.0.1 (to getaddrinfo
			// too), an IPv6 address in its one spelling, an IPv4-mapped
			// one the IPv4 address it reaches.
			host = h
		} else if h := strings.TrimSuffix(host, "."); h != "" {
			host = h // no host a parser would accept: as spelt
		}
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
		if p != "" {
			host += ":" + p
		}
		u.Host = host
		if u.Path == "" {
			// A server's URI with no path fetches its root, as
			// https://intranet.example/ does (WHATWG: a special URL's
			// path is never empty); without it the URI escaped the
			// prefix resource:https://intranet.example/*.
			u.Path = "/"
		}
	}
	if u.Scheme == "file" {
		if u.Host == "localhost" {
			u.Host = ""
		}
		u.OmitHost = false
		if u.Path == "" || u.Path[0] != '/' {
			u.Path = "/" + u.Path
		}
	}
	if p := u.Path; p != "" {
		clean := path.Clean(p)
		if strings.HasSuffix(p, "/") && !strings.HasSuffix(clean, "/") {
			clean += "/"
		}
		u.Path, u.RawPath = clean, ""
	}
	return u.String()
}

// lookupPrefix returns the classes of the longest tool_classes prefix
// that matches a read, one pinned to upstream first at equal length.
func (p *Policy) lookupPrefix(upstream, name string) ([]string, bool) {
	for _, pc := range p.prefixes { // longest first
		if (pc.upstream == "" || pc.upstream == upstream) && strings.HasPrefix(name, pc.prefix) {
			return pc.classes, true
		}
	}
	return nil, false
}

// plainHost reports whether host, lower-cased, is already in the form
// normHost gives but for a trailing dot: a name of ASCII letters, digits,
// '-' and '_' whose last label is no number (most URIs: no IDNA mapping
// to pay for).
func plainHost(host string) bool {
	for i := 0; i < len(host); i++ {
		if c := host[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	if host == "" || host == "." {
		return false
	}
	last := host[strings.LastIndexByte(host, '.')+1:]
	if strings.Trim(last, "0123456789abcdefx") != "" {
		return true // a name's label: no number (and nothing parsed to say so)
	}
	return !inetaton.EndsInNumber(host)
}

// serverAuthority returns s, a URI of a server's scheme (http, https, ws,
// wss, ftp) of n bytes, backslashes before its query made slashes, as a
// WHATWG parser reads its authority: after any number of slashes
// (http:host/x and http:///host/x are http://host/x), userinfo dropped,
// the host percent-decoded (%69ntranet is intranet). A host that decodes
// to something no host holds is left as spelt.
func serverAuthority(s string, n int) string {
	rest := strings.TrimLeft(s[n+1:], "/")
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	auth := rest[:end]
	if i := strings.LastIndexByte(auth, '@'); i >= 0 {
		auth = auth[i+1:]
	}
	encoded := strings.IndexByte(auth, '%') >= 0 && !strings.HasPrefix(auth, "[")
	if !encoded && len(s)-len(rest) == n+3 {
		return s // scheme://host as it should be (most URIs)
	}
	if encoded {
		host, port := auth, ""
		if i := strings.LastIndexByte(auth, ':'); i >= 0 {
			host, port = auth[:i], auth[i:]
		}
		if h, err := url.PathUnescape(host); err == nil && !strings.ContainsFunc(h, func(r rune) bool {
			return r <= ' ' || r == 0x7f || strings.ContainsRune(`/?#@:[]\%`, r)
		}) {
			auth = h + port
		}
	}
	return s[:n] + "://" + auth + rest[end:]
}
