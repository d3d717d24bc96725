package main

import (
	"time"

	"github.com/sluicehq/sluice/gateway"
	"github.com/sluicehq/sluice/telemetry"
)

// identityRefused records a request the gateway refused because of who
// it claims to be (another principal's session, a second initialize) as
// a sluice.identity_refused event, at most identityEventsPerSecond a
// second, like authFailure: replaying a stolen session id in a loop must
// not fill the audit queue that decisions wait on. The gateway has
// logged each one already.
func (r *recorder) identityRefused(ir gateway.IdentityRefusal) {
	now := time.Now().Unix()
	if sec := r.idSec.Load(); sec != now && r.idSec.CompareAndSwap(sec, now) {
		if n := r.idCount.Swap(0); n > identityEventsPerSecond {
			r.log.Warn("identity refusals not recorded as events (over the per-second cap)", "count", n-identityEventsPerSecond)
		}
	}
	if r.idCount.Add(1) > identityEventsPerSecond {
		return
	}
	r.append(telemetry.Event{Type: "sluice.identity_refused", Time: time.Now(), Agent: ir.Agent, Session: ir.Session, Upstream: ir.Route, Attrs: map[string]any{
		"transport": ir.Transport, "session": ir.Session, "route": ir.Route, "agent": ir.Agent,
		"principal": ir.Principal, "claimed": ir.Claimed, "reason": ir.Reason,
	}})
}

// identityEventsPerSecond caps the sluice.identity_refused events of a
// second.
const identityEventsPerSecond = 50

// cardRefused records an A2A agent card the gateway refused (not JSON, an
// interface elsewhere, unreachable).
func (r *recorder) cardRefused(agent, reason string) {
	r.append(telemetry.Event{Type: "sluice.a2a_card_refused", Time: time.Now(), Upstream: "a2a:" + agent, Attrs: map[string]any{
		"agent": agent, "reason": reason,
	}})
}

// pushRefused records an agent's push the A2A push relay did not deliver
// for its own reasons (a wrong token, a lapsed credential, another task).
func (r *recorder) pushRefused(agent, principal, reason string) {
	r.append(telemetry.Event{Type: "sluice.a2a_push_refused", Time: time.Now(), Upstream: "a2a:" + agent, Agent: principal, Attrs: map[string]any{
		"agent": agent, "principal": principal, "reason": reason,
	}})
}

// aggregateDropped records an upstream, or one of its tools or prompts, a
// virtual server left out of a list (the upstream failed, or a name was
// taken); virtual is "" for /mcp.
func (r *recorder) aggregateDropped(virtual, upstream, why string) {
	r.append(telemetry.Event{Type: "sluice.aggregate_dropped", Time: time.Now(), Upstream: upstream, Attrs: map[string]any{
		"virtual_server": virtual, "reason": why,
	}})
}
