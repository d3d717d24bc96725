package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
)

// Listing for the inventory (intercept's unlisted.go): before a tools/call
// of a client that has not listed the upstream's tools, the interceptor
// has the route's toolLister list them with a connection of the gateway's
// own — the route's dialer, as a session's: an HTTP upstream gets a
// session of its own (ended with DELETE), a stdio upstream a process of its
// own — and record every page with ObserveToolsPage (told the cursor it
// asked with), so the inventory compares
// what the upstream serves now with the pin before the call is decided.
// The listing speaks 2025-11-25 (initialize, then tools/list page by
// page); an upstream that refuses initialize is asked as a 2026-07-28
// server, with the version in _meta. One listing runs per upstream at a
// time; callers that waited for one take its outcome, unless it ended
// because the caller that started it went away.

const (
	// listTimeout bounds one listing, connection included: a stdio server
	// started by npx or uvx may take seconds to answer initialize.
	listTimeout = 30 * time.Second
	// maxListPages bounds the pages of one listing (a server whose list
	// never ends is pinned as far as it went: see the inventory).
	maxListPages = 100
)

// toolLister lists one route's tools (intercept.ToolsLister).
type toolLister struct {
	g    *Gateway
	rt   *route
	turn chan struct{} // holds a token while a listing runs

	// Written while holding turn, read by the next holder.
	done time.Time // when the last listing ended
	err  error     // how it ended
	// closed is closed once the last listing's connection is: the next
	// listing waits for it, so that a stdio server slow to exit (up to
	// the stop's grace period) does not have a process of every listing
	// running at once, outside max_children. Nil before the first.
	closed chan struct{}
}

var _ intercept.ToolsLister = (*toolLister)(nil)

func newToolLister(g *Gateway, rt *route) *toolLister {
	return &toolLister{g: g, rt: rt, turn: make(chan struct{}, 1)}
}

// ListTools lists the route's tools and records them (see above).
func (l *toolLister) ListTools(ctx context.Context) error {
	asked := time.Now()
	select {
	case l.turn <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-l.turn }()
	if l.done.After(asked) {
		return l.err // a listing ended while this caller waited: it serves it too
	}
	lctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	stop := context.AfterFunc(l.g.ctx, cancel)
	defer stop()
	err := l.list(lctx)
	if err != nil && ctx.Err() != nil && l.g.ctx.Err() == nil {
		// This caller went away (its client dropped the request): that
		// says nothing of the upstream, and callers that waited on this
		// listing list for themselves rather than take its error.
		return err
	}
	if err != nil {
		err = fmt.Errorf("listing upstream %s's tools: %w", l.rt.up.Name, err)
		l.g.log.Warn("could not list an upstream's tools for a client that had not", "upstream", l.rt.up.Name, "err", err)
	} else {
		l.g.log.Debug("listed an upstream's tools for a client that had not", "upstream", l.rt.up.Name)
	}
	l.done, l.err = time.Now(), err
	return err
}

// listClientInfo is the gateway as a client of its upstreams.
const listClientInfo = `{"name":"sluice","version":"1"}`

func (l *toolLister) list(ctx context.Context) error {
	if l.closed != nil {
		select {
		case <-l.closed:
		case <-ctx.Done():
			return fmt.Errorf("waiting for the last listing's connection to close: %w", ctx.Err())
		}
	}
	conn, err := l.rt.dialer.Dial(ctx)
	if err != nil {
		return fmt.Errorf("connecting: %w", err)
	}
	// Closed once the listing is done, without the call waiting on it: a
	// stdio child may take its grace period to exit, an HTTP session's
	// DELETE its round trip. The next listing waits for it (closed).
	closed := make(chan struct{})
	l.closed = closed
	defer func() {
		l.g.wg.Add(1)
		go func() {
			defer l.g.wg.Done()
			defer close(closed)
			conn.Close()
		}()
	}()
	c := &listConn{conn: conn}
	meta := ""
	_, err = c.call(ctx, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":`+listClientInfo+`}`)
	var refused *intercept.WireError
	switch {
	case errors.As(err, &refused) && refused.Code != intercept.CodeUpstreamError:
		// (CodeUpstreamError is the transport's: the server was not reached.)
		// A server of 2026-07-28 alone has no sessions: each request
		// carries its version.
		meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":` + listClientInfo +
			`,"io.modelcontextprotocol/clientCapabilities":{}}`
	case err != nil:
		return fmt.Errorf("initialize: %w", err)
	default:
		if err := conn.Write(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
			return fmt.Errorf("initialize: %w", err)
		}
	}
	cursor := ""
	for range maxListPages {
		params := "{" + meta
		if cursor != "" {
			q, _ := jsontext.AppendQuote(nil, cursor)
			if meta != "" {
				params += ","
			}
			params += `"cursor":` + string(q)
		}
		res, err := c.call(ctx, "tools/list", params+"}")
		if err != nil {
			return fmt.Errorf("tools/list: %w", err)
		}
		if res.Kind() != '{' {
			return errors.New("tools/list: the answer is not an object")
		}
		l.g.ic.ObserveToolsPage(l.rt.up.Name, res, cursor)
		if cursor = intercept.StringMember(res, "nextCursor"); cursor == "" {
			return nil
		}
	}
	return nil
}

// listConn makes requests of its own on a connection to an upstream.
type listConn struct {
	conn transport.Conn
	n    int
}

// call sends one request and waits for its answer: the result, or the
// upstream's JSON-RPC error as a *intercept.WireError. What else comes
// meanwhile is dropped, but for the upstream's requests, which are
// answered (a ping with {}, anything else as not offered).
func (c *listConn) call(ctx context.Context, method, params string) (jsontext.Value, error) {
	c.n++
	id := fmt.Sprintf(`"sluice-list-%d"`, c.n)
	if err := c.conn.Write(ctx, []byte(`{"jsonrpc":"2.0","id":`+id+`,"method":"`+method+`","params":`+params+`}`)); err != nil {
		return nil, err
	}
	for {
		b, err := c.conn.Read(ctx)
		if err != nil {
			return nil, err
		}
		msgs, _, err := intercept.Decode(b)
		if err != nil {
			continue
		}
		for _, m := range msgs {
			switch {
			case m.Kind == intercept.KindRequest && m.Method == "ping":
				_ = c.conn.Write(ctx, []byte(`{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{}}`))
			case m.Kind == intercept.KindRequest:
				_ = c.conn.Write(ctx, intercept.ErrorResponse(m.ID, &intercept.WireError{Code: intercept.CodeMethodNotFound,
					Message: "the gateway's own listing of the server's tools does not answer " + m.Method}))
			case m.Kind == intercept.KindResponse && m.IDKey() == id:
				return m.Result, nil
			case m.Kind == intercept.KindError && m.IDKey() == id:
				var we struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				}
				_ = json.Unmarshal(m.Error, &we, json.RejectUnknownMembers(false))
				return nil, &intercept.WireError{Code: we.Code, Message: we.Message}
			}
		}
	}
}
