package gateway

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"

	"golang.org/x/net/http/httpguts"

	"github.com/sluicehq/sluice/intercept"
)

// The client's HTTP headers and a closed upstream. A route rule that
// closes an upstream after a sensitive read (carry.go in intercept and
// policy) closes it to every message that carries bytes of the client's
// choosing; the HTTP headers of a plain ping carry them as well (X-Leak,
// User-Agent, Cookie, a traceparent's ids, a Last-Event-ID). So while the
// upstream is closed to the request's client — the same test a carry is
// denied by (intercept.RouteCloser) — an HTTP upstream gets only the
// headers the gateway can vouch for:
//
//   - those it writes itself: Content-Type, Mcp-Session-Id, Mcp-Param-*,
//     upstreams[].headers, its own User-Agent (gatewayUserAgent, in place
//     of the client's), its own trace context in place of the client's
//     traceparent (a span of a trace of its own, or none: upstreamCall;
//     the client's tracestate and baggage are dropped);
//   - the protocol's, each only with a value its grammar allows:
//     Mcp-Protocol-Version a version MCP defines, Accept the media types
//     MCP uses, Mcp-Method and Mcp-Name on a POST (checked against the
//     body, classify), Last-Event-ID only one the gateway passed on to
//     the session (session.sentEvent);
//   - those the operator lists in upstreams[].pass_headers, as sent.
//
// Every other client header is dropped: counted (HeadersWithheld, the
// metric sluice.headers.withheld by upstream) and logged, at most once per
// unreadableLogEvery. An upstream that is not closed gets the client's
// headers as before (copyHeaders): a permissive policy is transparent.

// gatewayUserAgent is the User-Agent a closed upstream is sent.
const gatewayUserAgent = "sluice"

// mcpVersions are the protocol versions a closed upstream's
// Mcp-Protocol-Version may name.
var mcpVersions = map[string]bool{"2024-11-05": true, "2025-03-26": true, "2025-06-18": true, "2025-11-25": true, modernVersion: true}

// headerWithholding counts the client headers a closed upstream was not
// sent; safe for concurrent use.
type headerWithholding struct {
	log     *slog.Logger                              // never nil
	metrics interface{ HeadersWithheld(string, int) } // nil: none
	n       atomic.Uint64
	drops   dropLog
}

// dropped counts and logs the headers names not sent to upstream.
func (h *headerWithholding) dropped(upstream string, names []string) {
	h.n.Add(uint64(len(names)))
	if h.metrics != nil {
		h.metrics.HeadersWithheld(upstream, len(names))
	}
	h.drops.warn(h.log, "client HTTP headers not sent to an upstream closed to the client by a route rule; list one in upstreams[].pass_headers to send it",
		"upstream", upstream, "headers", names)
}

// HeadersWithheld is how many client HTTP headers the gateway has not
// sent to upstreams closed to the client (see headers.go).
func (g *Gateway) HeadersWithheld() uint64 { return g.headerDrops.n.Load() }

// closedHeaders copies to dst the headers of r, a client's request to
// rt's upstream on sess (nil for none), that a closed upstream may get
// (see above), and returns the names of those it did not copy. post: r's
// body is the one the gateway decided, its Mcp-Method and Mcp-Name
// checked against it.
func closedHeaders(dst http.Header, r *http.Request, rt *route, sess *session) (dropped []string) {
	post := r.Method == http.MethodPost
	for k, vv := range r.Header {
		switch {
		case neverForwarded(k) || intercept.IsParamHeader(k) || k == "Content-Type" || connectionListed(r.Header["Connection"], k) || rt.gatewaySets(k):
			continue // the gateway's to write, or no one's
		case rt.passHeaders[k]:
			dst[k] = append([]string(nil), vv...)
			continue
		case k == "User-Agent":
			continue // replaced below
		case k == "Traceparent":
			// Its ids are 24 bytes of the client's choosing: the upstream
			// gets the gateway's trace context, or none (upstreamCall).
			continue
		}
		if post && (k == hdrMethod || k == hdrName) {
			continue // written from the body (protocolHeaders)
		}
		ok := len(vv) == 1
		var v string
		if ok {
			v = vv[0]
			switch k {
			case hdrVersion:
				// A session's is the one it negotiated, not whichever
				// of the others the client names this time.
				if ok = mcpVersions[v]; ok && sess != nil {
					if _, sv := sess.info(); mcpVersions[sv] {
						v = sv
					}
				}
			case "Accept":
				v, ok = mcpAccept(v)
			case "Last-Event-Id": // hdrLastEvID, canonical
				ok = r.Method == http.MethodGet && sess != nil && sess.sentEvent(v)
			default:
				ok = false
			}
		}
		if !ok {
			dropped = append(dropped, k)
			continue
		}
		dst[k] = []string{v}
	}
	if !rt.passHeaders["User-Agent"] {
		dst.Set("User-Agent", gatewayUserAgent)
	}
	return dropped
}

// protocolHeaders writes to h, the headers of the request forwarding x
// to a closed upstream, the Mcp-Method and Mcp-Name of x's message
// where the client's request r had them (classify checked them against
// the body): in the gateway's spelling, and never on an answer or a
// batch, which classify does not check them on.
func protocolHeaders(h http.Header, r *http.Request, x *exchange) {
	if x.batch {
		return
	}
	m := x.msgs[0]
	if m.Kind != intercept.KindRequest && m.Kind != intercept.KindNotification {
		return
	}
	if _, ok := r.Header[hdrMethod]; ok {
		h.Set(hdrMethod, m.Method)
	}
	if _, ok := r.Header[hdrName]; !ok {
		return
	}
	switch {
	case intercept.TaskMethod(m.Method) && m.Method != "tasks/result":
		h.Set(hdrName, encodeHeaderValue(intercept.StringMember(m.Params, "taskId")))
	case namedMethod(m.Method):
		h.Set(hdrName, encodeHeaderValue(m.Name))
	}
}

// screenTrace drops from h, a request to a closed upstream after the
// gateway wrote its trace context, what of it could have come from the
// client: baggage and tracestate (free text the gateway's propagator
// would carry on from the client's request; never its own; the context
// it writes from is untraced, telemetry.Untraced, so none should be
// there) and a traceparent not in W3C form.
func screenTrace(h http.Header) (dropped []string) {
	for _, k := range [...]string{"Baggage", "Tracestate"} {
		if _, ok := h[k]; ok {
			delete(h, k)
			dropped = append(dropped, k)
		}
	}
	if vv, ok := h["Traceparent"]; ok && (len(vv) != 1 || !validTraceparent(vv[0])) {
		delete(h, "Traceparent")
		dropped = append(dropped, "Traceparent")
	}
	return dropped
}

// mcpAccept returns v, an Accept header, as a closed upstream is sent
// it: which of JSON and event streams it accepts, in the gateway's
// spelling (the case of its letters, its order and q values were the
// client's to choose). ok is false unless v names only the media types
// MCP uses (JSON and event streams, or their wildcards), at most four of
// them, with no parameter but a q value, and accepts one.
func mcpAccept(v string) (canon string, ok bool) {
	n := 0
	var json, events bool
	for part := range strings.SplitSeq(v, ",") {
		if n++; n > 4 {
			return "", false
		}
		mt, params, _ := strings.Cut(part, ";")
		params = strings.TrimSpace(params)
		if params != "" && !qValue(params) {
			return "", false
		}
		if q, _ := strings.CutPrefix(strings.ToLower(params), "q="); q != "" && strings.Trim(q, "0.") == "" {
			continue // q=0: not acceptable
		}
		switch strings.ToLower(strings.TrimSpace(mt)) {
		case "application/json", "application/*":
			json = true
		case "text/event-stream", "text/*":
			events = true
		case "*/*":
			json, events = true, true
		default:
			return "", false
		}
	}
	switch {
	case json && events:
		return "application/json, text/event-stream", true
	case json:
		return "application/json", true
	case events:
		return "text/event-stream", true
	}
	return "", false
}

// qValue reports whether p is q=1, q=0 or q=0.d{1,3} (RFC 9110 §12.4.2).
func qValue(p string) bool {
	v, ok := strings.CutPrefix(p, "q=")
	if !ok {
		v, ok = strings.CutPrefix(p, "Q=")
	}
	switch {
	case !ok || v == "":
		return false
	case v == "1" || v == "0" || v == "1.0" || v == "1.00" || v == "1.000":
		return true
	case len(v) < 3 || len(v) > 5 || v[:2] != "0.":
		return false
	}
	for _, c := range v[2:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// validTraceparent reports whether v is a W3C traceparent of version 00:
// 00-<32 hex>-<16 hex>-<2 hex>, lower case, ids not all zeros.
func validTraceparent(v string) bool {
	if len(v) != 55 || v[:3] != "00-" || v[35] != '-' || v[52] != '-' {
		return false
	}
	return lowerHex(v[3:35]) && lowerHex(v[36:52]) && lowerHex(v[53:]) &&
		strings.Trim(v[3:35], "0") != "" && strings.Trim(v[36:52], "0") != ""
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// maxEventIDs is how many of the event ids passed on to a session's
// client the session remembers, for a resumption on a closed upstream.
const maxEventIDs = 32

// passedEvent records id, the id of an event passed on to the client of s.
func (s *session) passedEvent(id string) {
	s.mu.Lock()
	if s.events == nil {
		s.events = new([maxEventIDs]string)
	}
	s.events[s.nextEvent] = id
	s.nextEvent = (s.nextEvent + 1) % maxEventIDs
	s.mu.Unlock()
}

// sentEvent reports whether id is one of the last event ids passed on to
// the client of s: the only Last-Event-ID a closed upstream gets, which
// it chose itself.
func (s *session) sentEvent(id string) bool {
	if id == "" {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.events == nil {
		return false
	}
	for _, e := range s.events {
		if e == id {
			return true
		}
	}
	return false
}

// CheckPassHeaders says why u's pass_headers cannot be, naming the
// entry and the fix, or returns nil.
func (u *Upstream) CheckPassHeaders() error {
	tr := u.Transport
	if tr == "" && u.URL != "" {
		tr = TransportStreamableHTTP
	}
	for i, h := range u.PassHeaders {
		k := http.CanonicalHeaderKey(h)
		var err error
		switch {
		case tr != TransportStreamableHTTP:
			err = errors.New("only a streamable-http upstream gets the client's headers; remove pass_headers")
		case !httpguts.ValidHeaderFieldName(h):
			err = fmt.Errorf("%q is not a header name", h)
		case k == "Authorization":
			err = errors.New("Authorization is never passed on: the agent's credential is not the upstream's (its own goes in headers or oauth); remove it")
		case neverForwarded(k) || intercept.IsParamHeader(k) || k == "Content-Type":
			err = fmt.Errorf("%s is the gateway's to write, never the client's; remove it", k)
		}
		if err != nil {
			return fmt.Errorf("pass_headers[%d]: %w", i, err)
		}
	}
	return nil
}

// underscoredProtocolHeader returns the first header of h spelt with
// underscores for hyphens (in any case) that CGI, WSGI and nginx's $http_
// variables read as one of the headers checked against the body
// (Mcp-Protocol-Version, Mcp-Method, Mcp-Name, the Mcp-Param- prefix), or
// "". Beside the checked header it is a second value that something in
// front of the gateway may read instead (TestAttackHeaderUnderscoreTwin);
// alone, a value nothing checked. An underscore after the Mcp-Param-
// prefix is not refused here: x-mcp-header names may hold one
// (Mcp-Param-Tenant_Id), and checkParamHeaders refuses such a header when
// it is another spelling of one the tool declares
// (TestParamHeaderNameWithUnderscore). A request with none costs a byte
// search per header name.
func underscoredProtocolHeader(h http.Header) string {
	for k := range h {
		if strings.IndexByte(k, '_') < 0 {
			continue
		}
		n := strings.ReplaceAll(k, "_", "-")
		for _, p := range [...]string{hdrVersion, hdrMethod, hdrName} {
			if strings.EqualFold(n, p) {
				return k
			}
		}
		if intercept.IsParamHeader(k) && strings.IndexByte(k[:len(intercept.ParamHeaderPrefix)], '_') >= 0 {
			return k
		}
	}
	return ""
}

// cgiName is header name k as CGI, WSGI and nginx's $http_ variables read
// it: in lower case, with underscores for hyphens.
func cgiName(k string) string {
	return strings.ReplaceAll(strings.ToLower(k), "-", "_")
}

// gatewaySets reports whether k, a client's header name, is one the
// gateway sets on rt's requests (upstreams[].headers) as CGI, WSGI and
// nginx's $http_ variables read it: X_api_key beside the gateway's
// X-Api-Key is a second value to such an upstream, which may take the
// client's (TestAttackConfiguredHeaderSpelling). Authorization, the one
// oauth sets, is a hop header (neverForwarded) in every spelling.
func (rt *route) gatewaySets(k string) bool {
	for _, h := range rt.setHeaders {
		if sameCGIName(k, h) {
			return true
		}
	}
	return false
}

// sameCGIName reports whether cgiName(a) == cgiName(b), without building
// either.
func sameCGIName(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if x == '-' {
			x = '_'
		}
		if y == '-' {
			y = '_'
		}
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// errUnderscored is the error for a request with header k, which
// underscoredProtocolHeader found.
func errUnderscored(k string) error {
	return mismatch(fmt.Sprintf("the %s header is spelt with underscores, which some read as %s; send it with hyphens, once", k, http.CanonicalHeaderKey(strings.ReplaceAll(k, "_", "-"))))
}
