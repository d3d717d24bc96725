package gateway

import (
	"context"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/mark3labs/mcp-go/mcp"
	mcpgoserver "github.com/mark3labs/mcp-go/server"

	"github.com/sluicehq/sluice/examples/demo-server/demo"
	"github.com/sluicehq/sluice/intercept"
)

// TestAggregateFailedUpstreamKeepsItsNames (found by an attacker review):
// on_collision gives a name to the first upstream that lists it, so while
// an earlier upstream is down (or slow past the list timeout) and drops
// out of a list, a later upstream's tool of the same name took the bare
// name: "echo", which led to github, led to gitlab, and the arguments the
// agent meant for github went to another server. A 2026-07-28 call lists
// anew each time, so it was misrouted silently. A failed upstream keeps
// the names it had: its tools are not callable while it is down, and no
// other upstream's tool takes their names.
func TestAggregateFailedUpstreamKeepsItsNames(t *testing.T) {
	var down atomic.Bool
	gh := demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{})
	github := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		gh.ServeHTTP(w, r)
	}))
	defer github.Close()
	gitlab := httptest.NewServer(demo.NewHTTPHandler(demo.NewServer(demo.Options{}), demo.HTTPOptions{}))
	defer gitlab.Close()
	for _, naming := range []NamingMode{NamingOnCollision, NamingNever} {
		t.Run(string(naming), func(t *testing.T) {
			down.Store(false)
			// github's add is hidden: gitlab's is the only add there is.
			dec := &calls{next: &intercept.StaticDecider{Default: intercept.Allow, Deny: []string{"github/add"}, Mode: intercept.ModeToolResult}}
			g, err := New(Options{
				Upstreams:      []Upstream{{Name: "github", URL: github.URL + "/mcp"}, {Name: "gitlab", URL: gitlab.URL + "/mcp"}},
				VirtualServers: []VirtualServer{{Naming: naming}},
			}, &intercept.Interceptor{Decider: hiding{dec}, HideDeniedTools: true}, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			srv := httptest.NewServer(g.Handler())
			defer srv.Close()
			echo := func(id int) string {
				_, _, body := post(t, srv.URL+"/mcp", modernHeaders("tools/call", "echo"), modernCall(id, "echo", `{"message":"for github"}`))
				return body
			}
			// A 2025-era session lists while both answer.
			const init = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"a"}}}`
			_, h, _ := post(t, srv.URL+"/mcp", nil, init)
			sess := map[string]string{"Mcp-Session-Id": h.Get("Mcp-Session-Id"), "Mcp-Protocol-Version": "2025-11-25"}
			if _, _, body := post(t, srv.URL+"/mcp", sess, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); !strings.Contains(body, `"name":"echo"`) {
				t.Fatalf("tools/list: %.300s", body)
			}
			if body := echo(3); !strings.Contains(body, "for github") || dec.last() != "github/echo" {
				t.Fatalf("echo while github answers: %.300s (policy saw %q)", body, dec.last())
			}
			down.Store(true)
			n := len(dec.seen)
			toGitlab := func() bool { return slices.Contains(dec.seen[n:], "gitlab/echo") }
			if body := echo(4); strings.Contains(body, "for github") || toGitlab() {
				t.Errorf("2026 echo while github is down: %.300s; policy saw %q; want an error, nothing sent to gitlab", body, dec.seen[n:])
			}
			_, _, body := post(t, srv.URL+"/mcp", sess, `{"jsonrpc":"2.0","id":5,"method":"tools/list"}`)
			if strings.Contains(body, `"name":"echo"`) || strings.Contains(body, "null") {
				t.Errorf("tools/list while github is down lists echo, or what it holds: %.400s", body)
			}
			_, _, body = post(t, srv.URL+"/mcp", sess, `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"echo","arguments":{"message":"for github"}}}`)
			if strings.Contains(body, "for github") || toGitlab() {
				t.Errorf("2025 echo while github is down: %.300s; policy saw %q; want an error, nothing sent to gitlab", body, dec.seen[n:])
			}
			// What github never listed is not held: gitlab's add keeps its name.
			_, _, body = post(t, srv.URL+"/mcp", sess, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2}}}`)
			if !strings.Contains(body, "3") || dec.last() != "gitlab/add" {
				t.Errorf("add while github is down: %.300s (policy saw %q), want gitlab's", body, dec.last())
			}
			if naming == NamingOnCollision {
				// gitlab's own tools keep their names meanwhile.
				_, _, body = post(t, srv.URL+"/mcp", sess, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"gitlab_echo","arguments":{"message":"for gitlab"}}}`)
				if !strings.Contains(body, "for gitlab") || dec.last() != "gitlab/echo" {
					t.Errorf("gitlab_echo while github is down: %.300s (policy saw %q)", body, dec.last())
				}
			}
			down.Store(false)
			if body := echo(8); !strings.Contains(body, "for github") || dec.last() != "github/echo" {
				t.Errorf("echo once github answers again: %.300s (policy saw %q)", body, dec.last())
			}
		})
	}
}

// hiding hides github's add from tools/list.
type hiding struct{ *calls }

func (h hiding) Visible(_ context.Context, d *intercept.ActionDescriptor) bool {
	return d.Upstream+"/"+d.ToolName != "github/add"
}

// TestAssignNamesHeld: the names of an upstream that did not answer stay
// its own (known: its last list; unknown: every bare name), whatever the
// naming mode, and are never listed.
func TestAssignNamesHeld(t *testing.T) {
	raw := jsontext.Value(`{}`)
	later := []offered{{"gitlab", "echo", raw}, {"gitlab", "mrs", raw}}
	for _, tc := range []struct {
		mode   NamingMode
		held   offered
		listed []string
		to     map[string]target
	}{
		{NamingOnCollision, offered{upstream: "github", name: "echo"}, []string{"gitlab_echo", "mrs"},
			map[string]target{"echo": {"github", "echo"}, "gitlab_echo": {"gitlab", "echo"}, "mrs": {"gitlab", "mrs"}}},
		{NamingNever, offered{upstream: "github", name: "echo"}, []string{"mrs"},
			map[string]target{"echo": {"github", "echo"}, "mrs": {"gitlab", "mrs"}}},
		{NamingOnCollision, offered{upstream: "github"}, []string{"gitlab_echo", "gitlab_mrs"},
			map[string]target{"gitlab_echo": {"gitlab", "echo"}, "gitlab_mrs": {"gitlab", "mrs"}}},
		{NamingNever, offered{upstream: "github"}, nil, map[string]target{}},
		{NamingPrefix, offered{upstream: "github"}, []string{"gitlab_echo", "gitlab_mrs"},
			map[string]target{"gitlab_echo": {"gitlab", "echo"}, "gitlab_mrs": {"gitlab", "mrs"}}},
	} {
		v := VirtualServer{Naming: tc.mode}
		names, to, _ := v.assignNames(append([]offered{tc.held}, later...))
		var listed []string
		for _, n := range names {
			if to[n] != (target{tc.held.upstream, tc.held.name}) {
				listed = append(listed, n)
			}
		}
		if !slices.Equal(listed, tc.listed) || !maps.Equal(to, tc.to) {
			t.Errorf("%s, held %q: listed %v, routes %v; want %v, %v", tc.mode, tc.held.name, listed, to, tc.listed, tc.to)
		}
	}
}

// TestAggregateFailedUpstreamKeepsItsURIs: the first upstream to list a
// URI serves it; while it is down, a later upstream listing the same URI
// does not serve its reads instead.
func TestAggregateFailedUpstreamKeepsItsURIs(t *testing.T) {
	readme := func(name string) http.Handler {
		s := mcpgoserver.NewMCPServer(name, "1", mcpgoserver.WithResourceCapabilities(false, false))
		s.AddResource(mcp.NewResource("docs://readme", "readme"), func(_ context.Context, r mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: r.Params.URI, MIMEType: "text/plain", Text: name + " readme"}}, nil
		})
		return mcpgoserver.NewStreamableHTTPServer(s)
	}
	var down atomic.Bool
	gh := readme("github")
	github := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		gh.ServeHTTP(w, r)
	}))
	defer github.Close()
	gitlab := httptest.NewServer(readme("gitlab"))
	defer gitlab.Close()
	g, err := New(Options{
		Upstreams:      []Upstream{{Name: "github", URL: github.URL + "/mcp"}, {Name: "gitlab", URL: gitlab.URL + "/mcp"}},
		VirtualServers: []VirtualServer{{}},
	}, &intercept.Interceptor{Decider: &intercept.StaticDecider{Default: intercept.Allow}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	srv := httptest.NewServer(g.Handler())
	defer srv.Close()
	_, h, _ := post(t, srv.URL+"/mcp", nil, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"alice"}}}`)
	sess := map[string]string{"Mcp-Session-Id": h.Get("Mcp-Session-Id"), "Mcp-Protocol-Version": "2025-11-25"}
	const read = `{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"docs://readme"}}`
	post(t, srv.URL+"/mcp", sess, `{"jsonrpc":"2.0","id":2,"method":"resources/list"}`)
	if _, _, body := post(t, srv.URL+"/mcp", sess, read); !strings.Contains(body, "github readme") {
		t.Fatalf("read while github answers: %.300s", body)
	}
	down.Store(true)
	post(t, srv.URL+"/mcp", sess, `{"jsonrpc":"2.0","id":4,"method":"resources/list"}`)
	if _, _, body := post(t, srv.URL+"/mcp", sess, read); strings.Contains(body, "gitlab readme") {
		t.Errorf("read of github's docs://readme while github is down: %.300s; want an error, not gitlab's", body)
	}
}

// TestAssignNamesNoSquatting: in on_collision, an upstream listed first
// that lists "github_create_issue" and "create_issue" took both names
// github's create_issue could have had: github's was left out, and an
// agent calling "github_create_issue" (meaning github, with what it
// sends github) reached the first upstream. Now a bare name starting
// with another upstream's prefix is not kept: it is prefixed with its
// own upstream's name, and github_create_issue is github's.
func TestAssignNamesNoSquatting(t *testing.T) {
	raw := jsontext.Value(`{}`)
	v := VirtualServer{Naming: NamingOnCollision}
	names, to, dropped := v.assignNames([]offered{
		{"notes", "create_issue", raw}, {"notes", "github_create_issue", raw}, {"notes", "notes_sync", raw},
		{"github", "create_issue", raw},
	})
	want := map[string]target{
		"create_issue":              {"notes", "create_issue"},
		"notes_github_create_issue": {"notes", "github_create_issue"},
		"notes_sync":                {"notes", "notes_sync"}, // its own prefix: kept
		"github_create_issue":       {"github", "create_issue"},
	}
	if !maps.Equal(to, want) || len(names) != len(want) || len(dropped) != 0 {
		t.Errorf("names %v, routes %v, dropped %v; want routes %v", names, to, dropped, want)
	}
}
