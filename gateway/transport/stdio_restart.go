package transport

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

const (
	// restartErrorCode is the JSON-RPC error code of the answer given to a
	// request that an upstream crash left without a response.
	restartErrorCode = -32003
	// restartReplayTimeout bounds the wait for a restarted upstream to
	// answer the replayed initialize request.
	restartReplayTimeout = 30 * time.Second
	// maxRestartAsks bounds the upstreams' requests to the client that a
	// Conn remembers unanswered; past it the oldest is forgotten, and an
	// answer to it goes to the upstream as it is.
	maxRestartAsks = 4096
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
//
// Requests the upstream sent the client (elicitation, sampling, roots) and
// the client has not answered die with it too: each is cancelled at the
// client (notifications/cancelled), and an answer to it that comes later
// is dropped, not written to the new upstream, which numbers its own
// requests afresh. So that such an answer cannot be taken for one to the
// new upstream's request of the same id, a request whose id is still open
// at the client (from an earlier upstream, or the same one) reaches the
// client under an id of its own, the string "sluice-upstream-N:ID", which
// the client's answer to it, and the upstream's cancellation of it, are
// given back in.
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
		asks:       make(map[string]restartAsk),
		askKeys:    make(map[string]string),
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
	gen         uint64                // counts the upstreams that failed
	asks        map[string]restartAsk // the upstreams' open requests, by the id the client knows
	askKeys     map[string]string     // the current upstream's asks: its id -> the client's
}

// A restartAsk is a request an upstream sent the client, not answered yet.
type restartAsk struct {
	gen uint64          // of the upstream that sent it
	seq uint64          // orders the cancellations like the requests
	id  json.RawMessage // the upstream's id for it
	own bool            // the client knows it under an id of the gateway's
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
	up, added, msg, err := c.acquire(ctx, info, msg)
	if err != nil || msg == nil {
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

// acquire waits until an upstream is ready, then records what info, about
// msg, means for a restart. It returns the upstream, the pending keys it
// added and msg as it goes to that upstream: with the client's answers to
// its requests under its own ids, and without answers to an earlier
// upstream's; nil if nothing is left to send.
func (c *restartingConn) acquire(ctx context.Context, info restartInfo, msg []byte) (Conn, []string, []byte, error) {
	for {
		c.mu.Lock()
		if up := c.cur; up != nil {
			msg = c.answers(info, msg)
			added := c.track(info)
			c.mu.Unlock()
			return up, added, msg, nil
		}
		ready := c.ready
		c.mu.Unlock()
		select {
		case <-ready:
		case <-ctx.Done():
			return nil, nil, nil, ctx.Err()
		case <-c.ctx.Done():
			return nil, nil, nil, ErrClosed
		}
	}
}

// answers returns msg, from the client, as the current upstream is to
// get it: an answer to one of its requests under its id for it, and no
// answer to a request of an upstream that has failed since, or nil if
// nothing is left. c.mu must be held.
func (c *restartingConn) answers(info restartInfo, msg []byte) []byte {
	if len(c.asks) == 0 {
		return msg
	}
	var keep [][]byte
	changed := false
	for _, m := range info.msgs {
		raw := m.raw
		if m.isResponse() {
			k := restartKey(m.ID)
			if a, ok := c.asks[k]; ok {
				delete(c.asks, k)
				switch {
				case a.gen != c.gen:
					changed = true
					continue // its upstream is gone; this one did not ask
				case a.own:
					raw, changed = restartSetID(raw, a.id), true
				}
				if uk := restartKey(a.id); c.askKeys[uk] == k {
					delete(c.askKeys, uk)
				}
			}
		}
		keep = append(keep, raw)
	}
	switch {
	case !changed:
		return msg
	case len(keep) == 0:
		return nil
	case !info.batch:
		return keep[0]
	}
	b, _ := json.Marshal(restartRaws(keep))
	return b
}

// fromUpstream records what msg, from the upstream of generation gen,
// means for a restart and returns it as the client is to get it: a
// request whose id is still open from an earlier upstream goes under an
// id of the gateway's, and so does the upstream's cancellation of it.
func (c *restartingConn) fromUpstream(gen uint64, msg []byte) []byte {
	info := restartInspect(msg)
	c.mu.Lock()
	defer c.mu.Unlock()
	changed := false
	out := make([][]byte, 0, len(info.msgs))
	for _, m := range info.msgs {
		raw := m.raw
		switch {
		case m.isResponse():
			delete(c.pending, restartKey(m.ID))
		case m.isRequest():
			if len(c.asks) >= maxRestartAsks {
				c.forgetOldestAsk()
			}
			k := restartKey(m.ID)
			if _, taken := c.asks[k]; !taken {
				c.seq++
				c.asks[k], c.askKeys[k] = restartAsk{gen: gen, seq: c.seq, id: m.ID}, k
				break
			}
			// The client may still answer an earlier upstream's request
			// of this id, or (a duplicate) this upstream's.
			id := c.ownAskID(gen, k)
			c.seq++
			c.asks[restartKey(id)], c.askKeys[k] = restartAsk{gen: gen, seq: c.seq, id: m.ID, own: true}, restartKey(id)
			raw, changed = restartSetID(raw, id), true
		case m.Method == "notifications/cancelled" && len(m.Params.RequestID) > 0:
			k := restartKey(m.Params.RequestID)
			ck, ok := c.askKeys[k]
			if !ok {
				break
			}
			delete(c.askKeys, k)
			delete(c.asks, ck)
			if ck != k {
				raw, changed = restartSetCancelled(raw, json.RawMessage(ck)), true
			}
		}
		out = append(out, raw)
	}
	if !changed {
		return msg
	}
	if !info.batch {
		return out[0]
	}
	b, _ := json.Marshal(restartRaws(out))
	return b
}

// forgetOldestAsk forgets the request to the client asked first. c.mu
// must be held.
func (c *restartingConn) forgetOldestAsk() {
	first, ck := uint64(math.MaxUint64), ""
	for k, a := range c.asks {
		if a.seq < first {
			first, ck = a.seq, k
		}
	}
	a := c.asks[ck]
	delete(c.asks, ck)
	if a.gen == c.gen && c.askKeys[restartKey(a.id)] == ck {
		delete(c.askKeys, restartKey(a.id))
	}
}

// ownAskID returns an id not open at the client for the request of the
// upstream of generation gen whose id has key k. c.mu must be held.
func (c *restartingConn) ownAskID(gen uint64, k string) json.RawMessage {
	for n := 0; ; n++ {
		s := fmt.Sprintf("sluice-upstream-%d:%s", gen, k)
		if n > 0 {
			s += fmt.Sprintf("#%d", n)
		}
		id, _ := json.Marshal(s)
		if _, taken := c.asks[restartKey(id)]; !taken {
			return id
		}
	}
}

// restartRaws marshals as a JSON array of the messages in it.
type restartRaws [][]byte

func (r restartRaws) MarshalJSON() ([]byte, error) {
	return append([]byte("["), append(bytes.Join(r, []byte(",")), ']')...), nil
}

// restartSetID returns the message raw with its id replaced by id, its
// members otherwise as they were.
func restartSetID(raw []byte, id json.RawMessage) []byte {
	return restartSplice(raw, id, "id")
}

// restartSetCancelled returns the notifications/cancelled raw with
// params.requestId replaced by id.
func restartSetCancelled(raw []byte, id json.RawMessage) []byte {
	return restartSplice(raw, id, "params", "requestId")
}

// restartSplice returns raw with the value at the path of member names
// replaced by val, or raw itself if it has none there.
func restartSplice(raw []byte, val json.RawMessage, path ...string) []byte {
	dec := jsontext.NewDecoder(bytes.NewReader(raw), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	for _, name := range path {
		if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
			return raw
		}
		for {
			if dec.PeekKind() == '}' {
				return raw
			}
			tok, err := dec.ReadToken()
			if err != nil {
				return raw
			}
			if tok.String() == name {
				break
			}
			if err := dec.SkipValue(); err != nil {
				return raw
			}
		}
	}
	v, err := dec.ReadValue()
	if err != nil {
		return raw
	}
	endOff := dec.InputOffset()
	startOff := endOff - int64(len(v))
	out := make([]byte, 0, len(raw)+len(val))
	out = append(out, raw[:startOff]...)
	out = append(out, val...)
	return append(out, raw[endOff:]...)
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
		c.mu.Lock()
		gen := c.gen
		c.mu.Unlock()
		cause := c.relay(up, gen)
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

// relay passes messages from up, of generation gen, to Read until
// reading fails.
func (c *restartingConn) relay(up Conn, gen uint64) error {
	for {
		msg, err := up.Read(c.ctx)
		if err != nil {
			return err
		}
		if !c.send(c.fromUpstream(gen, msg)) {
			return c.ctx.Err()
		}
	}
}

// fail takes the current upstream out of service. It returns the error
// answers for the requests it left pending and the cancellations of the
// requests it asked the client, and why it failed, which a Write may know
// better than the failed Read did.
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
	failed = make([][]byte, 0, len(reqs)+len(c.askKeys))
	for _, p := range reqs {
		failed = append(failed, restartFailure(p.id, cause))
	}
	return append(failed, c.dropAsks(cause)...), cause
}

// dropAsks cancels the requests the current upstream, which failed of
// cause, asked the client, and starts the next generation. They stay in
// asks, so that answers to them are dropped, not given to the next
// upstream. c.mu must be held.
func (c *restartingConn) dropAsks(cause error) [][]byte {
	var failed [][]byte
	asks := make([]restartAsk, 0, len(c.askKeys))
	ids := make(map[uint64]json.RawMessage, len(c.askKeys))
	for _, ck := range c.askKeys {
		a := c.asks[ck]
		asks = append(asks, a)
		ids[a.seq] = json.RawMessage(ck)
	}
	clear(c.askKeys)
	slices.SortFunc(asks, func(a, b restartAsk) int { return cmp.Compare(a.seq, b.seq) })
	for _, a := range asks {
		failed = append(failed, restartCancel(ids[a.seq], cause))
	}
	c.gen++
	return failed
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
			c.mu.Lock()
			gen := c.gen
			c.mu.Unlock()
			if err = c.replay(up, gen); err == nil {
				c.mu.Lock()
				c.cur = up
				close(c.ready)
				c.mu.Unlock()
				return up
			}
			up.Close()
			// What it asked the client while it was being replayed to
			// goes with it.
			c.mu.Lock()
			cancels := c.dropAsks(err)
			c.mu.Unlock()
			for _, msg := range cancels {
				if !c.send(msg) {
					return nil
				}
			}
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
func (c *restartingConn) replay(up Conn, gen uint64) error {
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
		if !c.send(c.fromUpstream(gen, msg)) {
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

// restartKey gives a request id a form that matches its response's id:
// a string's as the one string it reads as, however escaped, since a
// client answers "\u00e9" as "é" (the gateway keys ids so too:
// intercept.IDKeyOf), and an answer the book missed would go to a new
// upstream (TestRestartingStaleAnswerEscapedID).
func restartKey(id json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, id) != nil {
		return string(id)
	}
	if v := jsontext.Value(b.Bytes()); v.Kind() == '"' && bytes.IndexByte(v, '\\') >= 0 {
		if s, err := jsontext.AppendUnquote(nil, v); err == nil {
			if q, err := jsontext.AppendQuote(nil, s); err == nil {
				return string(q)
			}
		}
	}
	return b.String()
}

// restartCancel cancels at the client the request it knows as id, which
// the upstream that failed of cause had sent.
func restartCancel(id json.RawMessage, cause error) []byte {
	type params struct {
		RequestID json.RawMessage `json:"requestId"`
		Reason    string          `json:"reason"`
	}
	b, _ := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  params `json:"params"`
	}{"2.0", "notifications/cancelled", params{id, fmt.Sprintf("upstream restarted: %v", cause)}})
	return b
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
