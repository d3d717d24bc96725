package gateway

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	mgoclient "github.com/mark3labs/mcp-go/client"
	mgotransport "github.com/mark3labs/mcp-go/client/transport"
	mgomcp "github.com/mark3labs/mcp-go/mcp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
)

var transparencyMatrix = flag.Bool("transparency", false, "run TestTransparency's matrix")

func TestMain(m *testing.M) {
	if name := os.Getenv(transparencyServerEnv); name != "" {
		os.Exit(runTransparencyServer(name))
	}
	os.Exit(m.Run())
}

// transcript is what a client received, message by message, as its
// transport read it off the wire: the bytes of each JSON-RPC message (a
// JSON body, an event's data, a stdio line), filed under the script's
// step that was running. HTTP exchanges are kept too, in the order they
// began, as method, status, content type and the messages of the body in
// order.
type transcript struct {
	mu        sync.Mutex // guards the fields below
	step      string
	steps     []string
	received  map[string][]message
	exchanges map[string][]string
	slowID    string        // the id of the call the script cancels
	closing   bool          // the script is closing: what comes now is not compared
	changed   chan struct{} // closed and replaced on every message
}

func newTranscript() *transcript {
	return &transcript{received: map[string][]message{}, exchanges: map[string][]string{}, changed: make(chan struct{})}
}

func (tr *transcript) begin(step string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if step == "close" {
		// What a peer sends while the session ends (the answer to a
		// 2026-07-28 subscriptions/listen) races the end.
		tr.closing = true
	}
	tr.step = step
	tr.steps = append(tr.steps, step)
}

// A message is one JSON-RPC message as the client read it, and how it was
// framed: "json" (a JSON body), "event" (an event's data) or "line" (a
// stdio line).
type message struct {
	frame, text string
}

func (tr *transcript) add(frame string, msg []byte) {
	msg = bytes.TrimRight(msg, "\r\n")
	if len(bytes.TrimSpace(msg)) == 0 {
		return
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.closing {
		return
	}
	tr.received[tr.step] = append(tr.received[tr.step], message{frame, string(msg)})
	close(tr.changed)
	tr.changed = make(chan struct{})
}

// unstepped is where the exchanges a client starts when its scheduler
// gets to them are filed, to be compared over the session, not by step:
// its GET stream (mcp-go's opened from a goroutine of its own, in
// whichever step is running then) and its POSTs of notifications/cancelled
// (go-sdk's sent as the cancelled call returns, in that step or the next).
const unstepped = "(GET streams and cancellations)"

// exchange files an HTTP exchange's description under the current step
// (or unstepped) and returns a function that appends to it.
func (tr *transcript) exchange(desc string) func(string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	step := tr.step
	if strings.HasPrefix(desc, http.MethodGet) || desc == "POST notifications/cancelled" {
		step = unstepped
	}
	i := len(tr.exchanges[step])
	tr.exchanges[step] = append(tr.exchanges[step], desc)
	return func(s string) {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		tr.exchanges[step][i] += " " + s
	}
}

// await waits until a message received in this step holds sub.
func (tr *transcript) await(ctx context.Context, sub string) error {
	for {
		tr.mu.Lock()
		for _, m := range tr.received[tr.step] {
			if strings.Contains(m.text, sub) {
				tr.mu.Unlock()
				return nil
			}
		}
		ch := tr.changed
		tr.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", sub, ctx.Err())
		}
	}
}

// answer reports whether m is an answer or a request, other than the
// answer to the call the script cancels. That one's id is the session's
// own: a client of the virtual server, which lists fewer pages, numbers
// its requests otherwise, and another request there may have the id the
// slow call had directly (before, such an answer was taken for the slow
// call's and left out: a prompts/get or a read "answered out of its
// step").
func (tr *transcript) answer(m message) bool {
	tr.mu.Lock()
	slow := tr.slowID
	tr.mu.Unlock()
	return !isNotification(m) && (slow == "" || idOf(m) != slow)
}

// sent notes the id of the call to the slow tool, if msg is that call.
func (tr *transcript) sent(msg []byte) {
	var m struct {
		ID     jsontext.Value `json:"id"`
		Method string         `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	if json.Unmarshal(msg, &m) == nil && m.Method == "tools/call" && m.Params.Name == "slow" {
		tr.mu.Lock()
		tr.slowID = string(m.ID)
		tr.mu.Unlock()
	}
}

// writeTee notes what a stdio client sends (transcript.sent).
type writeTee struct {
	io.WriteCloser
	tr   *transcript
	line []byte
}

func (t *writeTee) Write(p []byte) (int, error) {
	for _, c := range p {
		if c != '\n' {
			t.line = append(t.line, c)
			continue
		}
		t.tr.sent(t.line)
		t.line = t.line[:0]
	}
	return t.WriteCloser.Write(p)
}

// recordingTransport records the messages of every HTTP answer (JSON or
// an event stream) as the client reads them.
type recordingTransport struct {
	tr   *transcript
	next http.RoundTripper
}

func (rt recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	desc := req.Method
	if req.Body != nil {
		b, _ := io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(b))
		desc += " " + summarize(b)
		rt.tr.sent(b)
	}
	// Filed under the step it began in: when the answer's headers come
	// is the server's business (mcp-go's answers the client's answer to
	// its request only once the tool has used it).
	note := rt.tr.exchange(desc)
	resp, err := rt.next.RoundTrip(req)
	if err != nil {
		note("-> " + err.Error())
		return resp, err
	}
	ct := resp.Header.Get("Content-Type")
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	note(fmt.Sprintf("-> %d %s:", resp.StatusCode, ct))
	switch ct {
	case "text/event-stream":
		resp.Body = &sseTee{ReadCloser: resp.Body, tr: rt.tr, note: note}
	default:
		resp.Body = &jsonTee{ReadCloser: resp.Body, tr: rt.tr, note: note}
	}
	return resp, nil
}

// summarize names what a body holds: each message's method, or "answer".
func summarize(b []byte) string {
	if len(bytes.TrimSpace(b)) == 0 {
		return "(empty)"
	}
	var one struct {
		Method string `json:"method"`
	}
	if json.Unmarshal(b, &one) == nil {
		if one.Method == "" {
			return "answer"
		}
		return one.Method
	}
	return "(batch)"
}

type jsonTee struct {
	io.ReadCloser
	tr   *transcript
	note func(string)
	buf  bytes.Buffer
	done bool
}

func (t *jsonTee) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	t.buf.Write(p[:n])
	if err == io.EOF && !t.done {
		t.done = true
		if t.buf.Len() > 0 {
			t.tr.add("json", t.buf.Bytes())
			t.note(summarize(t.buf.Bytes()))
		}
	}
	return n, err
}

// sseTee records each event's data as the client reads it.
type sseTee struct {
	io.ReadCloser
	tr      *transcript
	note    func(string)
	line    []byte
	data    []byte
	hasData bool
}

func (t *sseTee) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	for _, c := range p[:n] {
		if c != '\n' {
			t.line = append(t.line, c)
			continue
		}
		line := bytes.TrimSuffix(t.line, []byte("\r"))
		t.line = t.line[:0]
		switch {
		case len(line) == 0:
			if t.hasData {
				t.tr.add("event", t.data)
				t.note(summarize(t.data))
			}
			t.data, t.hasData = nil, false
		case bytes.HasPrefix(line, []byte("data:")):
			d := bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))
			if t.hasData {
				t.data = append(t.data, '\n')
			}
			t.data = append(t.data, d...)
			t.hasData = true
		}
	}
	return n, err
}

// lineTee records each line a stdio client reads.
type lineTee struct {
	r    io.Reader
	tr   *transcript
	line []byte
}

func (t *lineTee) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	for _, c := range p[:n] {
		if c != '\n' {
			t.line = append(t.line, c)
			continue
		}
		t.tr.add("line", t.line)
		t.line = t.line[:0]
	}
	return n, err
}

// A peer is how the script reaches a server: over HTTP at url, or over
// stdio through conn (a child process or ServeConn).
type peer struct {
	url   string
	stdio func() (io.Reader, io.WriteCloser)
	era   string // the protocol version the client asks for
}

// scriptClient is one SDK's client, driven by the script.
type scriptClient interface {
	connect(ctx context.Context, p peer, tr *transcript) error
	call(ctx context.Context, name string, args map[string]any, progress any) error
	list(ctx context.Context, kind, cursor string) (next string, err error)
	read(ctx context.Context, uri string) error
	subscribe(ctx context.Context, uri string) error
	prompt(ctx context.Context, name string, args map[string]string) error
	complete(ctx context.Context) error
	setLevel(ctx context.Context, level string) error
	ping(ctx context.Context) error
	rootsChanged(ctx context.Context) error
	close() error
}

// runScript runs the session and returns its transcript. Errors the client
// returns are part of it.
func runScript(t *testing.T, c scriptClient, p peer) *transcript {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	tr := newTranscript()
	result := func(err error) {
		if err != nil {
			tr.mu.Lock()
			tr.received[tr.step] = append(tr.received[tr.step], message{"error", err.Error()})
			tr.mu.Unlock()
		}
	}
	tr.begin("initialize")
	if err := c.connect(ctx, p, tr); err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer c.close()
	for _, kind := range []string{"tools", "resources", "templates", "prompts"} {
		tr.begin(kind + "/list")
		cursor := ""
		for page := 0; page < 10; page++ {
			next, err := c.list(ctx, kind, cursor)
			result(err)
			if err != nil || next == "" {
				break
			}
			cursor = next
		}
	}
	for _, call := range []struct {
		name     string
		args     map[string]any
		progress any
	}{
		{"echo", map[string]any{"text": "hi \U0001F600 \u2028"}, nil},
		{"weather", map[string]any{"city": "Zürich"}, nil},
		{"fail", map[string]any{}, nil},
		{"progress", map[string]any{}, "tok-1"},
		{"unicode", map[string]any{}, nil},
		{"big", map[string]any{"mib": 3}, nil},
		{"sample", map[string]any{}, nil},
		{"elicit", map[string]any{}, nil},
		{"elicit_url", map[string]any{}, nil},
		{"ping_client", map[string]any{}, nil},
	} {
		tr.begin("tools/call " + call.name)
		result(c.call(ctx, call.name, call.args, call.progress))
	}
	tr.begin("cancel")
	cctx, ccancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.call(cctx, "slow", map[string]any{}, "tok-slow") }()
	sctx, scancel := context.WithTimeout(ctx, 5*time.Second)
	result(tr.await(sctx, "started"))
	scancel()
	ccancel()
	<-done // what the client makes of it is its own business
	tr.begin("ping")
	result(c.ping(ctx))
	tr.begin("resources/read")
	for _, uri := range []string{"test://static/a", "test://static/b", "test://items/42"} {
		result(c.read(ctx, uri))
	}
	tr.begin("prompts/get")
	result(c.prompt(ctx, "greet", map[string]string{"name": "Zoë \U0001F600"}))
	tr.begin("completion/complete")
	result(c.complete(ctx))
	tr.begin("logging")
	result(c.setLevel(ctx, "debug"))
	result(c.call(ctx, "log", map[string]any{}, nil))
	tr.begin("subscribe")
	if err := c.subscribe(ctx, "test://static/a"); err != nil {
		result(err)
	} else {
		result(c.call(ctx, "touch", map[string]any{}, nil))
		wctx, wcancel := context.WithTimeout(ctx, 3*time.Second)
		result(tr.await(wctx, "notifications/resources/updated"))
		wcancel()
	}
	tr.begin("roots")
	result(c.rootsChanged(ctx))
	result(c.call(ctx, "roots", map[string]any{}, nil))
	tr.begin("tools/list_changed")
	result(c.call(ctx, "add_tool", map[string]any{}, nil))
	wctx, wcancel := context.WithTimeout(ctx, 3*time.Second)
	result(tr.await(wctx, "notifications/tools/list_changed"))
	wcancel()
	tr.begin("tools/list again")
	cursor := ""
	for page := 0; page < 10; page++ {
		next, err := c.list(ctx, "tools", cursor)
		result(err)
		if err != nil || next == "" {
			break
		}
		cursor = next
	}
	tr.begin("close")
	return tr
}

// ---- go-sdk client ----

type gosdkScriptClient struct {
	cs *mcp.ClientSession
	c  *mcp.Client
}

func (g *gosdkScriptClient) connect(ctx context.Context, p peer, tr *transcript) error {
	g.c = mcp.NewClient(&mcp.Implementation{Name: "gosdk-client", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "m \U0001F600", Role: "assistant", Content: &mcp.TextContent{Text: "hi \u2028"}}, nil
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if req.Params.Mode == "url" {
				return &mcp.ElicitResult{Action: "accept"}, nil
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Zoë"}}, nil
		},
		LoggingMessageHandler:       func(context.Context, *mcp.LoggingMessageRequest) {},
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {},
		ResourceUpdatedHandler:      func(context.Context, *mcp.ResourceUpdatedNotificationRequest) {},
		ToolListChangedHandler:      func(context.Context, *mcp.ToolListChangedRequest) {},
		Capabilities:                &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}, RootsV2: &mcp.RootCapabilities{ListChanged: true}, Sampling: &mcp.SamplingCapabilities{}},
	})
	g.c.AddRoots(&mcp.Root{URI: "file:///one", Name: "one"})
	var t mcp.Transport
	if p.url != "" {
		t = &mcp.StreamableClientTransport{Endpoint: p.url, HTTPClient: &http.Client{Transport: recordingTransport{tr, http.DefaultTransport}}}
	} else {
		r, w := p.stdio()
		t = &mcp.IOTransport{Reader: io.NopCloser(&lineTee{r: r, tr: tr}), Writer: &writeTee{WriteCloser: w, tr: tr}}
	}
	cs, err := g.c.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: p.era})
	g.cs = cs
	return err
}

func (g *gosdkScriptClient) call(ctx context.Context, name string, args map[string]any, progress any) error {
	p := &mcp.CallToolParams{Name: name, Arguments: args}
	if progress != nil {
		p.SetProgressToken(progress)
	}
	_, err := g.cs.CallTool(ctx, p)
	return err
}

func (g *gosdkScriptClient) list(ctx context.Context, kind, cursor string) (string, error) {
	switch kind {
	case "tools":
		r, err := g.cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			return "", err
		}
		return r.NextCursor, nil
	case "resources":
		r, err := g.cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
		if err != nil {
			return "", err
		}
		return r.NextCursor, nil
	case "templates":
		r, err := g.cs.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cursor})
		if err != nil {
			return "", err
		}
		return r.NextCursor, nil
	default:
		r, err := g.cs.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cursor})
		if err != nil {
			return "", err
		}
		return r.NextCursor, nil
	}
}

func (g *gosdkScriptClient) read(ctx context.Context, uri string) error {
	_, err := g.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	return err
}

func (g *gosdkScriptClient) subscribe(ctx context.Context, uri string) error {
	return g.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
}

func (g *gosdkScriptClient) prompt(ctx context.Context, name string, args map[string]string) error {
	_, err := g.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: args})
	return err
}

func (g *gosdkScriptClient) complete(ctx context.Context) error {
	_, err := g.cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "greet"}, Argument: mcp.CompleteParamsArgument{Name: "name", Value: "A"}})
	return err
}

func (g *gosdkScriptClient) setLevel(ctx context.Context, level string) error {
	return g.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: mcp.LoggingLevel(level)})
}

func (g *gosdkScriptClient) ping(ctx context.Context) error { return g.cs.Ping(ctx, nil) }

func (g *gosdkScriptClient) rootsChanged(context.Context) error {
	g.c.AddRoots(&mcp.Root{URI: "file:///two", Name: "two \U0001F600"})
	return nil
}

func (g *gosdkScriptClient) close() error {
	if g.cs == nil {
		return nil
	}
	return g.cs.Close()
}

// ---- mcp-go client ----

type mgoScriptClient struct {
	c     *mgoclient.Client
	roots []mgomcp.Root
	mu    sync.Mutex
}

type mgoScriptHandlers struct{ c *mgoScriptClient }

func (mgoScriptHandlers) CreateMessage(context.Context, mgomcp.CreateMessageRequest) (*mgomcp.CreateMessageResult, error) {
	return &mgomcp.CreateMessageResult{Model: "m \U0001F600", SamplingMessage: mgomcp.SamplingMessage{Role: mgomcp.RoleAssistant, Content: mgomcp.NewTextContent("hi \u2028")}}, nil
}

func (mgoScriptHandlers) Elicit(_ context.Context, req mgomcp.ElicitationRequest) (*mgomcp.ElicitationResult, error) {
	if req.Params.Mode == "url" {
		return &mgomcp.ElicitationResult{ElicitationResponse: mgomcp.ElicitationResponse{Action: "accept"}}, nil
	}
	return &mgomcp.ElicitationResult{ElicitationResponse: mgomcp.ElicitationResponse{Action: "accept", Content: map[string]any{"name": "Zoë"}}}, nil
}

func (h mgoScriptHandlers) ListRoots(context.Context, mgomcp.ListRootsRequest) (*mgomcp.ListRootsResult, error) {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	return &mgomcp.ListRootsResult{Roots: slices.Clone(h.c.roots)}, nil
}

func (m *mgoScriptClient) connect(ctx context.Context, p peer, tr *transcript) error {
	m.roots = []mgomcp.Root{{URI: "file:///one", Name: "one"}}
	var t mgotransport.Interface
	if p.url != "" {
		st, err := mgotransport.NewStreamableHTTP(p.url, mgotransport.WithHTTPBasicClient(&http.Client{Transport: recordingTransport{tr, http.DefaultTransport}}), mgotransport.WithContinuousListening())
		if err != nil {
			return err
		}
		t = st
	} else {
		r, w := p.stdio()
		t = mgotransport.NewIO(&lineTee{r: r, tr: tr}, &writeTee{WriteCloser: w, tr: tr}, io.NopCloser(strings.NewReader("")))
	}
	h := mgoScriptHandlers{m}
	opts := []mgoclient.ClientOption{mgoclient.WithSamplingHandler(h), mgoclient.WithElicitationHandler(h), mgoclient.WithRootsHandler(h)}
	if p.era != "" {
		opts = append(opts, mgoclient.WithProtocolVersion(p.era))
	}
	m.c = mgoclient.NewClient(t, opts...)
	m.c.OnNotification(func(mgomcp.JSONRPCNotification) {})
	if err := m.c.Start(ctx); err != nil {
		return err
	}
	_, err := m.c.Initialize(ctx, mgomcp.InitializeRequest{Params: mgomcp.InitializeParams{ClientInfo: mgomcp.Implementation{Name: "mcpgo-client", Version: "1"}}})
	return err
}

func (m *mgoScriptClient) call(ctx context.Context, name string, args map[string]any, progress any) error {
	req := mgomcp.CallToolRequest{Params: mgomcp.CallToolParams{Name: name, Arguments: args}}
	if progress != nil {
		req.Params.Meta = &mgomcp.Meta{ProgressToken: progress}
	}
	_, err := m.c.CallTool(ctx, req)
	return err
}

func (m *mgoScriptClient) list(ctx context.Context, kind, cursor string) (string, error) {
	pr := mgomcp.PaginatedRequest{Params: mgomcp.PaginatedParams{Cursor: mgomcp.Cursor(cursor)}}
	switch kind {
	case "tools":
		r, err := m.c.ListToolsByPage(ctx, mgomcp.ListToolsRequest{PaginatedRequest: pr})
		if err != nil {
			return "", err
		}
		return string(r.NextCursor), nil
	case "resources":
		r, err := m.c.ListResourcesByPage(ctx, mgomcp.ListResourcesRequest{PaginatedRequest: pr})
		if err != nil {
			return "", err
		}
		return string(r.NextCursor), nil
	case "templates":
		r, err := m.c.ListResourceTemplatesByPage(ctx, mgomcp.ListResourceTemplatesRequest{PaginatedRequest: pr})
		if err != nil {
			return "", err
		}
		return string(r.NextCursor), nil
	default:
		r, err := m.c.ListPromptsByPage(ctx, mgomcp.ListPromptsRequest{PaginatedRequest: pr})
		if err != nil {
			return "", err
		}
		return string(r.NextCursor), nil
	}
}

func (m *mgoScriptClient) read(ctx context.Context, uri string) error {
	_, err := m.c.ReadResource(ctx, mgomcp.ReadResourceRequest{Params: mgomcp.ReadResourceParams{URI: uri}})
	return err
}

func (m *mgoScriptClient) subscribe(ctx context.Context, uri string) error {
	return m.c.Subscribe(ctx, mgomcp.SubscribeRequest{Params: mgomcp.SubscribeParams{URI: uri}})
}

func (m *mgoScriptClient) prompt(ctx context.Context, name string, args map[string]string) error {
	_, err := m.c.GetPrompt(ctx, mgomcp.GetPromptRequest{Params: mgomcp.GetPromptParams{Name: name, Arguments: args}})
	return err
}

func (m *mgoScriptClient) complete(ctx context.Context) error {
	_, err := m.c.Complete(ctx, mgomcp.CompleteRequest{Params: mgomcp.CompleteParams{Ref: mgomcp.PromptReference{Type: "ref/prompt", Name: "greet"}, Argument: mgomcp.CompleteArgument{Name: "name", Value: "A"}}})
	return err
}

func (m *mgoScriptClient) setLevel(ctx context.Context, level string) error {
	return m.c.SetLevel(ctx, mgomcp.SetLevelRequest{Params: mgomcp.SetLevelParams{Level: mgomcp.LoggingLevel(level)}})
}

func (m *mgoScriptClient) ping(ctx context.Context) error { return m.c.Ping(ctx) }

func (m *mgoScriptClient) rootsChanged(ctx context.Context) error {
	m.mu.Lock()
	m.roots = append(m.roots, mgomcp.Root{URI: "file:///two", Name: "two \U0001F600"})
	m.mu.Unlock()
	return m.c.RootListChanges(ctx)
}

func (m *mgoScriptClient) close() error {
	if m.c == nil {
		return nil
	}
	return m.c.Close()
}

var (
	_ scriptClient = (*gosdkScriptClient)(nil)
	_ scriptClient = (*mgoScriptClient)(nil)
)

// permissive allows every call and carry, and holds nothing.
var permissive = &intercept.StaticDecider{Default: intercept.Allow}

// startHTTPServer serves a fresh server of the SDK named over Streamable
// HTTP and returns its endpoint.
func startHTTPServer(t *testing.T, sdk string) string {
	h := goSDKHTTPHandler()
	if sdk == "mcpgo" {
		h = mcpGoHTTPHandler()
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// stdioServer starts a fresh stdio server of the SDK named (this test
// binary, see TestMain) and returns its stdout and stdin.
func stdioServer(t *testing.T, sdk string) func() (io.Reader, io.WriteCloser) {
	return func() (io.Reader, io.WriteCloser) {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), transparencyServerEnv+"="+sdk)
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { in.Close(); cmd.Process.Kill(); cmd.Wait() })
		return out, in
	}
}

// upstreamFor is the upstream "up" with a fresh server of sdk behind it,
// over transport kind ("http" or "stdio").
func upstreamFor(t *testing.T, sdk, kind string) Upstream {
	if kind == "stdio" {
		return Upstream{Name: "up", Command: os.Args[0], Env: map[string]string{transparencyServerEnv: sdk}}
	}
	return Upstream{Name: "up", URL: startHTTPServer(t, sdk)}
}

// startPermissiveGateway serves a gateway with a permissive policy in front of up,
// with the unnamed virtual server over it at /mcp.
func startPermissiveGateway(t *testing.T, up Upstream) (*Gateway, string) {
	g, err := New(Options{Upstreams: []Upstream{up}, VirtualServers: []VirtualServer{{}}}, &intercept.Interceptor{Decider: permissive}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, srv, g) })
	return g, srv.URL
}

// wrapped is `sluice wrap`: the client's stdio served by ServeConn.
func wrapped(t *testing.T, g *Gateway) func() (io.Reader, io.WriteCloser) {
	return func() (io.Reader, io.WriteCloser) {
		toGW, clientW := io.Pipe()
		clientR, fromGW := io.Pipe()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			g.ServeConn(ctx, "up", transport.NewStdioConn(toGW, fromGW, nil))
			fromGW.Close()
		}()
		// The client stops reading when it closes: what the gateway
		// writes then (the answer to a 2026-07-28 subscriptions/listen)
		// would block on the pipe for ever, and the cleanup with it.
		t.Cleanup(func() { clientW.Close(); clientR.Close(); cancel(); <-done })
		return clientR, clientW
	}
}

func newScriptClient(sdk string) scriptClient {
	if sdk == "gosdk" {
		return &gosdkScriptClient{}
	}
	return &mgoScriptClient{}
}

// TestTransparency runs one scripted session twice, directly against a
// server and through the gateway with a permissive policy, and compares
// what the client received, message by message: go-sdk's client against
// mcp-go's server and mcp-go's client against go-sdk's, in both protocol
// eras, on /mcp/{route}, the virtual server /mcp and `sluice wrap`'s stdio
// (ServeConn), each over an HTTP and a stdio upstream. The baseline is the
// server directly on the client's transport: over Streamable HTTP for
// /mcp, over stdio for wrap.
//
// It runs only with -transparency: the matrix takes minutes, and cells
// still differ (the commit that added it lists them).
func TestTransparency(t *testing.T) {
	if !*transparencyMatrix {
		t.Skip("run with -transparency")
	}
	// Cells with a difference this change does not fix, and why; each is
	// skipped with its reason, so that `go test -v` lists them.
	const (
		order = "mcp-go writes a request to the client with params before method over HTTP and method first over stdio; " +
			"the gateway passes it as the upstream wrote it, so the client sees the upstream transport's order, not the baseline's"
		direct2026 = "the baseline fails, not the gateway: go-sdk's HTTP client POSTs notifications/cancelled, which mcp-go's HTTP server " +
			"refuses (400), and then closes its session; its ping carries no _meta version, which mcp-go's HTTP server refuses too"
	)
	known := map[string]string{
		"TestTransparency/gosdk-client/mcpgo-server/2025-11-25/wrap/http": order,
		"TestTransparency/gosdk-client/mcpgo-server/2025-11-25/route/stdio": order + "; and mcp-go's stdio server answers the " +
			"cancelled call (an error, context canceled), which the gateway passes on to the GET stream (the README's orphans), " +
			"where mcp-go's HTTP server, the baseline, has no stream left to answer it on",
		"TestTransparency/gosdk-client/mcpgo-server/2026-07-28/route/http": direct2026 + "; which later call of the script " +
			"fails once the client closes is its scheduling, so the baseline differs from run to run; and mcp-go's HTTP server " +
			"drops a notification its forwarder took off the session's channel when the answer is written first (one progress " +
			"of three missing, directly or through the gateway, now and then)",
		"TestTransparency/gosdk-client/mcpgo-server/2026-07-28/route/stdio":   direct2026,
		"TestTransparency/gosdk-client/mcpgo-server/2026-07-28/virtual/http":  direct2026,
		"TestTransparency/gosdk-client/mcpgo-server/2026-07-28/virtual/stdio": direct2026,
		"TestTransparency/gosdk-client/mcpgo-server/2026-07-28/wrap/http": "the baseline is mcp-go over stdio, which serves a request " +
			"without a _meta version (go-sdk's ping, logging/setLevel) and answers a cancelled call; over HTTP mcp-go refuses the first (400) " +
			"and a cancelled request's stream is closed, so nothing answers it (TestWrapStatelessCancel: the session goes on); " +
			"and mcp-go's HTTP server (v1.2.1) never sends the touch tool's resources/updated to a 2026-07-28 subscriber: its " +
			"SendNotificationToAllClients leaves every type but a list change off a subscriptions/listen stream, and it exports no " +
			"per-URI fan-out (straight to mcp-go's HTTP server, the listen stream gets its acknowledgement and nothing more, so a " +
			"read of it without a deadline waits for ever); over HTTP it tags a list change with the listen's subscriptionId too",
		"TestTransparency/mcpgo-client/gosdk-server/2026-07-28/wrap/http": "go-sdk's HTTP server answers server/discover but refuses " +
			"2026-07-28 requests (400), which its stdio server, the baseline, serves",
	}
	for _, pair := range []struct{ client, server string }{
		{"gosdk", "mcpgo"},
		{"mcpgo", "gosdk"},
	} {
		for _, era := range []string{"2025-11-25", "2026-07-28"} {
			t.Run(pair.client+"-client/"+pair.server+"-server/"+era, func(t *testing.T) {
				t.Parallel()
				race := pair.server == "mcpgo"
				var directHTTP, directStdio *transcript
				var once sync.Once
				baseline := func(t *testing.T) {
					once.Do(func() {
						directHTTP = runScript(t, newScriptClient(pair.client), peer{url: startHTTPServer(t, pair.server), era: era})
						directStdio = runScript(t, newScriptClient(pair.client), peer{stdio: stdioServer(t, pair.server), era: era})
					})
				}
				for _, up := range []string{"http", "stdio"} {
					for _, down := range []string{"route", "virtual", "wrap"} {
						t.Run(down+"/"+up, func(t *testing.T) {
							if why := known[t.Name()]; why != "" {
								t.Skip(why)
							}
							baseline(t)
							g, base := startPermissiveGateway(t, upstreamFor(t, pair.server, up))
							switch down {
							case "route":
								via := runScript(t, newScriptClient(pair.client), peer{url: base + "/mcp/up", era: era})
								compareTranscripts(t, directHTTP, via, up == "http", race)
							case "virtual":
								via := runScript(t, newScriptClient(pair.client), peer{url: base + "/mcp", era: era})
								compareVirtual(t, directHTTP, via, race)
							case "wrap":
								via := runScript(t, newScriptClient(pair.client), peer{stdio: wrapped(t, g), era: era})
								compareTranscripts(t, directStdio, via, false, race)
							}
						})
					}
				}
			})
		}
	}
}

// virtualSteps are the steps a virtual server's client sees as it would
// directly (compareVirtual). The others are documented differences (the
// README's "Virtual servers"): initialize answers the virtual server's own
// name and capabilities, without the upstream's instructions; lists are
// one merged page (no cursor, no ttlMs or cacheScope); completion/complete
// and resources/subscribe are not offered (-32601).
var virtualSteps = []string{"tools/call ", "cancel", "ping", "resources/read", "prompts/get", "logging", "roots", "tools/list_changed"}

// compareVirtual compares, in the virtualSteps, what a client of the
// virtual server received with what it received directly: answers and
// the server's requests in order, notifications in any order (or, with
// notificationsRace, not by step). Messages are compared as JSON values
// without their ids: the virtual server writes every answer itself
// (members in its own order, strings in its own escaping) and sends the
// upstream's requests under ids of its own ("sluice-ask-N"), and a client
// that lists one page where it listed six numbers its later requests
// otherwise.
func compareVirtual(t *testing.T, direct, via *transcript, notificationsRace bool) {
	t.Helper()
	semantic := func(m message) string {
		var v map[string]any
		if json.Unmarshal([]byte(m.text), &v) != nil {
			return m.frame + " " + m.text // a client error, as it is
		}
		delete(v, "id")
		b, _ := json.Marshal(v, json.Deterministic(true))
		return string(b)
	}
	same := func(d, v message) bool { return semantic(d) == semantic(v) }
	for _, step := range direct.steps {
		if !slices.ContainsFunc(virtualSteps, func(p string) bool { return strings.HasPrefix(step, p) }) {
			continue
		}
		compareStep(t, step, "the virtual server", direct, via, notificationsRace, semantic, same)
	}
}

// compareTranscripts reports where what the client received through the
// gateway differs from what it received directly:
//
//   - every message, over the whole session, byte for byte: each one the
//     client read directly it reads through the gateway, and no other;
//   - in each step of the script, the answers (results and errors) and the
//     server's requests, in order;
//   - in each step, the notifications (in any order: one on the GET stream
//     and the answer on the POST's are in the scheduler's order), unless
//     notificationsRace (below);
//   - with framing, the HTTP exchanges of each step: method, what the
//     body held, status and content type of the answer, and the messages
//     of the answer in order (sorted by their description, since which of
//     two concurrent exchanges begins first is the scheduler's choice).
//
// Normalised, and only this: a message the gateway writes as an event or
// a stdio line is compacted (transport.Compact: no JSON whitespace, and
// U+2028, U+2029 and U+0085 escaped), as the README's "What policy saw is
// what is sent" says, so that a reader splitting lines at any of them
// finds the message policy saw; such a message is taken as equal to the
// compact form of the direct one. Session ids and SSE event ids are not
// recorded (they are minted per session), nor is time.
//
// notificationsRace is for mcp-go's server, which writes a request's
// notifications from another goroutine than its answer: directly, a
// progress or log notification may come after the answer, on the GET
// stream, in the next step. Then notifications are compared over the
// whole session only (the first rule), not by step. Its HTTP server
// also drops the notification its forwarder has taken off the session's
// channel when the answer is written first (mcp-go v1.2.1,
// streamable_http.go: the forwarder finds the request done and returns):
// a call's progress or log notification, at most one per call, missing
// directly or through an HTTP upstream, now and then. Then one such
// notification a step has on one side and not the other is not a
// difference (lossy); two are, and any other message is.
func compareTranscripts(t *testing.T, direct, via *transcript, framing, notificationsRace bool) {
	t.Helper()
	compareWith(t, direct, via, framing, notificationsRace, func(m message) string { return m.text }, func(d, v message) bool {
		if d.text == v.text {
			return true
		}
		if v.frame == "event" || v.frame == "line" {
			c, err := transport.Compact([]byte(d.text))
			return err == nil && string(c) == v.text
		}
		return false
	})
}

func compareWith(t *testing.T, direct, via *transcript, framing, notificationsRace bool, key func(message) string, same func(d, v message) bool) {
	t.Helper()
	// The whole session.
	var all []message
	for _, step := range direct.steps {
		all = append(all, direct.received[step]...)
	}
	var extra []message
	for _, step := range via.steps {
		for _, v := range via.received[step] {
			if i := slices.IndexFunc(all, func(d message) bool { return same(d, v) }); i >= 0 {
				all = slices.Delete(all, i, i+1)
			} else {
				extra = append(extra, v)
			}
		}
	}
	if notificationsRace {
		all, extra = lossy(direct, all), lossy(via, extra)
	}
	if len(all) > 0 || len(extra) > 0 {
		t.Errorf("over the session, through the gateway the client did not receive\n%sand received instead\n%s", show(all), show(extra))
	}
	for _, step := range direct.steps {
		// The answer to the cancelled call, if one comes, comes when the
		// server is done with it: it is compared over the session only.
		compareStep(t, step, "the gateway", direct, via, notificationsRace, key, same)
		if framing {
			compareExchanges(t, step, direct, via, notificationsRace)
		}
	}
	if framing {
		compareExchanges(t, unstepped, direct, via, notificationsRace)
	}
}

// callNotification reports whether m is a notification an mcp-go HTTP
// server may drop (compareTranscripts): a call's progress or log.
func callNotification(m message) bool {
	return isNotification(m) && (strings.Contains(m.text, `"method":"notifications/progress"`) || strings.Contains(m.text, `"method":"notifications/message"`))
}

// lossy returns unmatched, the messages of tr the other transcript lacks,
// less one call notification per step of tr.
func lossy(tr *transcript, unmatched []message) []message {
	for _, step := range tr.steps {
		for _, m := range tr.received[step] {
			if !callNotification(m) {
				continue
			}
			if i := slices.IndexFunc(unmatched, func(u message) bool { return u == m }); i >= 0 {
				unmatched = slices.Delete(unmatched, i, i+1)
				break
			}
		}
	}
	return unmatched
}

// compareExchanges compares the HTTP exchanges filed under step, sorted
// by their description (which of two concurrent exchanges begins first is
// the scheduler's choice), each settled.
// With lossy (compareTranscripts' notificationsRace), the call
// notifications are left out of the descriptions: which stream carries
// them is mcp-go's scheduling (the first progress of a call may go on the
// GET stream), and their loss is compared over the session.
func compareExchanges(t *testing.T, step string, direct, via *transcript, lossy bool) {
	t.Helper()
	sorted := func(tr *transcript) []string {
		var out []string
		for _, e := range tr.exchanges[step] {
			e = settled(e)
			if lossy {
				e = strings.ReplaceAll(strings.ReplaceAll(e, " notifications/progress", ""), " notifications/message", "")
			}
			out = append(out, e)
		}
		slices.Sort(out)
		return out
	}
	if d, v := sorted(direct), sorted(via); !slices.Equal(d, v) {
		t.Errorf("step %q: HTTP exchanges\n\t%s\nthrough the gateway, want\n\t%s", step, strings.Join(v, "\n\t"), strings.Join(d, "\n\t"))
	}
}

// settled is the description of an exchange with one outcome that is the
// client's scheduling made the same as the other: mcp-go's client posts
// its answer to a server's request under the context of its own call,
// which ends once that call is answered, and the server may answer the
// call (having read the answer) before the POST's 202 reaches the client.
// A POST of an answer cancelled so is taken for its 202; any other status
// or error still differs.
func settled(desc string) string {
	if desc == "POST answer -> "+context.Canceled.Error() {
		return "POST answer -> 202 :"
	}
	return desc
}

func idOf(m message) string {
	var msg struct {
		ID jsontext.Value `json:"id"`
	}
	if json.Unmarshal([]byte(m.text), &msg) != nil {
		return ""
	}
	return string(msg.ID)
}

func isNotification(m message) bool {
	var msg struct {
		ID     jsontext.Value `json:"id"`
		Method string         `json:"method"`
	}
	return json.Unmarshal([]byte(m.text), &msg) == nil && msg.Method != "" && msg.ID == nil
}

func filter(msgs []message, keep func(message) bool) []message {
	var out []message
	for _, m := range msgs {
		if keep(m) {
			out = append(out, m)
		}
	}
	return out
}

// show lists messages, long ones cut short.
func show(msgs []message) string {
	var b strings.Builder
	for _, m := range msgs {
		s := m.text
		if len(s) > 400 {
			s = fmt.Sprintf("%s…(%d bytes)…%s", s[:200], len(s), s[len(s)-150:])
		}
		fmt.Fprintf(&b, "\t%s %s\n", m.frame, s)
	}
	return b.String()
}

// compareStep compares what the client received in step directly and
// through where: answers and the server's requests in order (the answer
// to the cancelled call left out: it comes when the server is done with
// it), notifications in any order unless notificationsRace (then they
// are compared over the session only); key orders them, same compares.
func compareStep(t *testing.T, step, where string, direct, via *transcript, notificationsRace bool, key func(message) string, same func(d, v message) bool) {
	t.Helper()
	d, v := filter(direct.received[step], direct.answer), filter(via.received[step], via.answer)
	if !slices.EqualFunc(d, v, same) {
		t.Errorf("step %q: the client received answers and requests\n%sthrough %s, want\n%s", step, show(v), where, show(d))
	}
	if notificationsRace {
		return
	}
	byKey := func(a, b message) int { return strings.Compare(key(a), key(b)) }
	d = slices.SortedFunc(slices.Values(filter(direct.received[step], isNotification)), byKey)
	v = slices.SortedFunc(slices.Values(filter(via.received[step], isNotification)), byKey)
	if !slices.EqualFunc(d, v, same) {
		t.Errorf("step %q: the client received notifications\n%sthrough %s, want\n%s", step, show(v), where, show(d))
	}
}
