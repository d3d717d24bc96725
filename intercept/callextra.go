package intercept

import (
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// CallExtra is ActionDescriptor.CallExtra for m: what of the action m
// the client chose besides its name and arguments, or nil.
func CallExtra(m *Message) jsontext.Value {
	if !m.extra && !paramsBeyondCall(m.Params) && m.Meta == nil {
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
			switch {
			case strings.HasPrefix(k, "io.modelcontextprotocol/"), k == "progressToken", k == "traceparent", k == "tracestate", k == "baggage":
				// The protocol's, made afresh per request by SDKs.
			default:
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

// paramsBeyondCall reports whether params may hold a member beside name, uri,
// arguments and _meta: a quick look before walking it.
func paramsBeyondCall(params jsontext.Value) bool {
	if params.Kind() != '{' {
		return false
	}
	n := 0
	_ = eachValidMember(params, func(k string, _ jsontext.Value) error {
		switch k {
		case "name", "uri", "arguments", "_meta":
		default:
			n++
		}
		return nil
	})
	return n > 0
}
