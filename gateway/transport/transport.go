// Package transport carries whole JSON-RPC messages over the MCP
// transports: stdio, legacy HTTP+SSE, WebSocket and Streamable HTTP (as a
// client). Each is a [Conn]; the gateway relays between two of them and
// puts its decision point in between. Nothing here interprets messages
// beyond what framing requires.
package transport

import (
	"context"
	"errors"
)

// A Conn carries whole JSON-RPC messages (one message or one batch array
// per call) in both directions. Read and Write may be called concurrently
// with each other, but each by one goroutine at a time. Close unblocks a
// pending Read and is safe to call more than once.
//
// Every Conn in this package sends a message in the form [Compact] gives
// it, never the caller's bytes as they are, and refuses one that is not
// JSON with a *[MessageError], after which the Conn is still usable.
type Conn interface {
	Read(ctx context.Context) ([]byte, error)
	Write(ctx context.Context, msg []byte) error
	Close() error
}

// A Dialer opens a new upstream Conn; each downstream session gets its own.
type Dialer interface {
	Dial(ctx context.Context) (Conn, error)
}

// ErrClosed is returned by Conn methods after Close.
var ErrClosed = errors.New("transport: connection closed")
