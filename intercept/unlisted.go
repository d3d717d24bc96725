package intercept

import (
	"context"
	"errors"
)

// Calls before a listing: the Observer (the inventory) pins an upstream's
// tools and blocks one that drifted from its pin or looks poisoned, but it
// learns what the upstream serves only from a tools/list answer.
// (Observers that keep no inventory, InventoryHasher, are not listed for.) A client
// that calls a tool without listing it — a fresh session, a client that
// cached its list across a restart, a new replica, an agent that knows the
// name — would have its call decided against whatever the gateway saw last
// (or nothing), and forwarded to a tool that changed behind it. So before
// a tools/call of a client (session, or principal without one) that has not
// listed the upstream's tools through this gateway, the gateway lists them
// itself ([CallContext.Lister]) and hands every page to ObserveToolsPage, as it
// does a client's listing: the call is then decided against what the
// upstream serves now (drift blocked, poisoning a risk factor, the catalog
// describing the tool). If that listing fails the call is denied
// (ReasonToolsNotListed) rather than decided blind. A client that lists
// first is never listed for.
//
// Who listed is kept with the listed items (listed.go): per upstream and
// session, or principal (else agent) for requests without one, the last
// maxListed in the process. A client forgotten, or one whose listing went
// through another replica, is listed for once more: it costs a listing.

// ReasonToolsNotListed denies a tools/call the gateway could not list the
// upstream's tools for (see above).
const ReasonToolsNotListed = "tools_not_listed"

// A ToolsLister lists an upstream's tools for the gateway itself, with
// the gateway's own connection to it, and records every page with the
// Interceptor's ObserveToolsPage before it returns, as an answer to a client
// would be. ListTools must be safe for concurrent use; it may serve
// callers that wait on one listing with its outcome.
type ToolsLister interface {
	ListTools(ctx context.Context) error
}

// toolsListedKey names the listing of cc's upstream's tools by the client
// of cc: its session, or its principal (else agent) without one.
func toolsListedKey(ctx context.Context, cc CallContext) listedKey {
	if cc.SessionID != "" {
		return listedKey{upstream: cc.Upstream, owner: cc.SessionID, kind: 's'}
	}
	owner, agent := ownerOf(ctx, cc)
	return listedKey{upstream: cc.Upstream, owner: owner, agent: agent, kind: 't'}
}

// ensureListed lists the tools of cc's upstream with cc.Lister when the
// client of cc has not listed them and the Observer keeps an inventory
// (an InventoryHasher, as the inventory is: see above). It returns why that failed, nil when the call may be decided.
func (i *Interceptor) ensureListed(ctx context.Context, cc CallContext) (err error) {
	if _, inventory := i.Observer.(InventoryHasher); !inventory || cc.Lister == nil {
		return nil
	}
	key := toolsListedKey(ctx, cc)
	if i.listedHas(key) {
		return nil
	}
	if err, _ := ctx.Value(listingFailedKey{}).(error); err != nil {
		return err // just now, for this call (ListForParamHeaders)
	}
	defer func() {
		if r := recover(); r != nil {
			err = errors.New("the listing failed")
		}
	}()
	if err := cc.Lister.ListTools(ctx); err != nil {
		return err
	}
	i.listedAdd(ctx, cc, key)
	return nil
}

// unlistedDecision denies d, a tools/call whose upstream's tools could not
// be listed (err).
func unlistedDecision(d *ActionDescriptor, err error) Decision {
	return Decision{Verdict: Deny, Reason: ReasonToolsNotListed, Mode: ModeThrow,
		PublicReason: "the gateway lists an upstream's tools before a call from a client that has not listed them, to screen the call against its inventory, and could not (" +
			err.Error() + "); the call was not forwarded: list the tools (tools/list) or try again",
		Evidence: Evidence{MatchedToolName: d.ToolName, ReasonCode: ReasonToolsNotListed}}
}
