package intercept

import (
	"errors"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// CallExtra is ActionDescriptor.CallExtra for m: what of the action m
// the client chose besides its name and arguments, or nil.
func CallExtra(m *Message) jsontext.Value {
	longID := m.ID != nil && !freshToken(m.ID)
	if !m.extra && !m.paramsExtra && !longID && !m.metaFacts().beyond {
		return nil
	}
	out := map[string]jsontext.Value{}
	if longID {
		// SDKs make an id afresh per request (a number, a counter, a
		// UUID); a longer one is the client's data, which the upstream
		// gets as sent: part of the call, as a long progress token is.
		out["id"] = m.ID.Clone()
	}
	_ = eachValidMember(m.Params, func(k string, v jsontext.Value) error {
		switch k {
		case "name", "uri", "arguments", "_meta", "requestState":
		default:
			out["params."+k] = v.Clone()
		}
		return nil
	})
	if m.Meta.Kind() == '{' {
		_ = eachValidMember(m.Meta, func(k string, v jsontext.Value) error {
			if !protocolMeta(k, v) {
				out["_meta."+k] = v.Clone()
			}
			return nil
		})
	} else if m.Meta != nil && string(m.Meta) != "null" {
		out["_meta"] = m.Meta.Clone()
	}
	if m.extra {
		_ = eachValidMember(m.Raw, func(k string, v jsontext.Value) error {
			switch k {
			case "jsonrpc", "id", "method", "params":
			default:
				out[envelopeKey(k)] = v.Clone()
			}
			return nil
		})
	}
	if len(out) == 0 {
		return nil
	}
	b, err := json.Marshal(out, json.Deterministic(true))
	if err != nil {
		return m.Raw.Clone() // all of it, then
	}
	return b
}

// callCarries reports whether extra, a tools/call's CallExtra, holds
// anything but params.task (a task-augmented call is a call like any):
// bytes of the client's for the upstream (ActionDescriptor.CallCarries).
// Extra that cannot be read carries.
func callCarries(extra jsontext.Value) bool {
	return extra != nil && eachValidMember(extra, func(k string, _ jsontext.Value) error {
		if k != "params.task" {
			return errBeyond
		}
		return nil
	}) != nil
}

// envelopeKey is the name in CallExtra of envelope member k: k itself,
// unless k could be taken for a params member ("params.<name>"), a _meta
// member ("_meta.<name>", or "_meta" for a _meta not an object) or another
// envelope member so renamed: then "envelope." and k. Without it an
// envelope member "params.note" took the place of params.note in the
// map, and a call with a note of the agent's choosing, the approved note
// beside it in the envelope, went under the approval of the other.
func envelopeKey(k string) string {
	for _, p := range [...]string{"params.", "_meta", "envelope."} {
		if strings.HasPrefix(k, p) {
			return "envelope." + k
		}
	}
	return k
}

// protocolMeta reports whether the _meta member k, of value v, is the
// protocol's, made afresh per request by SDKs (a progress token a number
// or a short string, a W3C traceparent). Any other io.modelcontextprotocol/
// name, tracestate and baggage (free text, carried from request to
// request), and a token or traceparent of another shape are not: the agent
// could put anything there.
func protocolMeta(k string, v jsontext.Value) bool {
	switch k {
	case "io.modelcontextprotocol/protocolVersion", "io.modelcontextprotocol/clientInfo", "io.modelcontextprotocol/clientCapabilities":
		return true
	case "progressToken":
		return freshToken(v)
	case "traceparent":
		return traceparentShape(v)
	}
	return false
}

// errBeyond stops a walk of _meta at its first member not the protocol's.
var errBeyond = errors.New("beyond the protocol's")

// metaFacts is what a request's _meta says that the gateway asks of
// every request, from one walk of it.
type metaFacts struct {
	// version and info are the values of the 2026-07-28 per-request
	// protocol version and client info (nil: absent), read by
	// MetaVersion.
	version, info jsontext.Value
	// beyond: metaBeyondProtocol.
	beyond bool
}

// readMeta reads meta, a request's _meta (nil: none), as
// metaBeyondProtocol and MetaVersion each would, in one walk of it.
func readMeta(meta jsontext.Value) metaFacts {
	var f metaFacts
	switch {
	case meta == nil:
		return f
	case meta.Kind() != '{':
		f.beyond = string(meta) != "null"
		return f
	}
	err := eachValidMember(meta, func(k string, v jsontext.Value) error {
		switch {
		case f.version == nil && k == "io.modelcontextprotocol/protocolVersion":
			f.version = v
		case f.info == nil && k == "io.modelcontextprotocol/clientInfo":
			f.info = v
		}
		f.beyond = f.beyond || !protocolMeta(k, v)
		return nil
	})
	// What cannot be read to its end is beyond the protocol's, as
	// metaBeyondProtocol takes it: carried, not dropped unread.
	f.beyond = f.beyond || err != nil
	return f
}

// metaFacts returns what m's _meta says, as Decode read it.
func (m *Message) metaFacts() metaFacts {
	if m.metaRead {
		return m.meta
	}
	return readMeta(m.Meta)
}

// MetaVersion returns the 2026-07-28 per-request protocol version and
// client name of m, a request, from params._meta ("" for none, or for a
// value that is not a string).
func (m *Message) MetaVersion() (version, client string) {
	f := m.metaFacts()
	if f.info != nil {
		client = ValidStringMember(f.info, "name")
	}
	return ValidString(f.version), client
}

// metaBeyondProtocol reports whether meta, a request's _meta, holds
// anything but the protocol's members: a quick look before CallExtra
// builds anything (every 2026-07-28 request has a _meta).
func metaBeyondProtocol(meta jsontext.Value) bool {
	switch {
	case meta == nil:
		return false
	case meta.Kind() != '{':
		return string(meta) != "null"
	}
	return eachValidMember(meta, func(k string, v jsontext.Value) error {
		if !protocolMeta(k, v) {
			return errBeyond
		}
		return nil
	}) != nil
}

// maxFreshToken is the longest progress token string left out of
// CallExtra: SDKs make a number, a counter or a UUID.
const maxFreshToken = 64

// freshToken reports whether v is a progress token as SDKs make them
// afresh per request: a number, or a string of at most maxFreshToken bytes.
func freshToken(v jsontext.Value) bool {
	return v.Kind() == '0' && len(v) <= maxFreshToken || v.Kind() == '"' && len(v) <= maxFreshToken+2
}

// traceparentShape reports whether v is a W3C traceparent string
// (version-traceid-parentid-flags, lower-case hex).
func traceparentShape(v jsontext.Value) bool {
	if v.Kind() != '"' {
		return false
	}
	s := stringOf(v)
	if len(s) != 55 || s[2] != '-' || s[35] != '-' || s[52] != '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c != '-' && !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
