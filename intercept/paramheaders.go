package intercept

import (
	"bytes"
	"context"
	"encoding/base64"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// ParamHeaderPrefix starts the names of MCP 2026-07-28's custom headers
// (SEP-2243): a tools/call mirrors each argument its tool's inputSchema
// marks with x-mcp-header into Mcp-Param-{that name}, so that load
// balancers, proxies and rate limiters route on it without reading the
// body.
const ParamHeaderPrefix = "Mcp-Param-"

// IsParamHeader reports whether the header name k (any case) is one of
// SEP-2243's Mcp-Param-* headers.
// An underscore counts as a hyphen: CGI, WSGI and nginx's $http_
// variables read Mcp_Param_Region as Mcp-Param-Region.
func IsParamHeader(k string) bool {
	if len(k) < len(ParamHeaderPrefix) {
		return false
	}
	for i := 0; i < len(ParamHeaderPrefix); i++ {
		c, p := k[i], ParamHeaderPrefix[i]
		if c == '_' {
			c = '-'
		}
		if c|0x20 != p|0x20 {
			return false
		}
	}
	return true
}

// maxParamHeaders bounds the headers one call's tool may declare, and
// maxParamDepth how deep in its inputSchema they are looked for: the
// schema is the upstream's, any size, and read on every call.
const (
	maxParamHeaders = 64
	maxParamDepth   = 8
)

// ParamHeaders returns the Mcp-Param-* headers (name -> value) that m, a
// tools/call about to be forwarded to upstream, carries under SEP-2243:
// for each property of the tool's inputSchema (as upstream last listed it
// through this interceptor), at any depth, marked with x-mcp-header, the
// value of that argument in m, encoded as the SEP has clients encode it (a
// string as it is, or as =?base64?…?= when it is not plain printable ASCII
// or looks encoded; true/false; an integer within ±(2^53−1) in decimal).
// An argument that is absent, null or of another type gets no header, and
// neither does a name declared twice (in any case) or that is not an HTTP
// token. The gateway sends these in place of whatever Mcp-Param-* headers
// the client sent: what something in front of the server routes on is
// then the arguments policy decided on. It returns nil for anything else
// (another method, a tool the interceptor never saw listed, no
// annotations).
func (i *Interceptor) ParamHeaders(upstream string, m *Message) map[string]string {
	if m == nil || !m.IsCall() || m.Arguments.Kind() != '{' {
		return nil
	}
	v, ok := i.catalog.Load(upstream)
	if !ok {
		return nil
	}
	t, ok := v.(*toolSet).tools[m.Name]
	if !ok || len(t.params) == 0 {
		return nil
	}
	var out map[string]string
	args := make([]jsontext.Value, len(t.params))
	which := make([]int, len(t.params))
	for k := range which {
		which[k] = k
	}
	lookupPaths(m.Arguments, t.params, which, 0, args)
	for k, b := range t.params {
		arg := args[k]
		if arg == nil || arg.Kind() == 'n' {
			continue
		}
		val, ok := paramHeaderValue(arg)
		if !ok {
			continue
		}
		if out == nil {
			out = make(map[string]string, len(t.params))
		}
		out[http.CanonicalHeaderKey(ParamHeaderPrefix+b.header)] = val
	}
	return out
}

// ListForParamHeaders lists the tools of cc's upstream first, as deciding
// call m would (ensureListed), when m is a tools/call of a tool that
// upstream has not been seen listing: ParamHeaders reads the tool's
// inputSchema as last listed, and a tool not listed yet has none, so the
// client's Mcp-Param-* headers of the first call after a start (or on a
// fresh replica) went on unchecked, the listing coming only with the
// decision. It returns why the listing failed, nil if it did not: the
// call is then decided in a context WithListingFailed, which denies it
// without listing again.
func (i *Interceptor) ListForParamHeaders(ctx context.Context, cc CallContext, m *Message) error {
	if m == nil || !m.IsCall() {
		return nil
	}
	if v, ok := i.catalog.Load(cc.Upstream); ok {
		if _, ok := v.(*toolSet).tools[m.Name]; ok {
			return nil
		}
	}
	if cc.Principal == nil {
		cc.Principal = PrincipalFrom(ctx)
	}
	return i.ensureListed(ctx, cc)
}

type listingFailedKey struct{}

// WithListingFailed returns ctx noting that the listing made for the call
// to be decided with it failed with err: ensureListed answers err rather
// than list again (a hung upstream would hold the call twice the listing's
// bound).
func WithListingFailed(ctx context.Context, err error) context.Context {
	return context.WithValue(ctx, listingFailedKey{}, err)
}

type paramBinding struct {
	path   []string
	header string
}

// paramBindings returns the arguments schema marks with x-mcp-header, but
// for a header name declared twice (in any case), which is ambiguous:
// go-sdk clients drop such a tool from the list altogether.
func paramBindings(schema jsontext.Value) []paramBinding {
	if schema.Kind() != '{' {
		return nil
	}
	var bs []paramBinding
	collectParamBindings(schema, nil, &bs)
	if len(bs) == 0 {
		return nil
	}
	count := make(map[string]int, len(bs))
	for _, b := range bs {
		count[strings.ToLower(b.header)]++
	}
	out := bs[:0]
	for _, b := range bs {
		if count[strings.ToLower(b.header)] == 1 {
			out = append(out, b)
		}
	}
	return out
}

// collectParamBindings records the x-mcp-header of every property of the
// schema object, and of their properties in turn.
func collectParamBindings(schema jsontext.Value, prefix []string, out *[]paramBinding) {
	if len(prefix) >= maxParamDepth {
		return
	}
	props := Member(schema, "properties")
	if props.Kind() != '{' {
		return
	}
	_ = eachValidMember(props, func(name string, prop jsontext.Value) error {
		if len(*out) >= maxParamHeaders || prop.Kind() != '{' {
			return nil
		}
		path := append(prefix[:len(prefix):len(prefix)], name)
		if h := Member(prop, "x-mcp-header"); h.Kind() == '"' {
			if name := stringOf(h); httpToken(name) {
				*out = append(*out, paramBinding{path: path, header: name})
			}
		}
		collectParamBindings(prop, path, out)
		return nil
	})
}

// lookupPaths sets args[k] to the value at the path of bs[k] in obj, for
// each k of which whose path matches obj down to depth, nil where there
// is none: in one pass over each object on the way, however many
// bindings read it. Looked up one binding at a time, a tool marking 64
// arguments had every call's arguments read 64 times, twice per call
// (the header check and the upstream request). obj is a part of a
// message Decode accepted.
func lookupPaths(obj jsontext.Value, bs []paramBinding, which []int, depth int, args []jsontext.Value) {
	if obj.Kind() != '{' {
		return
	}
	var next []int
	_ = eachValidRaw(obj, func(name, val jsontext.Value) error {
		plain := bytes.IndexByte(name, '\\') < 0
		var key string
		if !plain {
			key = memberName(name)
		}
		next = next[:0]
		for _, k := range which {
			p := bs[k].path[depth]
			if plain && string(name[1:len(name)-1]) != p || !plain && key != p {
				continue
			}
			if depth+1 == len(bs[k].path) {
				args[k] = val
			} else {
				next = append(next, k)
			}
		}
		if len(next) > 0 {
			lookupPaths(val, bs, slices.Clone(next), depth+1, args)
		}
		return nil
	})
}

// paramHeaderValue encodes a primitive argument as SEP-2243 has a client
// put it in its header; false for any other value.
func paramHeaderValue(v jsontext.Value) (string, bool) {
	switch v.Kind() {
	case 't':
		return "true", true
	case 'f':
		return "false", true
	case '0':
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil || math.IsInf(f, 0) || f != math.Trunc(f) || math.Abs(f) > 1<<53-1 {
			return "", false
		}
		return strconv.FormatInt(int64(f), 10), true
	case '"':
		s := stringOf(v)
		if needsBase64(s) {
			return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?=", true
		}
		return s, true
	}
	return "", false
}

// needsBase64 reports whether a string value cannot ride in a header as
// it is: leading or trailing white space, a byte outside printable
// ASCII, or the shape of an encoded value.
func needsBase64(s string) bool {
	if s == "" {
		return false
	}
	if s[0] == ' ' || s[0] == '\t' || s[len(s)-1] == ' ' || s[len(s)-1] == '\t' {
		return true
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return true
		}
	}
	return strings.HasPrefix(s, "=?base64?") && strings.HasSuffix(s, "?=")
}

// httpToken reports whether s is an HTTP field-name token (RFC 9110,
// 1*tchar).
func httpToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}
