package gateway

import (
	"bytes"
	"context"
	"slices"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/telemetry"
)

// Resource updates: a subscription to a resource no read of which could
// be allowed to the client is refused (intercept's checkSubscription; a
// virtual server leaves it out of what it subscribes to), and every path
// that carries an upstream's notifications/resources/updated to a client
// passes it through resourceUpdate: with its URI alone, and only when
// the client may read that resource now.

const methodResourceUpdated = "notifications/resources/updated"

// resourceUpdate returns params, those of an upstream's
// notifications/resources/updated, as a client is passed them: the URI,
// and of _meta the 2026-07-28 subscription it names (a string or a
// number), nothing else. The protocol defines no other member, and text
// an upstream put beside the URI (the resource's content, an instruction
// to the model) would reach the client with no screen reading it. ok is
// false, and the update is withheld, when params name no URI, or one
// readable says the client may not read: denied or withheld since the
// client subscribed, or never readable (an upstream may send updates no
// one asked for). uri is the URI params name, "" for none.
func resourceUpdate(params jsontext.Value, readable func(uri string) bool) (out jsontext.Value, uri string, ok bool) {
	u := intercept.Member(params, "uri")
	if u.Kind() != '"' {
		return nil, "", false
	}
	uri = intercept.StringMember(params, "uri")
	if !readable(uri) {
		return nil, uri, false
	}
	quoted, err := jsontext.AppendQuote(nil, uri)
	if err != nil {
		return nil, uri, false
	}
	out = jsontext.Value(`{"uri":` + string(quoted) + `}`)
	if sub := subscriptionOf(params); sub.Kind() == '"' || sub.Kind() == '0' {
		out = withMember(out, "_meta", jsontext.Value(`{"`+subscriptionKey+`":`+string(sub)+`}`))
	}
	return out, uri, true
}

// subResource reports whether uri is of, or a sub-resource of it: MCP
// says an update's URI "might be a sub-resource of the one that the
// client actually subscribed to" (of, then a path under it).
func subResource(uri, of string) bool {
	if uri == of {
		return true
	}
	if of == "" || !strings.HasPrefix(uri, of) {
		return false
	}
	return strings.HasSuffix(of, "/") || uri[len(of)] == '/'
}

// screenUpdate returns raw, m as an upstream sent it to the client of cc,
// as that client may have it: raw itself (changed false) unless m is a
// notifications/resources/updated, which is passed on as resourceUpdate
// leaves it, or withheld (nil), counted and logged, when it names no
// resource the client may read; or a 2026-07-28 subscription's
// acknowledgement, passed on as acknowledgement leaves it.
func screenUpdate(ctx context.Context, ic *intercept.Interceptor, w *withheldTasks, cc intercept.CallContext, m *intercept.Message, raw jsontext.Value) (out jsontext.Value, changed bool) {
	if m.Kind != intercept.KindNotification || (m.Method != methodResourceUpdated && m.Method != methodAcknowledged) {
		return raw, false
	}
	readable := func(uri string) bool { return ic.Readable(ctx, cc, uri) }
	var params jsontext.Value
	if m.Method == methodAcknowledged {
		params = acknowledgement(intercept.Member(raw, "params"), readable)
	} else {
		var uri string
		var ok bool
		if params, uri, ok = resourceUpdate(intercept.Member(raw, "params"), readable); !ok {
			w.denied(cc.Upstream, "", uri)
			return nil, true
		}
	}
	return jsontext.Value(`{"jsonrpc":"2.0","method":"` + m.Method + `","params":` + string(params) + `}`), true
}

const methodAcknowledged = "notifications/subscriptions/acknowledged"

// acknowledgement returns params, those of an upstream's
// notifications/subscriptions/acknowledged, as a client is passed them:
// the notifications it says it honours (of the resources, those readable
// says the client may read) and the subscription it names, nothing else
// (as a virtual server acknowledges: listen).
func acknowledgement(params jsontext.Value, readable func(uri string) bool) jsontext.Value {
	var f listenFilter
	_ = json.Unmarshal(intercept.Member(params, "notifications"), &f)
	f.URIs = slices.DeleteFunc(f.URIs, func(uri string) bool { return !readable(uri) })
	out := map[string]any{"notifications": f}
	if sub := subscriptionOf(params); sub.Kind() == '"' || sub.Kind() == '0' {
		out["_meta"] = map[string]jsontext.Value{subscriptionKey: sub}
	}
	b, err := json.Marshal(out, json.Deterministic(true))
	if err != nil {
		return jsontext.Value(`{"notifications":{}}`)
	}
	return b
}

// mayUpdate reports whether b, a message from an upstream, may be a
// notifications/resources/updated or a subscription's acknowledgement
// (screenUpdate): a byte scan, so that what cannot goes on undecoded.
// "updated" and "acknowledged" have no other spelling in JSON text but
// one with a \u escape.
func mayUpdate(b []byte) bool {
	return mayHoldMember(b, []byte("updated")) || bytes.Contains(b, []byte("acknowledged"))
}

// boundURI is uri as an event records it.
func boundURI(uri string) string { return telemetry.Bound(uri, telemetry.MaxRecordedText) }
