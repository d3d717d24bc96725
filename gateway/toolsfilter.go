package gateway

import (
	"context"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// Hiding tools: every transport passes each tools/list response through
// hideToolsIn before the client gets it, with the call context of the
// request it answers, so that the tools the agent can never call are left
// out when the interceptor's HideDeniedTools is set. The interceptor's
// ObserveTools still gets the upstream's whole list: the inventory must see
// what the upstream really offers.

// hideToolsIn returns raw, a tools/list response whose result is result,
// with the tools the client of cc can never call removed, and whether
// anything was removed.
func hideToolsIn(ctx context.Context, ic *intercept.Interceptor, cc intercept.CallContext, raw, result jsontext.Value) (jsontext.Value, bool) {
	res, changed := ic.FilterToolsResult(ctx, cc, result)
	if !changed {
		return raw, false
	}
	out, err := intercept.WithMember(raw, "result", res)
	if err != nil {
		return raw, false
	}
	return out, true
}

// hideTools applies hideToolsIn to b, one JSON-RPC message or a batch from
// an upstream, for every response whose id isList says answers a
// tools/list request. It returns b itself when nothing changed, and when b
// cannot be decoded: the client then gets the upstream's bytes, as it
// would without hiding.
func hideTools(ctx context.Context, ic *intercept.Interceptor, cc intercept.CallContext, b []byte, isList func(id string) bool) []byte {
	msgs, batch, err := intercept.Decode(b)
	if err != nil {
		return b
	}
	out := make([]jsontext.Value, len(msgs))
	changed := false
	for i, m := range msgs {
		out[i] = m.Raw
		if m.Kind == intercept.KindResponse && isList(m.IDKey()) {
			if raw, ok := hideToolsIn(ctx, ic, cc, m.Raw, m.Result); ok {
				out[i], changed = raw, true
			}
		}
	}
	switch {
	case !changed:
		return b
	case batch:
		return marshalArray(out)
	}
	return out[0]
}

// filter hides tools in b, a message of the upstream's answer, before it
// is passed on; lists has recorded the unfiltered b already.
func (o *observer) filter(ctx context.Context, b []byte) []byte {
	if !o.g.ic.HideDeniedTools || !o.waitsForList() {
		return b
	}
	return hideTools(ctx, o.g.ic, o.cc, b, func(id string) bool { return o.pending[id] == "tools/list" })
}

func (o *observer) waitsForList() bool {
	for _, m := range o.pending {
		if m == "tools/list" {
			return true
		}
	}
	return false
}

// hideTools hides tools in b, a message from the upstream, before it is
// written to the client; observe then sees the unfiltered b.
func (r *relay) hideTools(ctx context.Context, b []byte) []byte {
	if !r.ic.HideDeniedTools {
		return b
	}
	r.mu.Lock()
	lists := false
	for _, m := range r.pending {
		if m == "tools/list" {
			lists = true
			break
		}
	}
	r.mu.Unlock()
	if !lists {
		return b
	}
	return hideTools(ctx, r.ic, r.callContext(), b, func(id string) bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.pending[id] == "tools/list"
	})
}
