package intercept

import (
	"context"
	"sync"
)

// A RouteCloser is a Decider that can tell whether an upstream is closed
// to a client: whether a carry to it (see [ActionDescriptor.IsCarry])
// would be denied for route memory alone, whatever it carried. The
// gateway asks it of every HTTP request to an upstream, to know whether
// the client's own HTTP headers may go on (they hold bytes of the
// client's choosing as surely as a carry does); d names the upstream, the
// agent, the session and the principal as a carry's descriptor would, with
// the carry name [CarryPrefix]+"headers". Closes must be safe for
// concurrent use, must not block for long, record anything or keep d, and
// should report true when it cannot tell (a route memory that cannot be
// read). A Decider that is not a RouteCloser closes nothing this way.
type RouteCloser interface {
	Closes(ctx context.Context, d *ActionDescriptor) bool
}

// CarryHeaders is the Method of the descriptor a [RouteCloser] is asked
// about, and CarryPrefix+it its name: the client's HTTP headers.
const CarryHeaders = "headers"

var closeDescriptors = sync.Pool{New: func() any { return new(ActionDescriptor) }}

// Closed reports whether the upstream of cc is closed to the client of cc
// (see [RouteCloser]): false when the Decider cannot tell.
func (i *Interceptor) Closed(ctx context.Context, cc CallContext) bool {
	rc, ok := i.Decider.(RouteCloser)
	if !ok {
		return false
	}
	if cc.Principal == nil {
		cc.Principal = PrincipalFrom(ctx)
	}
	// Asked of every request to an HTTP upstream: a descriptor from a
	// pool spares it an allocation (a RouteCloser keeps none).
	d := closeDescriptors.Get().(*ActionDescriptor)
	defer func() {
		*d = ActionDescriptor{}
		closeDescriptors.Put(d)
	}()
	*d = ActionDescriptor{Method: CarryHeaders, ToolName: CarryPrefix + CarryHeaders, TargetEndpoint: cc.Target,
		SessionID: cc.SessionID, Upstream: cc.Upstream, Agent: cc.Agent, ProtocolVersion: cc.ProtocolVersion,
		Principal: cc.Principal, ClientName: cc.ClientName, UpstreamTools: i.catalogNames(cc.Upstream)}
	if p := cc.Principal; p != nil && p.ID != d.Agent {
		// As Descriptor: the principal is the agent.
		if d.ClientName == "" {
			d.ClientName = d.Agent
		}
		d.Agent = p.ID
	}
	return rc.Closes(ctx, d)
}

// SessionLinker is a Decider told that an action it allowed (and was told
// of as forwarded, [ForwardObserver]) belongs to another session as well,
// one named only after the decision: an A2A conversation's first message
// is decided before the agent answers with the conversation's id.
// LinkSession remembers what Forwarded remembered of d under that session
// too, so a session-scope route rule closes the conversation its source
// was read in. An error means it could not: the caller must then not let
// the session go on.
type SessionLinker interface {
	LinkSession(ctx context.Context, d *ActionDescriptor, session string) error
}

// LinkSession tells the Decider that d, an action DecideAction allowed,
// belongs to session as well ([SessionLinker]); a Decider that is not a
// SessionLinker remembers nothing, and nothing fails.
func (i *Interceptor) LinkSession(ctx context.Context, d *ActionDescriptor, session string) error {
	if sl, ok := i.Decider.(SessionLinker); ok && d != nil && session != d.SessionID {
		return sl.LinkSession(ctx, d, session)
	}
	return nil
}
