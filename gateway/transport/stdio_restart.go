package transport

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

const (
	// restartErrorCode is the JSON-RPC error code of the answer given to a
	// request that an upstream crash left without a response.
	restartErrorCode = -32003
	// restartReplayTimeout bounds the wait for a restarted upstream to
	// answer the replayed initialize request.
	restartReplayTimeout = 30 * time.Second
)

// Restarting is a Dialer whose Conns survive the upstream failing, which
// suits stdio servers that crash. Dialer is required; the other fields may
// be left zero. A Restarting may be used by several goroutines at once; its
// fields must not change after the first Dial.
//
// Its Conn remembers the client's initialize request and
// notifications/initialized notification. When a Read from the upstream
// fails, it answers every client request still waiting for a response with
// a JSON-RPC error (code -32003, "upstream restarted: ..."), delivered
// through Read so no call hangs; then it redials with exponential backoff,
// replays initialize with its original id (swallowing the response) and
// notifications/initialized, and carries on. State the client built up on
// the old upstream beyond initialization (subscriptions, for instance) is
// not restored. A Write while the upstream is down waits for the restart.
type Restarting struct {
	// Dialer opens each upstream Conn.
	Dialer Dialer
	// MinBackoff is the wait before redialling after a failure; zero
	// means 100ms. It doubles after each failed attempt, and resets once
	// an upstream has stayed up for longer than MaxBackoff.
	MinBackoff time.Duration
	// MaxBackoff caps the wait between attempts; zero means 10s.
	MaxBackoff time.Duration
	// OnRestart, if non-nil, is called with the error that made a redial
	// necessary: once when the upstream fails, before the pending
	// requests are answered, and again after each failed attempt. It runs
	// on the Conn's own goroutine, which waits for it.
	OnRestart func(err error)
}

var _ Dialer = (*Restarting)(nil)

// Dial opens the first upstream Conn; if that fails, Dial returns the
// error without retrying. ctx bounds only that first dial; its values are
// passed on to later ones, which go on until the Conn is closed.
func (r *Restarting) Dial(ctx context.Context) (Conn, error) {
	if r.Dialer == nil {
		return nil, errors.New("transport: Restarting has no Dialer")
	}
	up, err := r.Dialer.Dial(ctx)
	if err != nil {
		return nil, err
	}
	c := &restartingConn{
		dialer:     r.Dialer,
		minBackoff: r.MinBackoff,
		maxBackoff: r.MaxBackoff,
		onRestart:  r.OnRestart,
		out:        make(chan []byte),
		done:       make(chan struct{}),
		cur:        up,
		ready:      make(chan struct{}),
		pending:    make(map[string]restartPending),
	}
	if c.minBackoff <= 0 {
		c.minBackoff = 100 * time.Millisecond
	}
	if c.maxBackoff <= 0 {
		c.maxBackoff = 10 * time.Second
	}
	c.maxBackoff = max(c.maxBackoff, c.minBackoff)
	close(c.ready)
	c.ctx, c.cancel = context.WithCancel(context.WithoutCancel(ctx))
	go c.run(up)
	return c, nil
}

var _ Conn = (*restartingConn)(nil)

type restartingConn struct {
	dialer     Dialer
	minBackoff time.Duration
	maxBackoff time.Duration
	onRestart  func(error)
	ctx        context.Context // cancelled by Close; run's lifetime
	cancel     context.CancelFunc
	out        chan []byte   // messages for Read, sent by run
	done       chan struct{} // closed when run has returned

	closeOnce sync.Once

	mu          sync.Mutex // guards the fields below
	cur         Conn       // nil while restarting
	ready       chan struct{}
	broken      error  // why a Write gave up on cur, or nil
	init        []byte // the client's initialize request
	initKey     string // its id, as restartKey gives it
	initialized []byte // the client's notifications/initialized
	pending     map[string]restartPending
	seq         uint64
}

// A restartPending is a client request without a response yet.
type restartPending struct {
	id  json.RawMessage
	seq uint64 // orders the error answers like the requests
}

func (c *restartingConn) Read(ctx context.Context) ([]byte, error) {
	select {
	case <-c.ctx.Done():
		return nil, ErrClosed
	default:
	}
	select {
	case msg := <-c.out:
		return msg, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.ctx.Done():
		return nil, ErrClosed
	}
}

// Write passes msg to the current upstream, waiting for a restart to
// finish if one is under way. If writing fails because the upstream broke,
// Write returns nil and lets the restart answer the requests in msg; any
// notifications or responses in it are lost with the upstream's state.
func (c *restartingConn) Write(ctx context.Context, msg []byte) error {
	info := restartInspect(msg)
	up, added, err := c.acquire(ctx, info)
	if err != nil {
		return err
	}
	err = up.Write(ctx, msg)
	if err == nil {
		return nil
	}
	var msgErr *MessageError
	switch {
	case c.ctx.Err() != nil:
		err = ErrClosed
	case ctx.Err() != nil, errors.As(err, &msgErr):
		// The caller learns of the failure, so nobody else answers.
	default:
		c.mu.Lock()
		if c.cur == up && c.broken == nil {
			c.broken = err
		}
		c.mu.Unlock()
		up.Close() // run sees the failure and restarts
		return nil
	}
	c.mu.Lock()
	for _, k := range added {
		delete(c.pending, k)
	}
	c.mu.Unlock()
	return err
}

// acquire waits until an upstream is ready, then records what info means
// for a restart. It returns the upstream and the pending keys it added.
func (c *restartingConn) acquire(ctx context.Context, info restartInfo) (Conn, []string, error) {
	for {
		c.mu.Lock()
		if up := c.cur; up != nil {
			added := c.track(info)
			c.mu.Unlock()
			return up, added, nil
		}
		ready := c.ready
		c.mu.Unlock()
		select {
		case <-ready:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-c.ctx.Done():
			return nil, nil, ErrClosed
		}
	}
}

// track records a client message; c.mu must be held.
func (c *restartingConn) track(info restartInfo) []string {
	var added []string
	for _, m := range info.msgs {
		switch {
		case m.isRequest():
			k := restartKey(m.ID)
			c.seq++
			c.pending[k] = restartPending{id: m.ID, seq: c.seq}
			added = append(added, k)
			if m.Method == "initialize" {
				c.init, c.initKey = restartReplayable(m.raw), k
			}
		case m.Method == "notifications/initialized" && len(m.ID) == 0:
			c.initialized = restartReplayable(m.raw)
		case m.Method == "notifications/cancelled" && len(m.Params.RequestID) > 0:
			// The upstream need not answer a cancelled request, and the
			// client no longer waits for it.
			delete(c.pending, restartKey(m.Params.RequestID))
		}
	}
	return added
}

func (c *restartingConn) Close() error {
	c.closeOnce.Do(func() {
		c.cancel()
		<-c.done
	})
	return nil
}

// run relays the upstream's messages to Read and restarts it when it
// fails, until Close.
func (c *restartingConn) run(up Conn) {
	defer close(c.done)
	backoff := c.minBackoff
	for {
		started := time.Now()
		cause := c.relay(up)
		if c.ctx.Err() != nil {
			up.Close()
			return
		}
		var failed [][]byte
		failed, cause = c.fail(cause)
		if c.onRestart != nil {
			c.onRestart(cause)
		}
		for _, msg := range failed {
			if !c.send(msg) {
				up.Close()
				return
			}
		}
		up.Close()
		if time.Since(started) > c.maxBackoff {
			backoff = c.minBackoff
		}
		if up = c.restart(&backoff); up == nil {
			return
		}
	}
}

// relay passes messages from up to Read until reading fails.
func (c *restartingConn) relay(up Conn) error {
	for {
		msg, err := up.Read(c.ctx)
		if err != nil {
			return err
		}
		info := restartInspect(msg)
		c.mu.Lock()
		for _, m := range info.msgs {
			if m.isResponse() {
				delete(c.pending, restartKey(m.ID))
			}
		}
		c.mu.Unlock()
		if !c.send(msg) {
			return c.ctx.Err()
		}
	}
}

// fail takes the current upstream out of service. It returns the error
// answers for the requests it left pending, and why it failed, which a
// Write may know better than the failed Read did.
func (c *restartingConn) fail(cause error) (failed [][]byte, why error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.broken != nil && errors.Is(cause, ErrClosed) {
		cause = c.broken
	}
	c.cur, c.broken = nil, nil
	c.ready = make(chan struct{})
	reqs := make([]restartPending, 0, len(c.pending))
	for _, p := range c.pending {
		reqs = append(reqs, p)
	}
	clear(c.pending)
	slices.SortFunc(reqs, func(a, b restartPending) int { return cmp.Compare(a.seq, b.seq) })
	failed = make([][]byte, len(reqs))
	for i, p := range reqs {
		failed[i] = restartFailure(p.id, cause)
	}
	return failed, cause
}

// restart redials until an upstream is up and initialized again, and
// returns it, or nil once the Conn is closed.
func (c *restartingConn) restart(backoff *time.Duration) Conn {
	for {
		t := time.NewTimer(*backoff)
		select {
		case <-t.C:
		case <-c.ctx.Done():
			t.Stop()
			return nil
		}
		*backoff = min(*backoff*2, c.maxBackoff)
		up, err := c.dialer.Dial(c.ctx)
		if err == nil {
			if err = c.replay(up); err == nil {
				c.mu.Lock()
				c.cur = up
				close(c.ready)
				c.mu.Unlock()
				return up
			}
			up.Close()
		}
		if c.ctx.Err() != nil {
			return nil
		}
		if c.onRestart != nil {
			c.onRestart(fmt.Errorf("restart failed: %w", err))
		}
	}
}

// replay brings a new upstream to where the client left the old one:
// initialize (its response swallowed) and notifications/initialized.
// Anything else the upstream sends meanwhile goes to Read.
func (c *restartingConn) replay(up Conn) error {
	c.mu.Lock()
	init, initKey, initialized := c.init, c.initKey, c.initialized
	c.mu.Unlock()
	if init == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(c.ctx, restartReplayTimeout)
	defer cancel()
	if err := up.Write(ctx, init); err != nil {
		return fmt.Errorf("replaying initialize: %w", err)
	}
	for {
		msg, err := up.Read(ctx)
		if err != nil {
			return fmt.Errorf("waiting for the replayed initialize's response: %w", err)
		}
		info := restartInspect(msg)
		if !info.batch && len(info.msgs) == 1 && info.msgs[0].isResponse() && restartKey(info.msgs[0].ID) == initKey {
			if e := info.msgs[0].Error; len(e) > 0 && !bytes.Equal(e, []byte("null")) {
				return fmt.Errorf("replayed initialize was refused: %s", e)
			}
			break
		}
		if !c.send(msg) {
			return c.ctx.Err()
		}
	}
	if initialized != nil {
		if err := up.Write(ctx, initialized); err != nil {
			return fmt.Errorf("replaying notifications/initialized: %w", err)
		}
	}
	return nil
}

// send hands msg to Read, reporting false if the Conn was closed first.
func (c *restartingConn) send(msg []byte) bool {
	select {
	case c.out <- msg:
		return true
	case <-c.ctx.Done():
		return false
	}
}

// A restartInfo is what a restart needs to know about one message or
// batch: the requests, responses and initialization in it.
type restartInfo struct {
	batch bool
	msgs  []restartMsg
}

type restartMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Error  json.RawMessage `json:"error"`
	Params struct {
		RequestID json.RawMessage `json:"requestId"` // of notifications/cancelled
	} `json:"params"`
	raw []byte
}

func (m *restartMsg) hasID() bool {
	return len(m.ID) > 0 && !bytes.Equal(m.ID, []byte("null"))
}

func (m *restartMsg) isRequest() bool  { return m.Method != "" && m.hasID() }
func (m *restartMsg) isResponse() bool { return m.Method == "" && m.hasID() }

// restartInspect decodes what a restart needs from msg. A message that is
// not JSON-RPC yields nothing: it is passed on, not judged.
func restartInspect(msg []byte) restartInfo {
	trimmed := bytes.TrimSpace(msg)
	if len(trimmed) == 0 {
		return restartInfo{}
	}
	if trimmed[0] != '[' {
		var m restartMsg
		if json.Unmarshal(trimmed, &m) != nil {
			return restartInfo{}
		}
		m.raw = slices.Clone(trimmed) // the caller may reuse msg
		return restartInfo{msgs: []restartMsg{m}}
	}
	var elems []json.RawMessage
	if json.Unmarshal(trimmed, &elems) != nil {
		return restartInfo{batch: true}
	}
	info := restartInfo{batch: true, msgs: make([]restartMsg, 0, len(elems))}
	for _, e := range elems {
		var m restartMsg
		if json.Unmarshal(e, &m) == nil {
			m.raw = e // already a copy
			info.msgs = append(info.msgs, m)
		}
	}
	return info
}

// restartReplayable returns the form of a client message that is replayed
// on every restart: compacted, like every message a Conn sends, even if
// the Dialer's Conns do not do it themselves, so that no replay carries
// a line break an upstream could split a second message out of. A message
// that cannot be compacted is not replayed.
func restartReplayable(raw []byte) []byte {
	b, err := Compact(raw)
	if err != nil {
		return nil
	}
	return b
}

// restartKey gives a request id a form that matches its response's id.
func restartKey(id json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, id) != nil {
		return string(id)
	}
	return b.String()
}

func restartFailure(id json.RawMessage, cause error) []byte {
	type wireError struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   wireError       `json:"error"`
	}{"2.0", id, wireError{restartErrorCode, fmt.Sprintf("upstream restarted: %v; request was not completed", cause)}})
	return b
}
