package telemetry

import "time"

// Metrics records what the gateway measures. Every method must be cheap
// and must not block; implementations are safe for concurrent use.
type Metrics interface {
	// Decision records one policy decision: outcome is the verdict
	// ("allow", "deny", "require_approval"), reason the reason code, d the
	// time the decision took.
	Decision(outcome, reason string, d time.Duration)
	// Classification records how long one classification took.
	Classification(d time.Duration)
	// Upstream records one call to the named upstream; a non-nil err
	// counts as an upstream error of type [ErrorType](err).
	Upstream(name string, d time.Duration, err error)
	// BreakerState records the named upstream's circuit breaker state:
	// "closed", "half-open" or "open".
	BreakerState(name, state string)
	// MemoryStore records the route memory's current size and its total
	// evictions so far (a running total, not a delta).
	MemoryStore(size int, evictions uint64)
	// QueueDepth records how many events wait in the audit queue.
	QueueDepth(n int)
	// AuditLost records n events the audit store could not write.
	AuditLost(n int)
	// AuditAvailable records whether the audit store can write events
	// now (false from a failed write until the next one succeeds).
	AuditAvailable(ok bool)
}

// BreakerStateValue is the number the breaker state gauge takes for a
// state: 0 closed, 1 half-open, 2 open, -1 anything else.
func BreakerStateValue(state string) int64 {
	switch state {
	case "closed":
		return 0
	case "half-open", "half_open", "halfopen":
		return 1
	case "open":
		return 2
	}
	return -1
}
