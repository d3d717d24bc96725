package gateway

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// listenFilter is a subscriptions/listen request's notifications filter,
// and an acknowledgement's.
type listenFilter struct {
	Tools     bool     `json:"toolsListChanged,omitzero"`
	Prompts   bool     `json:"promptsListChanged,omitzero"`
	Resources bool     `json:"resourcesListChanged,omitzero"`
	URIs      []string `json:"resourceSubscriptions,omitempty"`
}

// maxListenURIs bounds the resources one subscription names.
const maxListenURIs = 1000

// wants reports whether a notification the filter f honours: a list
// change of a kind it asked for, or an update of a resource it names.
func (f *listenFilter) wants(method string, params jsontext.Value) bool {
	switch method {
	case "notifications/tools/list_changed":
		return f.Tools
	case "notifications/prompts/list_changed":
		return f.Prompts
	case "notifications/resources/list_changed":
		return f.Resources
	case methodResourceUpdated:
		// Of a resource it names, or a sub-resource of one.
		uri := intercept.StringMember(params, "uri")
		return slices.ContainsFunc(f.URIs, func(of string) bool { return subResource(uri, of) })
	}
	return false
}

// listen serves a 2026-07-28 subscriptions/listen on the virtual server:
// a subscription to each upstream (through its route, as every request
// goes) for what the client asked of it — list changes of every kind it
// asked for, updates of the resources it lists — merged into one stream
// to the client. The client's acknowledgement says what the upstreams
// acknowledged (those that answered within the list timeout), and comes
// before anything else on the stream; every message names the client's
// request as the subscription (its _meta). The stream lasts until the
// client goes, or every upstream's subscription ended, when it ends with
// the request's result.
func (a *aggregator) listen(w http.ResponseWriter, r *http.Request, s *aggSession, req rpcRequest, msgs []*intercept.Message) {
	var p struct {
		Notifications listenFilter `json:"notifications"`
	}
	if err := json.Unmarshal(req.Params, &p); err != nil {
		writeJSONRPCError(w, http.StatusOK, req.ID, &intercept.WireError{Code: intercept.CodeInvalidParams, Message: "subscriptions/listen: " + err.Error()})
		return
	}
	asked := p.Notifications
	if len(asked.URIs) > maxListenURIs {
		writeJSONRPCError(w, http.StatusOK, req.ID, &intercept.WireError{Code: intercept.CodeInvalidParams,
			Message: fmt.Sprintf("subscriptions/listen: %d resource subscriptions, more than the %d one subscription may name", len(asked.URIs), maxListenURIs)})
		return
	}
	// A subscription holds a place in the session limits, as a session
	// does: it is as long-lived, and holds a subscription open on every
	// upstream of the virtual server.
	l, err := a.g.limits.admit(string(TransportStreamableHTTP), s.owner, clientAddr(r))
	if err != nil {
		le, _ := asLimitError(err)
		writeLimitError(w, req.ID, le)
		return
	}
	defer l.release()
	// A URI goes where its read would (holders): to the upstream that
	// lists it, else to those listing a template it fits, else nowhere.
	// One the client may never read there is left out, as its read would
	// be refused: not sent, not acknowledged.
	owned := map[string][]string{}
	if len(asked.URIs) > 0 {
		_, _ = a.list(r, s, "resources/list", "resources")
		for _, uri := range asked.URIs {
			to, _ := a.holders(r, s, uri)
			for _, u := range to {
				if a.readable(r, u, uri, msgs) {
					owned[u] = append(owned[u], uri)
				}
			}
		}
	}

	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	type ack struct {
		filter listenFilter
		ok     bool
	}
	acks := make(chan ack, len(a.vs.Upstreams))
	// Notifications wait here until the client's acknowledgement is sent;
	// a client too far behind misses some (a list change is a cue to list
	// again, and the next one says as much), counted and logged
	// (sluice_messages_withheld_total{reason="behind"}).
	notes := make(chan []byte, 64)
	var drops dropLog // of those missed
	var wg sync.WaitGroup
	for _, u := range a.vs.Upstreams {
		f := listenFilter{Tools: asked.Tools, Prompts: asked.Prompts, Resources: asked.Resources, URIs: owned[u]}
		if !f.Tools && !f.Prompts && !f.Resources && len(f.URIs) == 0 {
			acks <- ack{}
			continue
		}
		wg.Go(func() {
			acked := false
			defer func() {
				if !acked {
					acks <- ack{}
				}
			}()
			a.listenTo(ctx, r, s, u, f, func(method string, m []byte) {
				params := intercept.Member(m, "params")
				if method == methodAcknowledged {
					if !acked {
						var got listenFilter
						acked = json.Unmarshal(intercept.Member(params, "notifications"), &got) == nil
						if acked {
							acks <- ack{filter: got, ok: true}
						}
					}
					return
				}
				if !f.wants(method, params) {
					return
				}
				if method == methodResourceUpdated {
					// Readable when subscribed, perhaps not now
					// (withheld from its listing since, or the policy
					// changed): a cue to read what would be refused.
					// Passed on with its URI alone (resourceUpdate).
					var uri string
					var ok bool
					if params, uri, ok = resourceUpdate(params, func(uri string) bool { return a.readable(r, u, uri, msgs) }); !ok {
						a.g.withheld.denied(u, a.path(), uri)
						return
					}
				}
				out, err := notificationOut(method, params, req.ID)
				if err != nil {
					return
				}
				select {
				case notes <- out:
				default:
					a.g.withheld.behind(&drops, a.path())
				}
			})
		})
	}
	ended := make(chan struct{})
	go func() {
		wg.Wait()
		// No more can be missed: log those the rate limit held back.
		a.g.withheld.behindDone(&drops, a.path())
		close(ended)
	}()

	// The acknowledgement: what some upstream acknowledged of what the
	// client asked.
	var honoured listenFilter
	timer := time.NewTimer(a.listTimeout)
	defer timer.Stop()
wait:
	for range a.vs.Upstreams {
		select {
		case ak := <-acks:
			if !ak.ok {
				continue
			}
			honoured.Tools = honoured.Tools || (asked.Tools && ak.filter.Tools)
			honoured.Prompts = honoured.Prompts || (asked.Prompts && ak.filter.Prompts)
			honoured.Resources = honoured.Resources || (asked.Resources && ak.filter.Resources)
			for _, uri := range ak.filter.URIs {
				if slices.Contains(asked.URIs, uri) && !slices.Contains(honoured.URIs, uri) {
					honoured.URIs = append(honoured.URIs, uri)
				}
			}
		case <-timer.C:
			break wait
		case <-ctx.Done():
			return
		}
	}
	meta := map[string]jsontext.Value{subscriptionKey: req.ID}
	var ackMsg []byte
	ackMsg, err = json.Marshal(map[string]any{"jsonrpc": "2.0", "method": methodAcknowledged,
		"params": map[string]any{"_meta": meta, "notifications": honoured}}, json.Deterministic(true))
	if err != nil {
		writeJSONRPCError(w, http.StatusInternalServerError, req.ID, &intercept.WireError{Code: intercept.CodeInternalError, Message: err.Error()})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	write := func(b []byte) bool {
		if _, err := fmt.Fprintf(w, "event: message\ndata: %s\n\n", b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !write(ackMsg) {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-notes:
			var n rpcRequest
			if json.Unmarshal(m, &n) != nil || !honoured.wants(n.Method, n.Params) {
				continue // of a kind no acknowledgement said
			}
			if !write(m) {
				return
			}
		case <-ended:
			// Every upstream's subscription ended: so does the client's,
			// with its result (a graceful end, not a dropped stream),
			// after what they sent before they ended.
			for drained := false; !drained; {
				select {
				case m := <-notes:
					var n rpcRequest
					if json.Unmarshal(m, &n) == nil && honoured.wants(n.Method, n.Params) && !write(m) {
						return
					}
				default:
					drained = true
				}
			}
			res, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID,
				"result": map[string]any{"resultType": "complete", "_meta": meta}}, json.Deterministic(true))
			write(res)
			return
		}
	}
}

// readable reports whether the client of r could be allowed to read uri
// on upstream, as that upstream's route would decide the read
// (intercept.Interceptor.Readable): with the principal, agent and client
// name the route gives a 2026-07-28 request of the client's (msgs are
// its messages).
func (a *aggregator) readable(r *http.Request, upstream, uri string, msgs []*intercept.Message) bool {
	rt := a.g.routes[upstream]
	if rt == nil {
		return false
	}
	c, err := a.g.ident.identify(r, msgs)
	if err != nil {
		return false
	}
	x := &exchange{rt: rt, principal: intercept.PrincipalFrom(r.Context()), owner: c.principal(), version: modernVersion}
	x.agent, x.clientName = x.owner.agent, x.owner.clientName()
	return a.g.ic.Readable(r.Context(), x.callContext(), uri)
}

// notificationOut is a notification as the client's subscription id
// names it: the upstream's params less their _meta, with id as the
// subscription.
func notificationOut(method string, params, id jsontext.Value) ([]byte, error) {
	p := jsontext.Value(`{}`)
	if params.Kind() == '{' {
		var err error
		if p, err = intercept.WithoutMember(params, "_meta"); err != nil {
			return nil, err
		}
	}
	meta, err := json.Marshal(map[string]jsontext.Value{subscriptionKey: id})
	if err != nil {
		return nil, err
	}
	p = withMember(p, "_meta", meta)
	return json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": p}, json.Deterministic(true))
}

// listenTo opens a subscription with filter f to upstream, through its
// route, and hands each notification on it to on until it ends (ctx
// done, or the upstream ended it or refused it).
func (a *aggregator) listenTo(ctx context.Context, r *http.Request, s *aggSession, upstream string, f listenFilter, on func(method string, m []byte)) {
	in, err := a.inner(r, s, upstream)
	if err != nil {
		return
	}
	filter, err := json.Marshal(f)
	if err != nil {
		return
	}
	params, _, err := modernParams(methodListen, jsontext.Value(`{"notifications":`+string(filter)+`}`), s.meta)
	if err != nil {
		return
	}
	body, err := json.Marshal(rpcRequest{JSONRPC: "2.0", ID: jsontext.Value(fmt.Sprint(a.ids.Add(1))), Method: methodListen, Params: params})
	if err != nil {
		return
	}
	rec := &buffered{h: http.Header{}, onEvent: func(data []byte) {
		var m rpcRequest
		if json.Unmarshal(data, &m) == nil && m.Method != "" && len(m.ID) == 0 {
			on(m.Method, data)
		}
	}}
	req := a.innerRequest(r.WithContext(context.WithValue(ctx, virtualListenKey{}, true)), http.MethodPost, upstream, in, body)
	req.Header.Set(hdrMethod, methodListen)
	a.g.handleMCP(rec, req)
	if rec.sink == nil && ctx.Err() == nil {
		// Not a stream: refused (by the route, or an upstream that does
		// not serve subscriptions), or answered at once.
		a.g.log.Debug("virtual server: an upstream's subscription was not opened", "virtual_server", a.path(), "upstream", upstream,
			"status", rec.status(), "answer", string(rec.body.Bytes()[:min(rec.body.Len(), 200)]))
	}
}
