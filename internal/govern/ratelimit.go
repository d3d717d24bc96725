package govern

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/netip"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/ratelimit"
)

// ReasonRateLimited is the reason code of a call refused because a rate
// limit's bucket is empty.
const ReasonRateLimited = "rate_limited"

// RateRule is one token bucket per distinct value of its By dimensions,
// for the calls it matches.
type RateRule struct {
	// ID names the rule in denials, evidence and bucket keys.
	ID string
	// By is what gets its own bucket: any of "principal" (the calling
	// agent), "client" (the address the call came from, as
	// intercept.ClientAddrFrom its context gives it: an IP, an IPv6 /64,
	// every loopback address one client (rateClient); "" over stdio),
	// "upstream", "tool"; empty is one bucket for every
	// call the rule matches (a global limit). Every call without an
	// authenticated principal is one principal (rateAgent), whatever name
	// it gives, as it is to route memory.
	By []string
	// Upstream and Tool, if not empty, are path.Match patterns the call's
	// upstream and tool must match, except that * also matches "/" ("*"
	// matches all, "resource:file:///srv/*" every read under /srv). Reads
	// match as policy names them (policy.ActionName: resource:URI in its
	// normal form, so another spelling of a URI is the same read), and the
	// pattern is put in the same form.
	Upstream, Tool string
	Limit          ratelimit.Limit
}

func (r *RateRule) matches(d *intercept.ActionDescriptor) bool {
	if !glob(r.Upstream, d.Upstream) {
		return false
	}
	if d.IsCarry() && !strings.HasPrefix(r.Tool, intercept.CarryPrefix) {
		// A completion or a notification is not a call: only a rule that
		// names carries (tool: "mcp:*") counts them.
		return false
	}
	return r.Tool == "" || glob(policy.NormalName(r.Tool), policy.ActionName(d))
}

// glob is path.Match(pattern, s) with * and ? matching "/" too: names are
// not paths (a read's name holds a URI). An empty pattern matches all.
func glob(pattern, s string) bool {
	if pattern == "" {
		return true
	}
	if m, _ := path.Match(pattern, s); m || !strings.ContainsAny(pattern, "*?") || !strings.Contains(s, "/") {
		return m
	}
	const sep = "\x00" // "/" as a character path.Match does not treat apart
	m, _ := path.Match(strings.ReplaceAll(pattern, "/", sep), strings.ReplaceAll(s, "/", sep))
	return m
}

// rateClient is the client a call from addr (intercept.ClientAddrFrom)
// counts as under a rule by client: addr, except that every loopback
// address is one client. On Linux a process on the gateway's host
// connects from whichever of 127.0.0.0/8 it likes, and would otherwise
// get a full bucket from each: the address is the one thing a client
// renaming itself at every call cannot change (as the sign-in throttle
// counts loopback, throttle.Guesser). An IPv6 client comes as its /64
// (throttle.Client): ::1 as ::/64, which holds no other address a peer
// connects from.
func rateClient(addr string) string {
	if a, err := netip.ParseAddr(addr); err == nil && a.Unmap().IsLoopback() {
		return "loopback"
	}
	if p, err := netip.ParsePrefix(addr); err == nil && p.Contains(netip.IPv6Loopback()) {
		return "loopback"
	}
	return addr
}

// bucket is the bucket of d under r, charged to owner (bucketOwner): the
// limiter bounds each owner's buckets, so names an agent makes up (tools,
// upstreams) fill its own share only.
func (r *RateRule) bucket(ctx context.Context, d *intercept.ActionDescriptor, client, owner string) ratelimit.Bucket {
	return ratelimit.Bucket{Key: r.key(d, rateAgent(ctx, d), client), Owner: owner, Limit: r.Limit}
}

// rateAgent is the principal d counts as under a rule by principal: its
// agent when authenticated; otherwise "", one for every unauthenticated
// caller (no principal's ID is empty: package auth refuses one), since
// such a name is the client's claim, made afresh at every 2026-07-28
// request: a client renaming itself at each call had a full bucket for
// each name (TestAttackRenamedAgentEscapesPrincipalLimit). As
// policy.Options.OneUnauthenticatedAgent makes them one agent to route
// memory.
func rateAgent(ctx context.Context, d *intercept.ActionDescriptor) string {
	if authenticated(ctx, d) {
		return d.Agent
	}
	return ""
}

// bucketOwner is whom d's buckets are charged to: its agent when
// authenticated; otherwise its client (rateClient), since an
// unauthenticated agent is whatever name its client gives, at every
// 2026-07-28 call: a client renaming itself had a share for each name,
// filled the in-process table with spent buckets (every other client's
// new bucket then refused, "the table is full") and grew Redis's
// without bound. As held approvals, cursors, states and tasks count an
// unauthenticated client's records by its address.
func bucketOwner(ctx context.Context, d *intercept.ActionDescriptor, client string) string {
	if authenticated(ctx, d) {
		return d.Agent
	}
	return "\x00client " + client
}

// authenticated reports whether d's agent is a principal's, not a name
// its client gave.
func authenticated(ctx context.Context, d *intercept.ActionDescriptor) bool {
	return d.Principal != nil || intercept.PrincipalFrom(ctx) != nil
}

// maxKeyName is the longest value of a dimension a bucket's key holds as
// it is; a longer one (a made-up tool's name can be as long as a request,
// 4 MiB) is held as its SHA-256, or an agent's thousand buckets would hold
// 4 GiB.
const maxKeyName = 256

// key is the bucket of d, from agent (rateAgent) and sent from client,
// under r: the rule's id and the values of its dimensions, length-prefixed
// (or, past maxKeyName, "#" and the value's SHA-256) so no agent name can
// spell another's key.
func (r *RateRule) key(d *intercept.ActionDescriptor, agent, client string) string {
	var b strings.Builder
	b.Grow(len(r.ID) + 64)
	b.WriteString(r.ID)
	for _, dim := range r.By {
		var v string
		switch dim {
		case "principal":
			v = agent
		case "client":
			v = client
		case "upstream":
			v = d.Upstream
		case "tool":
			v = policy.ActionName(d)
		}
		b.WriteByte('|')
		if len(v) > maxKeyName {
			sum := sha256.Sum256([]byte(v))
			b.WriteByte('#')
			b.WriteString(hex.EncodeToString(sum[:]))
			continue
		}
		b.WriteString(strconv.Itoa(len(v)))
		b.WriteByte(':')
		b.WriteString(v)
	}
	return b.String()
}

// RateGate takes a token from the bucket of every rule a call matches,
// in order, before Next is asked; an empty bucket denies with rate_limited
// (a soft deny with a retry-after hint), as does a bucket the Limiter has
// no room to make (its table for the agent is full of spent buckets:
// forgetting one would hand it back full), and a bucket that cannot be
// read (Redis down) denies with policy_error: the limit fails closed. A call
// a rule refuses gives back the tokens of the rules before it, a call
// Next denies those of rules other agents share (not by principal or
// client), and a call Next holds for approval gives its tokens back (if
// the Limiter can refund): it is counted once, when it is released, not
// at every attempt.
// Safe for concurrent use.
type RateGate struct {
	Next    intercept.Decider
	Rules   []RateRule
	Limiter ratelimit.Limiter
}

// refunder is a Limiter that can give back a token it took.
type refunder interface {
	Refund(ctx context.Context, b ratelimit.Bucket) error
}

func (g *RateGate) Decide(ctx context.Context, d *intercept.ActionDescriptor) (intercept.Decision, error) {
	var buf [8]int
	taken := buf[:0] // the rules a token was taken from
	client := rateClient(intercept.ClientAddrFrom(ctx))
	owner := bucketOwner(ctx, d, client)
	for i := range g.Rules {
		r := &g.Rules[i]
		if !r.matches(d) {
			continue
		}
		res, err := g.Limiter.Take(ctx, r.bucket(ctx, d, client, owner))
		if err != nil || !res.Allowed {
			// Refused: the rules before keep no token, so an agent over
			// its own limit cannot drain a shared (global) one.
			g.refund(ctx, d, taken)
		}
		if err != nil {
			return intercept.Decision{
				Verdict:      intercept.Deny,
				Reason:       intercept.ReasonPolicyError,
				PublicReason: "rate limit " + r.ID + " could not be checked; the call was not forwarded",
				RuleID:       r.ID,
				Evidence:     intercept.Evidence{MatchedToolName: d.ToolName, ReasonCode: intercept.ReasonPolicyError},
			}, nil
		}
		if !res.Allowed {
			why := fmt.Sprintf("rate limit %s (%s) reached; retry after %.1fs", r.ID, r.Limit, res.RetryAfter.Seconds())
			if res.TableFull {
				why = fmt.Sprintf("rate limit %s (%s): the rate limiter's table is full, and a spent bucket is never forgotten to make room; retry after %.1fs", r.ID, r.Limit, res.RetryAfter.Seconds())
			}
			return intercept.Decision{
				Verdict:      intercept.Deny,
				Reason:       ReasonRateLimited,
				PublicReason: why,
				Mode:         intercept.ModeToolResult,
				RuleID:       r.ID,
				RetryAfter:   res.RetryAfter,
				Evidence:     intercept.Evidence{MatchedToolName: d.ToolName, ReasonCode: ReasonRateLimited},
			}, nil
		}
		taken = append(taken, i)
	}
	dec := intercept.Decide(ctx, g.Next, d)
	switch dec.Verdict {
	case intercept.RequireApproval:
		// Held, not forwarded: the hold and every retry while it waits
		// would otherwise each take a token, and the release another, so
		// an approved call under 1/h could never go through.
		g.refund(ctx, d, taken)
	case intercept.Deny:
		// Not forwarded: a bucket other agents share gets its token back,
		// or an agent allowed nothing would drain it with calls that
		// never reach an upstream. Its own buckets count its attempts:
		// by principal, and, for an unauthenticated agent, by the address
		// it calls from (which renaming itself cannot change). For an
		// authenticated one the address's bucket is shared with every
		// other principal calling from it (all the gateway's host's are
		// "loopback"): it gets its token back.
		byClient := !authenticated(ctx, d)
		g.refund(ctx, d, slices.DeleteFunc(taken, func(i int) bool {
			by := g.Rules[i].By
			return slices.Contains(by, "principal") || byClient && slices.Contains(by, "client")
		}))
	}
	return dec, nil
}

// refund gives back the tokens d took from the rules taken, as far as the
// Limiter can; a refund that fails leaves the call counted.
func (g *RateGate) refund(ctx context.Context, d *intercept.ActionDescriptor, taken []int) {
	rf, ok := g.Limiter.(refunder)
	if !ok {
		return
	}
	client := rateClient(intercept.ClientAddrFrom(ctx))
	owner := bucketOwner(ctx, d, client)
	for _, i := range taken {
		r := &g.Rules[i]
		_ = rf.Refund(ctx, r.bucket(ctx, d, client, owner))
	}
}

// Forwarded passes route-memory updates and approvals on to Next.
func (g *RateGate) Forwarded(ctx context.Context, d *intercept.ActionDescriptor, dec intercept.Decision) error {
	return forwardTo(g.Next, ctx, d, dec)
}

// UpstreamAsked implements intercept.RoundTripObserver by telling Next.
func (g *RateGate) UpstreamAsked(ctx context.Context, approvalID, state string) {
	askedTo(g.Next, ctx, approvalID, state)
}

// Visible implements intercept.ToolFilter by asking Next: an empty bucket
// is temporary and hides nothing.
func (g *RateGate) Visible(ctx context.Context, d *intercept.ActionDescriptor) bool {
	return visibleTo(g.Next, ctx, d)
}

// Closes implements intercept.RouteCloser by asking Next: a bucket closes
// no upstream.
func (g *RateGate) Closes(ctx context.Context, d *intercept.ActionDescriptor) bool {
	return closesTo(g.Next, ctx, d)
}

// LinkSession implements intercept.SessionLinker by telling Next.
func (g *RateGate) LinkSession(ctx context.Context, d *intercept.ActionDescriptor, session string) error {
	return linkTo(g.Next, ctx, d, session)
}
