package transport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

const (
	testInit        = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`
	testInitialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
)

// checkRestartError checks that msg answers id with the -32003 error of a
// restart caused by something containing cause.
func checkRestartError(t *testing.T, msg []byte, id, cause string) {
	t.Helper()
	r := decodeResponse(t, msg)
	if string(r.ID) != id {
		t.Errorf("got id %s, want %s", r.ID, id)
	}
	if r.Error == nil {
		t.Fatalf("got %s, want an error response", msg)
	}
	if r.Error.Code != -32003 {
		t.Errorf("got code %d, want -32003", r.Error.Code)
	}
	if m := r.Error.Message; !strings.HasPrefix(m, "upstream restarted: ") || !strings.Contains(m, cause) || !strings.HasSuffix(m, "; request was not completed") {
		t.Errorf("got message %q, want \"upstream restarted: ...%s...; request was not completed\"", m, cause)
	}
}

type helperWho struct {
	PID         int             `json:"pid"`
	InitID      json.RawMessage `json:"initID"`
	Initialized bool            `json:"initialized"`
}

func whoami(t *testing.T, c Conn, id string) helperWho {
	t.Helper()
	mustWrite(t, c, `{"jsonrpc":"2.0","id":`+id+`,"method":"whoami"}`)
	r := decodeResponse(t, mustRead(t, c))
	if string(r.ID) != id {
		t.Fatalf("got id %s, want %s (%s)", r.ID, id, r.Result)
	}
	var who helperWho
	if err := json.Unmarshal(r.Result, &who); err != nil {
		t.Fatal(err)
	}
	return who
}

func TestRestartingStdioCrash(t *testing.T) {
	stdioNoLeaks(t)
	restarts := make(chan error, 10)
	r := &Restarting{
		Dialer:     stdioHelperDialer(t, "echo"),
		MinBackoff: time.Millisecond,
		OnRestart:  func(err error) { restarts <- err },
	}
	c := mustDial(t, r)

	mustWrite(t, c, testInit)
	if r := decodeResponse(t, mustRead(t, c)); string(r.ID) != "1" || r.Result == nil {
		t.Fatalf("got id %s result %s, want the initialize result for id 1", r.ID, r.Result)
	}
	mustWrite(t, c, testInitialized)
	before := whoami(t, c, `"a"`)

	mustWrite(t, c, `{"jsonrpc":"2.0","id":2,"method":"hang"}`)
	mustWrite(t, c, `{"jsonrpc":"2.0","id":"three","method":"crash"}`)
	checkRestartError(t, mustRead(t, c), "2", "exit status 3")
	checkRestartError(t, mustRead(t, c), `"three"`, "exit status 3")
	select {
	case err := <-restarts:
		var exit *ExitError
		if !errors.As(err, &exit) || exit.State.ExitCode() != 3 {
			t.Errorf("OnRestart: got %v, want an *ExitError with exit status 3", err)
		}
	default:
		t.Error("OnRestart was not called before the pending requests were failed")
	}

	// The next message is the answer to a new request: the replayed
	// initialize's response was swallowed.
	after := whoami(t, c, "4")
	if after.PID == before.PID {
		t.Errorf("got the same pid %d after the crash, want a new process", after.PID)
	}
	if string(after.InitID) != "1" || !after.Initialized {
		t.Errorf("restarted upstream saw initialize id %s, initialized %v; want id 1, true", after.InitID, after.Initialized)
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, err := c.Read(testContext(t)); !errors.Is(err, ErrClosed) {
		t.Errorf("Read after Close: got %v, want ErrClosed", err)
	}
}

// A fakeDialer hands out the client ends of pipe Conns whose server ends
// the test plays, or errors, in the order they are queued.
type fakeDialer struct {
	results chan fakeDial
}

type fakeDial struct {
	conn Conn
	err  error
}

func newFakeDialer() *fakeDialer { return &fakeDialer{results: make(chan fakeDial, 10)} }

func (d *fakeDialer) Dial(ctx context.Context) (Conn, error) {
	select {
	case r := <-d.results:
		return r.conn, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// fakeServer is the server end of a pipe Conn.
type fakeServer struct {
	Conn
	readEnd  *io.PipeReader // what the client writes arrives here
	writeEnd *io.PipeWriter // what is written here reaches the client
}

// crash makes the client's Read fail with io.EOF.
func (s *fakeServer) crash() { s.writeEnd.Close() }

// queue adds a new pipe Conn to d and returns its server end.
func (d *fakeDialer) queue(t *testing.T) *fakeServer {
	t.Helper()
	toServerR, toServerW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	s := &fakeServer{Conn: NewStdioConn(toServerR, toClientW, nil), readEnd: toServerR, writeEnd: toClientW}
	t.Cleanup(func() { s.Close() })
	d.results <- fakeDial{conn: NewStdioConn(toClientR, toServerW, nil)}
	return s
}

func expectMessage(t *testing.T, c Conn, want string) {
	t.Helper()
	if got := mustRead(t, c); string(got) != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

func TestRestartingReplay(t *testing.T) {
	stdioNoLeaks(t)
	d := newFakeDialer()
	restarts := make(chan error, 10)
	r := &Restarting{Dialer: d, MinBackoff: time.Millisecond, OnRestart: func(err error) { restarts <- err }}
	s1 := d.queue(t)
	c := mustDial(t, r)

	mustWrite(t, c, testInit)
	expectMessage(t, s1, testInit)
	mustWrite(t, s1, `{"jsonrpc":"2.0","id":1,"result":{"n":1}}`)
	expectMessage(t, c, `{"jsonrpc":"2.0","id":1,"result":{"n":1}}`)
	mustWrite(t, c, testInitialized)
	expectMessage(t, s1, testInitialized)

	// The first new upstream refuses the replayed initialize.
	s2, s3 := d.queue(t), d.queue(t)
	s1.crash()
	expectMessage(t, s2, testInit)
	mustWrite(t, s2, `{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"no"}}`)
	// The second one talks before answering; that reaches the client.
	expectMessage(t, s3, testInit)
	mustWrite(t, s3, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hi"}}`)
	expectMessage(t, c, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hi"}}`)
	mustWrite(t, s3, `{"jsonrpc":"2.0","id":1,"result":{"n":3}}`)
	expectMessage(t, s3, testInitialized)

	mustWrite(t, c, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	expectMessage(t, s3, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	mustWrite(t, s3, `{"jsonrpc":"2.0","id":2,"result":{"tools":[]}}`)
	expectMessage(t, c, `{"jsonrpc":"2.0","id":2,"result":{"tools":[]}}`)

	wantCauses := []string{"EOF", "replayed initialize was refused"}
	for _, want := range wantCauses {
		if err := <-restarts; !strings.Contains(err.Error(), want) {
			t.Errorf("OnRestart: got %q, want it to contain %q", err, want)
		}
	}
	select {
	case err := <-restarts:
		t.Errorf("OnRestart called once too often, with %v", err)
	default:
	}
}

func TestRestartingPendingBatch(t *testing.T) {
	stdioNoLeaks(t)
	d := newFakeDialer()
	s1 := d.queue(t)
	c := mustDial(t, &Restarting{Dialer: d, MinBackoff: time.Millisecond})

	batch := `[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","id":2,"method":"b"},{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":3,"method":"c"},{"jsonrpc":"2.0","id":5,"method":"e"}]`
	mustWrite(t, c, batch)
	expectMessage(t, s1, batch)
	mustWrite(t, s1, `[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"x"}}]`)
	expectMessage(t, c, `[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"x"}}]`)
	// A request the client cancelled is not waited for any more.
	mustWrite(t, c, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}`)
	expectMessage(t, s1, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}`)
	// A response from the client to a server request is not pending.
	mustWrite(t, c, `{"jsonrpc":"2.0","id":"s1","result":{}}`)
	expectMessage(t, s1, `{"jsonrpc":"2.0","id":"s1","result":{}}`)

	s2 := d.queue(t)
	s1.crash()
	checkRestartError(t, mustRead(t, c), "2", "EOF")
	// Nothing was recorded to replay, so the next client message is the
	// first thing the new upstream sees.
	mustWrite(t, c, `{"jsonrpc":"2.0","id":4,"method":"d"}`)
	expectMessage(t, s2, `{"jsonrpc":"2.0","id":4,"method":"d"}`)
}

func TestRestartingWriteWhileDown(t *testing.T) {
	stdioNoLeaks(t)
	d := newFakeDialer()
	s1 := d.queue(t)
	c := mustDial(t, &Restarting{Dialer: d, MinBackoff: time.Millisecond})
	mustWrite(t, c, `{"jsonrpc":"2.0","id":1,"method":"a"}`)
	expectMessage(t, s1, `{"jsonrpc":"2.0","id":1,"method":"a"}`)
	s1.crash()
	checkRestartError(t, mustRead(t, c), "1", "EOF")

	// No upstream is queued, so the restart is stuck in Dial.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Write(ctx, []byte(`{"jsonrpc":"2.0","id":2,"method":"b"}`)); !errors.Is(err, context.Canceled) {
		t.Errorf("Write while down with a cancelled ctx: got %v, want context.Canceled", err)
	}
	errc := make(chan error)
	go func() { errc <- c.Write(context.Background(), []byte(`{"jsonrpc":"2.0","id":3,"method":"c"}`)) }()
	s2 := d.queue(t)
	if err := <-errc; err != nil {
		t.Fatalf("Write while down: %v", err)
	}
	expectMessage(t, s2, `{"jsonrpc":"2.0","id":3,"method":"c"}`)
}

// A Write that fails because the upstream broke is answered like a crash.
func TestRestartingWriteToBrokenUpstream(t *testing.T) {
	stdioNoLeaks(t)
	d := newFakeDialer()
	s1 := d.queue(t)
	c := mustDial(t, &Restarting{Dialer: d, MinBackoff: time.Millisecond})
	s1.readEnd.Close() // the upstream stops taking input but keeps running
	s2 := d.queue(t)
	if err := c.Write(testContext(t), []byte(`{"jsonrpc":"2.0","id":1,"method":"a"}`)); err != nil {
		t.Fatalf("got %v, want nil: the restart answers the request", err)
	}
	checkRestartError(t, mustRead(t, c), "1", "closed pipe")
	// A message that cannot be framed is the caller's problem, not the
	// upstream's.
	var msgErr *MessageError
	if err := c.Write(testContext(t), []byte("{")); !errors.As(err, &msgErr) {
		t.Errorf("got %v, want the message error", err)
	}
	mustWrite(t, c, `{"jsonrpc":"2.0","id":2,"method":"b"}`)
	expectMessage(t, s2, `{"jsonrpc":"2.0","id":2,"method":"b"}`)
}

func TestRestartingBackoffAndClose(t *testing.T) {
	stdioNoLeaks(t)
	d := newFakeDialer()
	restarts := make(chan error, 10)
	s1 := d.queue(t)
	c := mustDial(t, &Restarting{Dialer: d, MinBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond, OnRestart: func(err error) { restarts <- err }})
	d.results <- fakeDial{err: errors.New("boom 1")}
	d.results <- fakeDial{err: errors.New("boom 2")}
	s1.crash()
	for _, want := range []string{"EOF", "restart failed: boom 1", "restart failed: boom 2"} {
		if err := <-restarts; err.Error() != want {
			t.Errorf("OnRestart: got %q, want %q", err, want)
		}
	}
	// The next Dial waits for an upstream that never comes; Close ends it.
	errc := make(chan error)
	go func() {
		_, err := c.Read(context.Background())
		errc <- err
	}()
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Errorf("Read: got %v, want ErrClosed", err)
	}
	if err := c.Write(context.Background(), []byte(`{}`)); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Close: got %v, want ErrClosed", err)
	}
}

func TestRestartingDialError(t *testing.T) {
	d := newFakeDialer()
	d.results <- fakeDial{err: errors.New("no upstream")}
	if _, err := (&Restarting{Dialer: d}).Dial(context.Background()); err == nil || err.Error() != "no upstream" {
		t.Errorf("got %v, want the first dial's error", err)
	}
	if _, err := (&Restarting{}).Dial(context.Background()); err == nil {
		t.Error("no Dialer: got nil error, want one")
	}
}

func TestRestartInspect(t *testing.T) {
	tests := []struct {
		msg           string
		wantRequests  []string
		wantResponses []string
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"x"}`, []string{"1"}, nil},
		{`{"jsonrpc":"2.0","id": "a b" ,"method":"x"}`, []string{`"a b"`}, nil},
		{`{"jsonrpc":"2.0","method":"notifications/x"}`, nil, nil},
		{`{"jsonrpc":"2.0","id":null,"method":"x"}`, nil, nil},
		{`{"jsonrpc":"2.0","id":7,"result":{}}`, nil, []string{"7"}},
		{`{"jsonrpc":"2.0","id":{ "weird" : 1 },"error":{"code":1,"message":"m"}}`, nil, []string{`{"weird":1}`}},
		{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse"}}`, nil, nil},
		{`[{"id":1,"method":"a"},{"id":2,"result":0},{"method":"n"},"junk"]`, []string{"1"}, []string{"2"}},
		{`not json`, nil, nil},
		{``, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.msg, func(t *testing.T) {
			var reqs, resps []string
			for _, m := range restartInspect([]byte(tt.msg)).msgs {
				if m.isRequest() {
					reqs = append(reqs, restartKey(m.ID))
				}
				if m.isResponse() {
					resps = append(resps, restartKey(m.ID))
				}
			}
			if strings.Join(reqs, ",") != strings.Join(tt.wantRequests, ",") {
				t.Errorf("got requests %q, want %q", reqs, tt.wantRequests)
			}
			if strings.Join(resps, ",") != strings.Join(tt.wantResponses, ",") {
				t.Errorf("got responses %q, want %q", resps, tt.wantResponses)
			}
		})
	}
}

// A request the old upstream sent the client (an elicitation, a sampling
// request) is still open at the client when the upstream restarts, and
// the new upstream numbers its own requests from the start again. The
// client's late answer to the old request must not reach the new upstream
// as the answer to its request of the same id: that one is told apart,
// the old one is cancelled and its answer dropped.
func TestRestartingStaleAnswerNotForNewUpstream(t *testing.T) {
	stdioNoLeaks(t)
	d := newFakeDialer()
	s1 := d.queue(t)
	c := mustDial(t, &Restarting{Dialer: d, MinBackoff: time.Millisecond})

	ask := `{"jsonrpc":"2.0","id":0,"method":"elicitation/create","params":{"message":"Delete every file?","requestedSchema":{"type":"object","properties":{}}}}`
	mustWrite(t, s1, ask)
	expectMessage(t, c, ask)

	s2 := d.queue(t)
	s1.crash()
	mustWrite(t, s2, `{"jsonrpc":"2.0","id":0,"method":"roots/list"}`)
	var newID json.RawMessage
	cancelled := false
	for newID == nil {
		msg := mustRead(t, c)
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				RequestID json.RawMessage `json:"requestId"`
			} `json:"params"`
		}
		if err := json.Unmarshal(msg, &m); err != nil {
			t.Fatalf("%s: %v", msg, err)
		}
		switch m.Method {
		case "notifications/cancelled":
			if string(m.Params.RequestID) != "0" {
				t.Errorf("got %s, want the old upstream's request 0 cancelled", msg)
			}
			cancelled = true
		case "roots/list":
			newID = m.ID
		default:
			t.Fatalf("got %s, want roots/list", msg)
		}
	}
	if !cancelled {
		t.Error("the old upstream's open request was not cancelled at the client")
	}
	if string(newID) == "0" {
		t.Errorf("the new upstream's request reached the client as id 0, the id of the old upstream's request still open")
	}

	// The client answers the old question late, then the new one.
	// (The pipes take one line at a time, so the writes go on their own.)
	written := make(chan error, 1)
	go func() {
		ctx := testContext(t)
		err := c.Write(ctx, []byte(`{"jsonrpc":"2.0","id":0,"result":{"action":"accept","content":{}}}`))
		if err == nil {
			err = c.Write(ctx, []byte(`{"jsonrpc":"2.0","id":`+string(newID)+`,"result":{"roots":[]}}`))
		}
		written <- err
	}()
	expectMessage(t, s2, `{"jsonrpc":"2.0","id":0,"result":{"roots":[]}}`)
	if err := <-written; err != nil {
		t.Fatal(err)
	}

	// Once answered, ids are the upstream's own again.
	mustWrite(t, s2, `{"jsonrpc":"2.0","id":1,"method":"roots/list"}`)
	expectMessage(t, c, `{"jsonrpc":"2.0","id":1,"method":"roots/list"}`)
	mustWrite(t, c, `{"jsonrpc":"2.0","id":1,"result":{"roots":[]}}`)
	expectMessage(t, s2, `{"jsonrpc":"2.0","id":1,"result":{"roots":[]}}`)
}

// The new upstream's cancellation of a request that reached the client
// under an id of the gateway's names that id.
func TestRestartingCancelOfRenamedAsk(t *testing.T) {
	stdioNoLeaks(t)
	d := newFakeDialer()
	s1 := d.queue(t)
	c := mustDial(t, &Restarting{Dialer: d, MinBackoff: time.Millisecond})
	mustWrite(t, s1, `{"jsonrpc":"2.0","id":"q","method":"sampling/createMessage","params":{}}`)
	expectMessage(t, c, `{"jsonrpc":"2.0","id":"q","method":"sampling/createMessage","params":{}}`)
	s2 := d.queue(t)
	s1.crash()
	msg := mustRead(t, c)
	if !strings.Contains(string(msg), `"method":"notifications/cancelled","params":{"requestId":"q","reason":"upstream restarted: `) {
		t.Errorf("got %s, want request q cancelled", msg)
	}
	mustWrite(t, s2, `{"jsonrpc":"2.0","id":"q","method":"sampling/createMessage","params":{"n":2}}`)
	expectMessage(t, c, `{"jsonrpc":"2.0","id":"sluice-upstream-1:\"q\"","method":"sampling/createMessage","params":{"n":2}}`)
	mustWrite(t, s2, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"q","reason":"timeout"}}`)
	expectMessage(t, c, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"sluice-upstream-1:\"q\"","reason":"timeout"}}`)
}

// An upstream asking the client without end is not remembered without
// end: the oldest question is forgotten, and the newest still answered.
func TestRestartingAsksBounded(t *testing.T) {
	stdioNoLeaks(t)
	d := newFakeDialer()
	s1 := d.queue(t)
	c := mustDial(t, &Restarting{Dialer: d, MinBackoff: time.Millisecond})
	for i := range maxRestartAsks + 10 {
		ask := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, i)
		mustWrite(t, s1, ask)
		expectMessage(t, c, ask)
	}
	rc := c.(*restartingConn)
	rc.mu.Lock()
	n := len(rc.asks)
	rc.mu.Unlock()
	if n > maxRestartAsks {
		t.Errorf("%d questions remembered, want at most %d", n, maxRestartAsks)
	}
	last := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{}}`, maxRestartAsks+9)
	written := make(chan error, 1)
	go func() { written <- c.Write(testContext(t), []byte(last)) }()
	expectMessage(t, s1, last)
	if err := <-written; err != nil {
		t.Fatal(err)
	}
}

// An upstream that asks the client twice under one id (the first never
// answered) has the second question told apart too, and its cancellation
// of it names the id the client knows.
func TestRestartingDuplicateAsk(t *testing.T) {
	stdioNoLeaks(t)
	d := newFakeDialer()
	s1 := d.queue(t)
	c := mustDial(t, &Restarting{Dialer: d, MinBackoff: time.Millisecond})
	mustWrite(t, s1, `{"jsonrpc":"2.0","id":0,"method":"roots/list"}`)
	expectMessage(t, c, `{"jsonrpc":"2.0","id":0,"method":"roots/list"}`)
	mustWrite(t, s1, `{"jsonrpc":"2.0","id":0,"method":"roots/list","params":{}}`)
	expectMessage(t, c, `{"jsonrpc":"2.0","id":"sluice-upstream-0:0","method":"roots/list","params":{}}`)
	written := make(chan error, 1)
	go func() { written <- c.Write(testContext(t), []byte(`{"jsonrpc":"2.0","id":0,"result":{"roots":[]}}`)) }()
	expectMessage(t, s1, `{"jsonrpc":"2.0","id":0,"result":{"roots":[]}}`)
	if err := <-written; err != nil {
		t.Fatal(err)
	}
	mustWrite(t, s1, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":0}}`)
	expectMessage(t, c, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"sluice-upstream-0:0"}}`)
}

// TestRestartingStaleAnswerEscapedID: an upstream writing its request's
// string id with an escape ("\u00e9", as Python's json.dumps writes
// anything not ASCII, or "a\/b" as PHP's writes a slash) gets answers
// under the id the client reads, written plainly ("é"): one id, as the
// gateway keys ids (intercept.IDKeyOf), but two to the restart's book.
// So the client's late answer to the old upstream's request went to the
// new upstream as the answer to its own request of that id, the consent
// TestRestartingStaleAnswerNotForNewUpstream keeps from it.
func TestRestartingStaleAnswerEscapedID(t *testing.T) {
	stdioNoLeaks(t)
	d := newFakeDialer()
	s1 := d.queue(t)
	c := mustDial(t, &Restarting{Dialer: d, MinBackoff: time.Millisecond})

	ask := `{"jsonrpc":"2.0","id":"q\u00e9","method":"elicitation/create","params":{"message":"Subscribe?","requestedSchema":{"type":"object","properties":{}}}}`
	mustWrite(t, s1, ask)
	expectMessage(t, c, ask)

	s2 := d.queue(t)
	s1.crash()
	mustWrite(t, s2, `{"jsonrpc":"2.0","id":"q\u00e9","method":"elicitation/create","params":{"message":"Delete every file?","requestedSchema":{"type":"object","properties":{}}}}`)
	var newID json.RawMessage
	for newID == nil {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		msg := mustRead(t, c)
		if err := json.Unmarshal(msg, &m); err != nil {
			t.Fatalf("%s: %v", msg, err)
		}
		if m.Method == "elicitation/create" {
			newID = m.ID
		}
	}
	var id string
	if err := json.Unmarshal(newID, &id); err != nil || id == "qé" {
		t.Fatalf("the new upstream's request reached the client as %s, the id of the old upstream's request still open", newID)
	}

	// The client answers the old question late, under its id as it reads
	// it, then declines the new one.
	written := make(chan error, 1)
	go func() {
		ctx := testContext(t)
		err := c.Write(ctx, []byte(`{"jsonrpc":"2.0","id":"qé","result":{"action":"accept","content":{}}}`))
		if err == nil {
			err = c.Write(ctx, []byte(`{"jsonrpc":"2.0","id":`+string(newID)+`,"result":{"action":"decline"}}`))
		}
		written <- err
	}()
	expectMessage(t, s2, `{"jsonrpc":"2.0","id":"q\u00e9","result":{"action":"decline"}}`)
	if err := <-written; err != nil {
		t.Fatal(err)
	}
}
