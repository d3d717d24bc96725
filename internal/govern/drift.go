// Package govern composes Sluice's deciders into the one the decision
// point asks: inventory drift first, then deterministic policy with the
// classifier's advice beside it, then the approval hold, and around it all
// the audit gate. It holds no state of its own; each piece keeps its own.
package govern

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice/intercept"
)

// ReasonDrift is the reason code of a call to a tool whose definition
// changed since it was pinned.
const ReasonDrift = "inventory_drift"

// Blocker says whether a tool is blocked, e.g. by inventory drift.
type Blocker interface {
	Blocked(upstream, tool string) (reason string, blocked bool)
}

// ReasonPoisoned is the reason code of a read (prompts/get,
// resources/read) of a prompt or resource withheld from its listing for
// looking poisoned.
const ReasonPoisoned = "inventory_poisoning"

// A Withholder says whether a read (prompt:NAME, resource:URI) is of a
// prompt or resource withheld from its listing; the inventory is one.
type Withholder interface {
	Withheld(upstream, action string) (reason string, withheld bool)
}

// DriftGate denies calls to blocked tools before Next is asked, as a soft
// deny the model can read. Reads (resources/read, prompts/get) are not
// tools: one of a prompt or resource withheld from its listing is denied
// when the Inventory is also a Withholder, the rest go to Next. Safe for
// concurrent use.
type DriftGate struct {
	Next      intercept.Decider
	Inventory Blocker
}

func (g *DriftGate) Decide(ctx context.Context, d *intercept.ActionDescriptor) (intercept.Decision, error) {
	if g.Inventory != nil && d.IsTool() {
		if why, blocked := g.Inventory.Blocked(d.Upstream, d.ToolName); blocked {
			return intercept.Decision{
				Verdict:      intercept.Deny,
				Reason:       ReasonDrift,
				PublicReason: fmt.Sprintf("tool %s is blocked by the gateway's tool inventory (%s)", d.ToolName, why),
				Mode:         intercept.ModeToolResult,
				Evidence:     intercept.Evidence{MatchedToolName: d.ToolName, ReasonCode: ReasonDrift},
			}, nil
		}
	}
	if w, ok := g.Inventory.(Withholder); ok && !d.IsTool() {
		if why, withheld := w.Withheld(d.Upstream, d.ToolName); withheld {
			return intercept.Decision{
				Verdict:      intercept.Deny,
				Reason:       ReasonPoisoned,
				PublicReason: fmt.Sprintf("%s was withheld from its upstream's listing because it looks like tool poisoning, and is not served (%s)", d.ToolName, why),
				Mode:         intercept.ModeThrow,
				Evidence:     intercept.Evidence{MatchedToolName: d.ToolName, ReasonCode: ReasonPoisoned},
			}, nil
		}
	}
	return intercept.Decide(ctx, g.Next, d), nil
}

// Forwarded passes route-memory updates on to Next.
func (g *DriftGate) Forwarded(ctx context.Context, d *intercept.ActionDescriptor, dec intercept.Decision) error {
	return forwardTo(g.Next, ctx, d, dec)
}

// Visible implements intercept.ToolFilter by asking Next: drift blocks are
// temporary, so they hide nothing here (the inventory, a ToolScreener,
// shows a drifted tool as pinned and leaves out one outside the pin). A
// read of a prompt or resource withheld from its listing is never allowed
// while it is withheld (Decide), and is not visible.
func (g *DriftGate) Visible(ctx context.Context, d *intercept.ActionDescriptor) bool {
	if w, ok := g.Inventory.(Withholder); ok && !d.IsTool() {
		if _, withheld := w.Withheld(d.Upstream, d.ToolName); withheld {
			return false
		}
	}
	return visibleTo(g.Next, ctx, d)
}

// Closes implements intercept.RouteCloser by asking Next.
func (g *DriftGate) Closes(ctx context.Context, d *intercept.ActionDescriptor) bool {
	return closesTo(g.Next, ctx, d)
}

// LinkSession implements intercept.SessionLinker by telling Next.
func (g *DriftGate) LinkSession(ctx context.Context, d *intercept.ActionDescriptor, session string) error {
	return linkTo(g.Next, ctx, d, session)
}
