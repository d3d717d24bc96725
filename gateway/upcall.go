package gateway

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/telemetry"
)

// upCall measures one request forwarded to an upstream, from when it is
// sent until its response arrives or it fails: the upstream client span
// (with a Tracer) and the upstream metric (with Metrics).
//
// A nil *upCall measures nothing. end may be called from any goroutine
// and any number of times; only the first call counts, so each path that
// can finish a call (its response, an upstream failure, the client going
// away, the session or the gateway ending) may end it without agreeing
// with the others who goes first.
type upCall struct {
	span     telemetry.Span // nil without a client span
	metrics  telemetry.Metrics
	upstream string
	start    time.Time
	ended    atomic.Bool
}

// Errors that end the measurement of a call whose response never came.
var (
	// errCancelled: the client cancelled the call or went away first.
	errCancelled = &telemetry.CallError{Type: "cancelled", Message: "the client cancelled the call or went away before its response"}
	// errReplaced: the client sent another request with the same id
	// while this one was pending, so its response can no longer be told
	// apart.
	errReplaced = errors.New("another request with the same id was sent before the response")
)

// errReused ends the measurement of a request refused for reusing the id
// of one still waiting.
var errReused = errors.New("refused: a request with the same id is still waiting")

// reusedIDError answers a request whose id, id, a request still waiting
// on upstream has: the answers could not be told apart, and the waiting
// one's would be screened as the new one's (a tasks/list's as a ping's)
// and go out unread. MCP has a client never reuse an id in a session.
func reusedIDError(id, upstream string) error {
	return &intercept.WireError{Code: intercept.CodeInvalidRequest, Message: fmt.Sprintf(
		"invalid request: not sent: a request with id %s is still waiting on upstream %q; give each request its own id", id, upstream)}
}

// reusedError refuses a request under id, which another request of the
// session holds (replays.claim): one still waiting (broken ""), one whose
// stream broke off unanswered (broken its method), or, as the replicas'
// shared store says, either ("?").
func reusedError(id, broken, upstream string) error {
	switch broken {
	case "":
		return reusedIDError(id, upstream)
	case "?":
		return &intercept.WireError{Code: intercept.CodeInvalidRequest, Message: fmt.Sprintf(
			"invalid request: not sent: a request with id %s is still waiting on upstream %q, or its stream ended unanswered and the upstream may yet answer it; give each request its own id", id, upstream)}
	}
	return &intercept.WireError{Code: intercept.CodeInvalidRequest, Message: fmt.Sprintf(
		"invalid request: not sent: the %s with id %s, whose stream ended unanswered, may yet be answered by upstream %q; give each request its own id", broken, id, upstream)}
}

// upTrace is how startUpCall traces a request's upstream call.
type upTrace int

const (
	// untraced: measured only (a request of a batch).
	untraced upTrace = iota
	// traced: the client span is a child of the call's span in ctx.
	traced
	// tracedApart: the upstream is closed to the client, and gets no
	// trace context of the client's (tracing.go): the client span is the
	// root of a trace of its own, linked to the call's, and the context
	// returned holds no other, even with nothing measured.
	tracedApart
)

// traceFor is how a single request's upstream call is traced: apart
// when the upstream is closed to the client.
func traceFor(closed bool) upTrace {
	if closed {
		return tracedApart
	}
	return traced
}

// startUpCall starts measuring a request about to be sent to upstream up,
// described by c. With tracer set and how traced or tracedApart (a single
// request, not part of a batch), the client span starts and the returned
// context carries it, for [withTraceMeta]. It returns ctx (for
// tracedApart, without the client's trace context) and nil when there is
// nothing to measure.
func startUpCall(ctx context.Context, tracer telemetry.Tracer, metrics telemetry.Metrics, up *Upstream, c telemetry.Call, how upTrace) (context.Context, *upCall) {
	var span telemetry.Span
	switch {
	case how == tracedApart:
		ctx, span = telemetry.StartUpstreamRoot(ctx, tracer, onUpstream(c, up))
	case how == traced && tracer != nil:
		ctx, span = telemetry.StartUpstream(ctx, tracer, onUpstream(c, up))
	}
	if tracer == nil {
		span = nil
	}
	if span == nil && metrics == nil {
		return ctx, nil
	}
	return ctx, &upCall{span: span, metrics: metrics, upstream: up.Name, start: time.Now()}
}

// startUpCall starts measuring a request of x; see the function of the
// same name.
func (g *Gateway) startUpCall(ctx context.Context, x *exchange, c telemetry.Call, how upTrace) (context.Context, *upCall) {
	return startUpCall(ctx, g.opts.Tracer, g.opts.Metrics, &x.rt.up, c, how)
}

// startUpCalls starts measuring the requests of x, about to be sent to a
// bridged upstream, by id, and returns the body to send: x.body, with the
// client span's trace context in params._meta when x is a single request.
// When closed (the upstream is closed to x's client) the body is x.body,
// and trace is the trace context its single request is to be sent with
// instead of the client's (tracedApart; nil for none), for swapIDs.
func (g *Gateway) startUpCalls(ctx context.Context, x *exchange, closed bool) (body []byte, ucs map[string]*upCall, trace jsontext.Value) {
	body = x.body
	if g.opts.Tracer == nil && g.opts.Metrics == nil {
		return body, nil, nil
	}
	for _, m := range x.msgs {
		if m.Kind != intercept.KindRequest {
			continue
		}
		var c telemetry.Call
		how := untraced
		if !x.batch {
			c, how = g.callInfo(x), traceFor(closed)
		}
		sctx, uc := g.startUpCall(ctx, x, c, how)
		switch {
		case how == tracedApart:
			trace = traceparentOf(sctx)
		case how == traced:
			if b, ok := withTraceMeta(sctx, m.Raw, m.Params, m.Meta); ok {
				body = b
			}
		}
		if ucs == nil {
			ucs = make(map[string]*upCall, len(x.msgs))
		}
		ucs[m.IDKey()].end(errReplaced) // a batch reusing an id
		ucs[m.IDKey()] = uc
	}
	return body, ucs, trace
}

func (uc *upCall) end(err error) {
	if uc == nil || !uc.ended.CompareAndSwap(false, true) {
		return
	}
	if uc.span != nil {
		uc.span.End(err)
	}
	if uc.metrics != nil {
		uc.metrics.Upstream(uc.upstream, time.Since(uc.start), err)
	}
}

// onUpstream describes c as sent to up: a client span's network
// attributes are those of the upstream's transport, not the client's.
func onUpstream(c telemetry.Call, up *Upstream) telemetry.Call {
	switch up.Transport {
	case TransportStdio:
		c.Transport, c.NetworkProtocol = telemetry.TransportPipe, ""
	case TransportWebSocket:
		c.Transport, c.NetworkProtocol = telemetry.TransportTCP, "websocket"
	default:
		c.Transport, c.NetworkProtocol = telemetry.TransportTCP, "http"
	}
	return c
}

// responseError is what a response from the upstream says about its call:
// nil for a result, a [telemetry.CallError] typed by the JSON-RPC error
// code for an error.
func responseError(m *intercept.Message) error {
	if m.Kind != intercept.KindError {
		return nil
	}
	e := &telemetry.CallError{Type: errorCodeType(intercept.Member(m.Error, "code")), Message: "JSON-RPC error"}
	if msg := intercept.Member(m.Error, "message"); msg != nil {
		_ = json.Unmarshal(msg, &e.Message)
	}
	return e
}

// errorCodeType is the error.type of an upstream's JSON-RPC error code:
// the code in plain decimal if JSON-RPC defines it (-32700, -32600 to
// -32603, the server errors -32000 to -32099), else
// [telemetry.ErrorTypeOther]. The upstream writes the code, and
// error.type is a span attribute and a metric label: a code as raw JSON
// was any text of any size (credentials too), and a new one per error
// filled the metric's series.
func errorCodeType(code jsontext.Value) string {
	var f float64
	if code.Kind() != '0' || json.Unmarshal(code, &f) != nil || f != math.Trunc(f) || f < -32768 || f > -32000 {
		return telemetry.ErrorTypeOther
	}
	switch c := int(f); {
	case c == intercept.CodeParseError, -32603 <= c && c <= -32600, -32099 <= c && c <= -32000:
		return strconv.Itoa(c)
	}
	return telemetry.ErrorTypeOther
}

// cancelledID returns the id of the request a notifications/cancelled
// from the client withdraws.
func cancelledID(m *intercept.Message) (string, bool) {
	if m.Kind != intercept.KindNotification || m.Method != "notifications/cancelled" {
		return "", false
	}
	id := intercept.Member(m.Params, "requestId")
	return string(id), id != nil
}
