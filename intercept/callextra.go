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
	if !m.extra && !m.paramsExtra && !metaBeyondProtocol(m.Meta) {
		return nil
	}
	out := map[string]jsontext.Value{}
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
			if !protocolMeta(k) {
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
				out[k] = v.Clone()
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

// protocolMeta reports whether the _meta member k is the protocol's, made
// afresh per request by SDKs.
func protocolMeta(k string) bool {
	return strings.HasPrefix(k, "io.modelcontextprotocol/") || k == "progressToken" || k == "traceparent" || k == "tracestate" || k == "baggage"
}

// errBeyond stops a walk of _meta at its first member not the protocol's.
var errBeyond = errors.New("beyond the protocol's")

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
	return eachValidMember(meta, func(k string, _ jsontext.Value) error {
		if !protocolMeta(k) {
			return errBeyond
		}
		return nil
	}) != nil
}
