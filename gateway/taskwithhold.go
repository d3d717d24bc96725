package gateway

import (
	"context"
	"log/slog"
	"sync/atomic"

	"github.com/sluicehq/sluice/intercept"
)

// Messages about another's task: an upstream sees one set of credentials
// for every agent, so it may tell any client about any task, as mcp-go
// tells every session of each task's notifications/tasks/status. Every
// path that carries an upstream's messages to a client withholds a
// notification or request about an MCP task that client does not own
// (intercept.ForeignTask), and only that message: in a batch, the rest is
// delivered. Each is counted and logged.

// withheldTasks counts the messages withheld from clients for naming a
// task they do not own; safe for concurrent use.
type withheldTasks struct {
	log     *slog.Logger                                // never nil
	metrics interface{ MessageWithheld(reason string) } // nil: none
	n       atomic.Uint64
}

// withhold reports whether m, from cc's upstream, must not reach the
// client of cc, and counts and logs it if so.
func (w *withheldTasks) withhold(ctx context.Context, ic *intercept.Interceptor, cc intercept.CallContext, m *intercept.Message) bool {
	if !ic.ForeignTask(ctx, cc, m) {
		return false
	}
	id, _ := intercept.NamedTask(m)
	n := w.n.Add(1)
	if w.metrics != nil {
		w.metrics.MessageWithheld("foreign_task")
	}
	w.log.Debug("an upstream message about an MCP task the client does not own was not delivered",
		"upstream", cc.Upstream, "method", m.Method, "task", id, "agent", cc.Agent, "withheld", n)
	return true
}

// TasksWithheld is how many messages from upstreams the gateway has
// withheld from clients because they were about an MCP task the client
// does not own (another agent's, or one the gateway never saw created).
func (g *Gateway) TasksWithheld() uint64 { return g.withheld.n.Load() }
