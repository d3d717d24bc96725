package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
)

// relay pumps messages between a downstream client Conn and an upstream
// Conn, sending every client message through the interceptor first. It
// returns when either side ends or ctx is cancelled; both Conns are closed.
type relay struct {
	up        *Upstream
	ic        *intercept.Interceptor
	log       *slog.Logger
	session   string
	down, upc transport.Conn

	mu      sync.Mutex        // guards the fields below
	pending map[string]string // request id -> method, client to upstream
	agent   string
	version string
}

func (r *relay) callContext() intercept.CallContext {
	r.mu.Lock()
	defer r.mu.Unlock()
	return intercept.CallContext{Upstream: r.up.Name, Target: r.up.target(), SessionID: r.session, Agent: r.agent, ProtocolVersion: r.version}
}

func (r *relay) run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r.pending = make(map[string]string)
	errc := make(chan error, 2)
	go func() { errc <- r.clientToUpstream(ctx) }()
	go func() { errc <- r.upstreamToClient(ctx) }()
	err := <-errc
	cancel()
	r.down.Close()
	r.upc.Close()
	<-errc
	return err
}

func (r *relay) clientToUpstream(ctx context.Context) error {
	for {
		b, err := r.down.Read(ctx)
		if err != nil {
			return err
		}
		msgs, batch, err := intercept.Decode(b)
		if err != nil {
			if werr := r.down.Write(ctx, intercept.ErrorResponse(nil, err)); werr != nil {
				return werr
			}
			continue
		}
		cc := r.callContext()
		if batch {
			if reply := checkBatch(ctx, r.ic, msgs, cc); reply != nil {
				if err := r.down.Write(ctx, reply); err != nil {
					return err
				}
				continue
			}
		} else if reply, ok := r.ic.Check(ctx, msgs[0], cc); !ok {
			if err := r.down.Write(ctx, reply); err != nil {
				return err
			}
			continue
		}
		r.track(msgs)
		if err := r.upc.Write(ctx, b); err != nil {
			r.failPending(ctx, err)
			return fmt.Errorf("upstream %s: %w", r.up.Name, err)
		}
	}
}

// track remembers the client's requests so their responses can be observed
// and, if the upstream dies, answered with an error.
func (r *relay) track(msgs []*intercept.Message) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range msgs {
		if m.Kind == intercept.KindRequest {
			r.pending[m.IDKey()] = m.Method
			if m.Method == "initialize" {
				r.agent = clientNameFromInitialize(m.Params)
			}
		}
		if v, a := versionFromMeta(m.Meta); v != "" {
			r.version = v
			if a != "" {
				r.agent = a
			}
		}
	}
}

func (r *relay) upstreamToClient(ctx context.Context) error {
	for {
		b, err := r.upc.Read(ctx)
		if err != nil {
			r.failPending(ctx, err)
			return fmt.Errorf("upstream %s: %w", r.up.Name, err)
		}
		if err := r.down.Write(ctx, r.hideTools(ctx, b)); err != nil {
			return err
		}
		r.observe(b)
	}
}

// observe looks at a message from the upstream after it was passed on.
func (r *relay) observe(b []byte) {
	msgs, _, err := intercept.Decode(b)
	if err != nil {
		return // not ours to judge: the client got the bytes unchanged
	}
	for _, m := range msgs {
		if m.Kind != intercept.KindResponse && m.Kind != intercept.KindError {
			continue
		}
		r.mu.Lock()
		method, ok := r.pending[m.IDKey()]
		delete(r.pending, m.IDKey())
		if ok && method == "initialize" && m.Kind == intercept.KindResponse {
			r.version = protocolVersionFromResult(m.Result)
		}
		r.mu.Unlock()
		if ok && method == "tools/list" && m.Kind == intercept.KindResponse {
			r.ic.ObserveTools(r.up.Name, m.Result)
		}
	}
}

// failPending answers every request still waiting on the upstream with an
// error naming it, so no client call hangs when an upstream dies.
func (r *relay) failPending(ctx context.Context, cause error) {
	r.mu.Lock()
	ids := make([]string, 0, len(r.pending))
	for id := range r.pending {
		ids = append(ids, id)
	}
	clear(r.pending)
	r.mu.Unlock()
	for _, id := range ids {
		_ = r.down.Write(ctx, intercept.ErrorResponse(jsontext.Value(id), upstreamError(r.up.Name, cause)))
	}
}

func upstreamError(name string, cause error) error {
	return &intercept.WireError{Code: intercept.CodeUpstreamError, Message: fmt.Sprintf("upstream %q is unavailable: %v", name, cause)}
}

// checkBatch decides about every element of a batch. It returns nil when
// the batch may be forwarded whole, or the reply to send instead. A batch
// is forwarded only if every tools/call in it is allowed, so no element can
// pass the decision point by riding along with others.
func checkBatch(ctx context.Context, ic *intercept.Interceptor, msgs []*intercept.Message, cc intercept.CallContext) []byte {
	if !batchesAllowed(cc.ProtocolVersion) {
		return intercept.ErrorResponse(nil, &intercept.WireError{Code: intercept.CodeInvalidRequest,
			Message: fmt.Sprintf("invalid request: JSON-RPC batches are not part of MCP %s", orUnknown(cc.ProtocolVersion))})
	}
	replies := make([]jsontext.Value, len(msgs))
	denied := false
	for i, m := range msgs {
		if reply, ok := ic.Check(ctx, m, cc); !ok {
			replies[i], denied = reply, true
		}
	}
	if !denied {
		return nil
	}
	var out []jsontext.Value
	for i, m := range msgs {
		switch {
		case replies[i] != nil:
			out = append(out, replies[i])
		case m.Kind == intercept.KindRequest:
			out = append(out, intercept.ErrorResponse(m.ID, &intercept.WireError{Code: intercept.CodeInvalidRequest,
				Message: "invalid request: not forwarded because another call in the same batch was not allowed; send it again on its own"}))
		}
	}
	b, _ := json.Marshal(out)
	return b
}

// batchesAllowed reports whether a protocol version has JSON-RPC batches:
// only 2025-03-26 does; 2025-06-18 removed them. An unknown version gets
// none, so a batch can never be the way around the decision point.
func batchesAllowed(version string) bool { return version == "2025-03-26" }

func orUnknown(v string) string {
	if v == "" {
		return "(version not negotiated)"
	}
	return v
}

func clientNameFromInitialize(params jsontext.Value) string {
	var p struct {
		ClientInfo struct {
			Name string `json:"name"`
		} `json:"clientInfo"`
	}
	_ = json.Unmarshal(params, &p)
	return p.ClientInfo.Name
}

func protocolVersionFromResult(result jsontext.Value) string {
	var p struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	_ = json.Unmarshal(result, &p)
	return p.ProtocolVersion
}

// versionFromMeta reads the 2026-07-28 per-request protocol version and
// client name from params._meta.
func versionFromMeta(meta jsontext.Value) (version, client string) {
	if meta == nil {
		return "", ""
	}
	var p struct {
		Version    string `json:"io.modelcontextprotocol/protocolVersion"`
		ClientInfo struct {
			Name string `json:"name"`
		} `json:"io.modelcontextprotocol/clientInfo"`
	}
	_ = json.Unmarshal(meta, &p)
	return p.Version, p.ClientInfo.Name
}
