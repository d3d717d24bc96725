package govern

import (
	"context"

	"github.com/sluicehq/sluice/intercept"
)

// The gates here wrap a Decider and must pass on what it does besides
// deciding: remembering forwarded calls and filtering tools/list.

// forwardTo tells next that a call will be forwarded, if it wants to know.
func forwardTo(next intercept.Decider, ctx context.Context, d *intercept.ActionDescriptor, dec intercept.Decision) error {
	if fo, ok := next.(intercept.ForwardObserver); ok {
		return fo.Forwarded(ctx, d, dec)
	}
	return nil
}

// visibleTo asks next whether a tool is listed, if it filters tools.
func visibleTo(next intercept.Decider, ctx context.Context, d *intercept.ActionDescriptor) bool {
	tf, ok := next.(intercept.ToolFilter)
	return !ok || tf.Visible(ctx, d)
}

// closesTo asks next whether an upstream is closed to a client, if it
// can tell.
func closesTo(next intercept.Decider, ctx context.Context, d *intercept.ActionDescriptor) bool {
	rc, ok := next.(intercept.RouteCloser)
	return ok && rc.Closes(ctx, d)
}

// askedTo passes an upstream's round trip on an approved call on to next
// (intercept.RoundTripObserver).
func askedTo(next intercept.Decider, ctx context.Context, approvalID, state string) {
	if ro, ok := next.(intercept.RoundTripObserver); ok {
		ro.UpstreamAsked(ctx, approvalID, state)
	}
}

// linkTo passes a session an allowed action belongs to on to next
// (intercept.SessionLinker).
func linkTo(next intercept.Decider, ctx context.Context, d *intercept.ActionDescriptor, session string) error {
	if sl, ok := next.(intercept.SessionLinker); ok {
		return sl.LinkSession(ctx, d, session)
	}
	return nil
}
