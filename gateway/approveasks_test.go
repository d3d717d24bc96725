package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sluicehq/sluice/approval"
	"github.com/sluicehq/sluice/intercept"
)

// confirmingUpstream is a go-sdk server whose deploy tool asks its client
// to confirm through its own input_required result (2026-07-28) before
// it deploys, and records what it deployed and the retries it got. With
// withState false it asks without a requestState (the specification
// lets a server that needs none send none).
func confirmingUpstream(t *testing.T, withState bool) (url string, deployed func() []string, retries func() []string) {
	t.Helper()
	var mu sync.Mutex
	var done, again []string
	s := mcp.NewServer(&mcp.Implementation{Name: "deployer", Version: "1"}, nil)
	type in struct {
		Env string `json:"env"`
	}
	state := ""
	if withState {
		state = "deploy-step-1"
	}
	mcp.AddTool(s, &mcp.Tool{Name: "deploy"}, func(_ context.Context, req *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		r, ok := req.Params.InputResponses["confirm"].(*mcp.ElicitResult)
		if !ok {
			return &mcp.CallToolResult{
				InputRequests: mcp.InputRequestMap{"confirm": &mcp.ElicitParams{
					Message: "Deploy to " + a.Env + "? Which ticket?",
					RequestedSchema: &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{
						"ticket": {Type: "string"},
					}},
				}},
				RequestState: state,
			}, nil, nil
		}
		if req.Params.RequestState != state || r.Action != "accept" {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "not confirmed"}}}, nil, nil
		}
		mu.Lock()
		done = append(done, a.Env+" "+r.Content["ticket"].(string))
		mu.Unlock()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "deployed " + a.Env}}}, nil, nil
	})
	// Stateless: go-sdk's server speaks 2026-07-28 only so.
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if bytes.Contains(b, []byte(`"inputResponses"`)) {
			mu.Lock()
			again = append(again, string(b))
			mu.Unlock()
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(up.Close)
	get := func(p *[]string) func() []string {
		return func() []string {
			mu.Lock()
			defer mu.Unlock()
			return append([]string(nil), *p...)
		}
	}
	return up.URL, get(&done), get(&again)
}

// askingFixture is a gateway holding deploy for approval, which the
// client may answer, in front of confirmingUpstream, and a go-sdk client
// (2026-07-28) whose user approves and answers the upstream's question
// (ticket OPS-1); asked lists what the user was asked.
type askingFixture struct {
	gw       *httptest.Server
	store    *approval.Store
	cs       *mcp.ClientSession
	deployed func() []string
	retries  func() []string
	asked    *[]string
	path     string // the gateway's endpoint: a route, or a virtual server
	tool     string // deploy as the endpoint names it
}

func newAskingFixture(t *testing.T, ctx context.Context, withState, virtual bool) *askingFixture {
	t.Helper()
	url, deployed, retries := confirmingUpstream(t, withState)
	store := approval.NewStore(approval.Options{})
	dec := &approval.Gate{Next: &intercept.StaticDecider{Default: intercept.Allow, Approval: []string{"deploy"}, Mode: intercept.ModeToolResult}, Store: store}
	opts, path, tool := Options{Approver: store, Upstreams: []Upstream{{Name: "deployer", URL: url}}}, "/mcp/deployer", "deploy"
	if virtual {
		opts.VirtualServers, path, tool = []VirtualServer{{Naming: NamingPrefix}}, "/mcp", "deployer_deploy"
	}
	g, err := New(opts, &intercept.Interceptor{Decider: dec}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })
	asked := new([]string)
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			*asked = append(*asked, r.Params.Message)
			if strings.HasPrefix(r.Params.Message, "Deploy to") {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"ticket": "OPS-1"}}, nil
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
		},
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: gw.URL + path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %s, want 2026-07-28", v)
	}
	return &askingFixture{gw: gw, store: store, cs: cs, deployed: deployed, retries: retries, asked: asked, path: path, tool: tool}
}

// deploy calls deploy(prod) and checks it deployed, once.
func (f *askingFixture) deploy(t *testing.T, ctx context.Context) {
	t.Helper()
	res, err := f.cs.CallTool(ctx, &mcp.CallToolParams{Name: f.tool, Arguments: map[string]any{"env": "prod"}})
	if err != nil {
		t.Fatalf("call: %v (the user was asked %d times: %q)", err, len(*f.asked), *f.asked)
	}
	if res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "deployed prod" {
		t.Fatalf("call: got %+v, want deployed prod", res.Content)
	}
	if got := f.deployed(); len(got) != 1 || got[0] != "prod OPS-1" {
		t.Errorf("deployed: got %q, want one deploy with the user's ticket", got)
	}
}

// TestApprovedCallUpstreamAsks: a 2026-07-28 call held for the user's
// approval, approved by the user, whose upstream then asks its own
// question through input_required (go-sdk's MRTR on both ends): the
// retry answering the upstream goes on under the approval — the user is
// not asked to approve it again, the upstream gets its own requestState
// and answer — and the call runs once. Before, the retry was held anew,
// the user asked again, and the answer to that (which carries the
// gateway's state, not the upstream's) was refused: the call never ran.
func TestApprovedCallUpstreamAsks(t *testing.T) {
	for _, virtual := range []bool{false, true} {
		t.Run(map[bool]string{false: "route", true: "virtual server"}[virtual], func(t *testing.T) {
			testApprovedCallUpstreamAsks(t, virtual)
		})
	}
}

func testApprovedCallUpstreamAsks(t *testing.T, virtual bool) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	f := newAskingFixture(t, ctx, true, virtual)
	f.deploy(t, ctx)
	if len(*f.asked) != 2 || !strings.Contains((*f.asked)[1], "ticket") {
		t.Errorf("the user was asked %q, want the gateway's approval once, then the upstream's question", *f.asked)
	}
	rs := f.store.List()
	if len(rs) != 1 || rs[0].Status != approval.Used || len(rs[0].Asked) != 0 {
		t.Fatalf("approval requests: got %+v, want one, used, with no state left to go on with", rs)
	}
	retry := f.retries()
	if len(retry) != 1 {
		t.Fatalf("the upstream got %d retries, want 1", len(retry))
	}

	// The retry sent again, as it was: the state went on once, so it is
	// held as a new call, and nothing more is deployed.
	replay := strings.Replace(retry[0], `"name":"deploy"`, `"name":"`+f.tool+`"`, 1)
	status, _, body := post(t, f.gw.URL+f.path, modernHeaders("tools/call", f.tool), replay)
	if status != http.StatusOK || !strings.Contains(body, `"input_required"`) || !strings.Contains(body, "sluice-approval") {
		t.Errorf("the retry replayed: got %d %s, want it held for approval", status, body)
	}
	if got := f.deployed(); len(got) != 1 {
		t.Errorf("deployed: got %q after the replay, want the one approved deploy", got)
	}
}

// TestApprovedCallUpstreamAsksNoState: an upstream that asks without a
// requestState (the specification lets it): nothing says the retry
// answers the approved call, so the user is asked to approve the call
// again — now with the upstream's answers in it — and the gateway's
// question keeps those answers (sealed in its own requestState) for the
// retry that approves: the call runs once, with the user's ticket.
// Before, the approving retry lost them and was held again without end.
func TestApprovedCallUpstreamAsksNoState(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	f := newAskingFixture(t, ctx, false, false)
	f.deploy(t, ctx)
	if len(*f.asked) != 3 || !strings.Contains((*f.asked)[1], "ticket") || !strings.Contains((*f.asked)[2], `Answers to the upstream's questions: {"confirm":`) {
		t.Errorf("the user was asked %q, want the gateway's approval, the upstream's question, the approval of the call with the answer", *f.asked)
	}
	rs := f.store.List()
	if len(rs) != 2 || rs[0].Status != approval.Used || rs[1].Status != approval.Used {
		t.Errorf("approval requests: got %+v, want two, used", rs)
	}
}

// TestApprovedCallCompleteWithState: an upstream whose complete result
// carries a requestState (echoed, say) asked nothing: a retry carrying
// that state is the approved call again, and is held, not run again.
func TestApprovedCallCompleteWithState(t *testing.T) {
	var runs atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &m)
		runs.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"resultType":"complete","content":[{"type":"text","text":"deployed"}],"requestState":"done-1"}}`)
	}))
	t.Cleanup(up.Close)
	store := approval.NewStore(approval.Options{})
	dec := &approval.Gate{Next: &intercept.StaticDecider{Default: intercept.Allow, Approval: []string{"deploy"}, Mode: intercept.ModeToolResult}, Store: store}
	g, err := New(Options{Upstreams: []Upstream{{Name: "deployer", URL: up.URL}}}, &intercept.Interceptor{Decider: dec}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(g.Handler())
	t.Cleanup(func() { closeServed(t, gw, g) })
	url, hdr := gw.URL+"/mcp/deployer", modernHeaders("tools/call", "deploy")
	call := modernCallWith(1, `{"env":"prod"}`, `{}`, "agent-a", "")
	call = strings.Replace(call, `"name":"add"`, `"name":"deploy"`, 1)
	if _, _, body := post(t, url, hdr, call); !strings.Contains(body, "approval_required") {
		t.Fatalf("first call: %s, want it held", body)
	}
	if _, err := store.Decide(onlyRequest(t, store).ID, true, "alice"); err != nil {
		t.Fatal(err)
	}
	if _, _, body := post(t, url, hdr, call); !strings.Contains(body, `"deployed"`) || runs.Load() != 1 {
		t.Fatalf("the approved call: %s (%d runs), want it run once", body, runs.Load())
	}
	again := strings.Replace(modernCallWith(2, `{"env":"prod"}`, `{}`, "agent-a", `,"inputResponses":{},"requestState":"done-1"`), `"name":"add"`, `"name":"deploy"`, 1)
	if _, _, body := post(t, url, hdr, again); !strings.Contains(body, "approval_required") || runs.Load() != 1 {
		t.Errorf("the call again with the complete result's state: %s (%d runs), want it held and not run again", body, runs.Load())
	}
}
