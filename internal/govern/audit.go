package govern

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice/intercept"
)

// ReasonAuditUnavailable is the reason code of a call refused because the
// audit store cannot write events (audit.on_failure: deny).
const ReasonAuditUnavailable = "audit_unavailable"

// AuditGate ties calls to the audit store, outermost in the chain: with
// Deny it refuses every call while events cannot be written, and with
// Record it makes the event of an allowed call durable before the call is
// forwarded. Its fields are set before first use; it is safe for
// concurrent use.
type AuditGate struct {
	// Next decides the calls the gate lets through.
	Next intercept.Decider
	// Err reports why events cannot be written now, nil when they can
	// (audit.Store.Err). Nil means they always can.
	Err func() error
	// Deny refuses calls with ReasonAuditUnavailable while Err reports an
	// error, and refuses a call whose Record failed (audit.on_failure:
	// deny). False lets calls through; the loss is then only logged and
	// counted by whoever writes the events.
	Deny bool
	// Record, if set, records an allowed call before it is forwarded and
	// returns once the record is durable (audit.sync: commit); an error
	// means it was not recorded. It is called after Next's Forwarded
	// succeeded, so a call refused there leaves no allow event.
	Record func(ctx context.Context, d *intercept.ActionDescriptor, dec intercept.Decision) error
}

func (g *AuditGate) Decide(ctx context.Context, d *intercept.ActionDescriptor) (intercept.Decision, error) {
	if err := g.unavailable(); err != nil {
		return intercept.Decision{
			Verdict:      intercept.Deny,
			Reason:       ReasonAuditUnavailable,
			PublicReason: "the gateway cannot record calls right now (its audit store is unavailable), so none are forwarded; try again later",
			Evidence:     intercept.Evidence{MatchedToolName: d.ToolName, ReasonCode: ReasonAuditUnavailable},
		}, nil
	}
	return intercept.Decide(ctx, g.Next, d), nil
}

// unavailable is Err's error when the gate refuses calls for it.
func (g *AuditGate) unavailable() error {
	if !g.Deny || g.Err == nil {
		return nil
	}
	return g.Err()
}

// Forwarded passes the call on to Next, then records it. In deny mode a
// store that failed since Decide, or a failed Record, refuses the call.
func (g *AuditGate) Forwarded(ctx context.Context, d *intercept.ActionDescriptor, dec intercept.Decision) error {
	if err := forwardTo(g.Next, ctx, d, dec); err != nil {
		return err
	}
	if g.unavailable() != nil {
		return fmt.Errorf("%s: events cannot be written", ReasonAuditUnavailable)
	}
	if g.Record != nil {
		// The error goes to the client: say what, not the store's path.
		if err := g.Record(ctx, d, dec); err != nil && g.Deny {
			return fmt.Errorf("%s: the call's event could not be written", ReasonAuditUnavailable)
		}
	}
	return nil
}

// Visible implements intercept.ToolFilter by asking Next: an unavailable
// audit store is temporary, so it hides nothing.
func (g *AuditGate) Visible(ctx context.Context, d *intercept.ActionDescriptor) bool {
	return visibleTo(g.Next, ctx, d)
}

var (
	_ intercept.ForwardObserver = (*AuditGate)(nil)
	_ intercept.ToolFilter      = (*AuditGate)(nil)
	_ intercept.RouteCloser     = (*AuditGate)(nil)
	_ intercept.RouteCloser     = (*RateGate)(nil)
	_ intercept.RouteCloser     = (*DriftGate)(nil)
	_ intercept.RouteCloser     = (*Advisor)(nil)

	_ intercept.RoundTripObserver = (*AuditGate)(nil)
	_ intercept.RoundTripObserver = (*RateGate)(nil)
)

// UpstreamAsked implements intercept.RoundTripObserver by telling Next.
func (g *AuditGate) UpstreamAsked(ctx context.Context, approvalID, state string) {
	askedTo(g.Next, ctx, approvalID, state)
}

// Closes implements intercept.RouteCloser by asking Next.
func (g *AuditGate) Closes(ctx context.Context, d *intercept.ActionDescriptor) bool {
	return closesTo(g.Next, ctx, d)
}

// LinkSession implements intercept.SessionLinker by telling Next.
func (g *AuditGate) LinkSession(ctx context.Context, d *intercept.ActionDescriptor, session string) error {
	return linkTo(g.Next, ctx, d, session)
}
