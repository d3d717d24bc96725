package demo

import (
	"net/http"

	"github.com/mark3labs/mcp-go/server"
)

// HTTPOptions configures NewHTTPHandler. The zero value serves Streamable
// HTTP that upgrades a POST response to an SSE stream whenever the server has
// something to send before the result (progress, list_changed).
type HTTPOptions struct {
	// JSONResponse answers every POST with a single application/json body and
	// never with an SSE stream. mcp-go has no option for this; it decides per
	// response writer, streaming only when the writer can flush, so the
	// handler hides http.Flusher. Notifications raised while a request runs
	// are then dropped, since nothing can carry them, and GET streams are
	// refused with 405.
	JSONResponse bool
}

// NewHTTPHandler serves s over the Streamable HTTP transport, in both
// protocol eras: initialize with Mcp-Session-Id for 2025-06-18 and
// 2025-11-25, and stateless server/discover for 2026-07-28.
//
// Legacy sessions record their SSE events in memory, so a client can resume
// a broken stream with Last-Event-ID; the events are kept until the client
// ends its session with DELETE. The store is there for delivery as much as
// for resumption: without one, mcp-go v1.2.1 can drop a notification raised
// just before a handler returns (rotate_description's list_changed), because
// its forwarder and the final response race for the stream. With one, the
// response waits for the forwarder. Requests on 2026-07-28 are never
// recorded, as that revision removed resumption.
//
// The handler answers on whatever path it is mounted at; the demo binary
// mounts it at /mcp. Requests that arrive on a loopback address with a
// non-loopback Host header are refused with 403 (mcp-go's DNS rebinding
// protection), so a proxy in front of it must send a loopback Host.
func NewHTTPHandler(s *server.MCPServer, opts HTTPOptions) http.Handler {
	var h http.Handler = server.NewStreamableHTTPServer(s,
		server.WithEventStore(server.NewInMemoryEventStore()))
	if opts.JSONResponse {
		h = withoutFlush(h)
	}
	return h
}

// withoutFlush hides the http.Flusher of the response writer from next.
func withoutFlush(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(unflushable{w}, r)
	})
}

// unflushable embeds only the http.ResponseWriter interface, so none of the
// wrapped writer's optional interfaces (Flusher, Hijacker) are promoted.
type unflushable struct{ http.ResponseWriter }
