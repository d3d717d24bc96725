package gateway

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/sluicehq/sluice/intercept"
)

// An upstream puts text before its client's model not only in what it
// answers but in what it sends unasked: a sampling request's messages and
// system prompt go into the client's model, an elicitation's message to
// its user, and progress, log and task status messages are shown as they
// come. With classifier.on_result_injection: withhold those are screened
// as results are (intercept.Interceptor.ScreenUpstreamMessage) before the
// client has them: one withheld is not passed on, and a request withheld
// is answered to the upstream by the gateway, so that it does not wait
// for an answer that cannot come.

// withholdUpstreamMessage reports whether m, a message the upstream of cc
// sends its client, is withheld from it, and what the client gets in its
// place (nil: nothing); a request withheld is answered through refuse,
// with the gateway's answer to it (nil: it cannot be), which says nothing
// of why. A cancellation withheld still withdraws its request: the client
// gets it without its reason (withoutReason), or it would go on with a
// request the upstream gave up (a sampling request its model answers, an
// elicitation its user is shown).
func withholdUpstreamMessage(ic *intercept.Interceptor, cc intercept.CallContext, m *intercept.Message, refuse func(m *intercept.Message, answer []byte)) (withheld bool, instead []byte) {
	why := ic.ScreenUpstreamMessage(cc, m)
	if why == "" {
		return false, nil
	}
	if m.Kind == intercept.KindRequest && refuse != nil {
		refuse(m, intercept.WithheldAskResponse(m.ID))
	}
	return true, withoutReason(m)
}

// withoutReason returns m, a cancellation, as its request's id alone
// (what the client acts on), or nil: m is no cancellation, or its id is
// neither a string nor a number.
func withoutReason(m *intercept.Message) []byte {
	if m.Kind != intercept.KindNotification || m.Method != "notifications/cancelled" {
		return nil
	}
	id := intercept.Member(m.Params, "requestId")
	if id == nil || id.Kind() != '"' && id.Kind() != '0' {
		return nil
	}
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%s}}`, id)
}

// mayShowUpstream reports whether b, a message from an upstream, may hold
// a request or notification ic screens: a byte scan, so that what cannot
// goes on undecoded.
func mayShowUpstream(ic *intercept.Interceptor, b []byte) bool {
	return ic.ScreensUpstreamMessages() && mayHoldMemberFold(b, methodMember)
}

var methodMember = []byte(`"method"`)

// answerUpstream posts msg, the gateway's answer to a request the HTTP
// upstream of rt sent the client of session sess (nil: none), to the
// upstream, as the client's answer would go. It is bounded, and the
// upstream's reply is read by no one.
func (g *Gateway) answerUpstream(rt *route, sess *session, msg []byte) {
	ctx, cancel := context.WithTimeout(g.ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rt.url.String(), bytes.NewReader(msg))
	if err != nil {
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range rt.up.Headers {
		req.Header.Set(k, v)
	}
	if sess != nil && sess.upstreamID != "" {
		req.Header.Set(hdrSession, sess.upstreamID)
		if _, v := sess.info(); v != "" {
			req.Header.Set(hdrVersion, v)
		}
	}
	resp, err := g.do(rt, req)
	if err != nil {
		g.log.Debug("answering an upstream's request failed", "upstream", rt.up.Name, "err", err)
		return
	}
	resp.Body.Close()
}

// maxRefusing bounds the answers to withheld requests being sent to an
// upstream at once (refusals).
const maxRefusing = 8

// askRefusals sends the gateway's answers to an upstream's withheld
// requests, each on a goroutine of its own (not the upstream's reader's:
// an upstream blocked writing to it would not read the answer), at most
// maxRefusing at once: an upstream that keeps them waiting while it sends
// more would otherwise have the gateway hold a goroutine, and on HTTP a
// connection, for every one it sent. One past that is not sent, and
// logged: the upstream that floods waits for it. The zero value is
// ready to use.
type askRefusals struct {
	once  sync.Once
	slots chan struct{}
	drops dropLog
}

// send runs answer on a goroutine of its own, or logs that the answer of
// the upstream named upstream is not sent.
func (r *askRefusals) send(log *slog.Logger, upstream string, answer func()) {
	r.once.Do(func() { r.slots = make(chan struct{}, maxRefusing) })
	select {
	case r.slots <- struct{}{}:
	default:
		r.drops.warn(log, "an upstream's request withheld from its client not answered: too many answers to it are being sent already",
			"upstream", upstream, "max", maxRefusing)
		return
	}
	go func() {
		defer func() { <-r.slots }()
		answer()
	}()
}
