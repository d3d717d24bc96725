package intercept

import (
	"context"
	"slices"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

func TestListCursor(t *testing.T) {
	for _, tc := range []struct {
		params string
		want   string
	}{
		{``, ""},
		{`{}`, ""},
		{`{"_meta":{"progressToken":1}}`, ""},
		{`{"cursor":"p2"}`, "p2"},
		{`{"cursor":"p\u0032"}`, "p2"},
		{`{"cursor":""}`, oddCursor},
		{`{"cursor":null}`, oddCursor},
		{`{"cursor":2}`, oddCursor},
		{`{"Cursor":"p2"}`, oddCursor},
		{`{"CURSOR":"p2"}`, oddCursor},
	} {
		msg := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
		if tc.params != "" {
			msg = `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":` + tc.params + `}`
		}
		if got := ListCursor(mustDecode(t, msg)); got != tc.want {
			t.Errorf("ListCursor(%s) = %q, want %q", tc.params, got, tc.want)
		}
	}
}

// TestListedOnlyFromTheFirstPage: a client counts as having listed an
// upstream's tools (unlisted.go) once it has the last page of a listing
// it followed from the first, by the cursors it was given in it; a last
// page asked for alone, with a cursor given in another session or of
// its own making, is no listing, and its first call is listed for.
func TestListedOnlyFromTheFirstPage(t *testing.T) {
	ctx := context.Background()
	page1 := jsontext.Value(`{"tools":[{"name":"fetch"}],"nextCursor":"p2"}`)
	page2 := jsontext.Value(`{"tools":[{"name":"echo"}]}`)
	call := mustDecode(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fetch","arguments":{}}}`)
	for _, tc := range []struct {
		name   string
		listed func(i *Interceptor, cc, other CallContext)
		want   int64 // listings the gateway makes for the call
	}{
		{"every page", func(i *Interceptor, cc, _ CallContext) {
			i.ObserveListedPage(ctx, cc, "tools/list", "", page1)
			i.ObserveListedPage(ctx, cc, "tools/list", "p2", page2)
		}, 0},
		{"one page", func(i *Interceptor, cc, _ CallContext) {
			i.ObserveListedPage(ctx, cc, "tools/list", "", page2)
		}, 0},
		{"the last page alone", func(i *Interceptor, cc, _ CallContext) {
			i.ObserveListedPage(ctx, cc, "tools/list", "p2", page2)
		}, 1},
		{"the cursor of another session", func(i *Interceptor, cc, other CallContext) {
			i.ObserveListedPage(ctx, other, "tools/list", "", page1)
			i.ObserveListedPage(ctx, cc, "tools/list", "p2", page2)
		}, 1},
		{"only the first page", func(i *Interceptor, cc, _ CallContext) {
			i.ObserveListedPage(ctx, cc, "tools/list", "", page1)
		}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &countingLister{}
			i := &Interceptor{Decider: &StaticDecider{Default: Allow}, Observer: hashingObserver{}}
			cc := CallContext{Upstream: "web", Agent: "a", SessionID: "s1", Lister: l}
			other := CallContext{Upstream: "web", Agent: "a", SessionID: "s2", Lister: l}
			tc.listed(i, cc, other)
			if _, ok := i.Check(ctx, call, cc); !ok {
				t.Fatal("call refused")
			}
			if got := l.n.Load(); got != tc.want {
				t.Errorf("got %d listings by the gateway, want %d", got, tc.want)
			}
		})
	}
}

// TestCatalogPageAlone: a page asked for alone leaves the catalog's list
// as it was (the tools of the pages before still described), and one
// asked for with the cursor the list's last page gave continues it.
func TestCatalogPageAlone(t *testing.T) {
	i := &Interceptor{}
	i.ObserveToolsPage("web", jsontext.Value(`{"tools":[{"name":"fetch","description":"Fetch."}],"nextCursor":"p2"}`), "")
	i.ObserveToolsPage("web", jsontext.Value(`{"tools":[{"name":"echo","description":"Echo."}]}`), "p2")
	hash := catalogHash(i, "web")
	i.ObserveToolsPage("web", jsontext.Value(`{"tools":[{"name":"echo","description":"Echo."}]}`), "p2")
	if got := catalogHash(i, "web"); got != hash {
		t.Errorf("a page alone changed the catalog's hash from %s to %s", hash, got)
	}
	for _, tool := range []string{"fetch", "echo"} {
		if got := catalogDescription(i, "web", tool); got == "" {
			t.Errorf("%s: no description after a page alone, want the list's", tool)
		}
	}
}

func catalogHash(i *Interceptor, upstream string) string {
	v, _ := i.catalog.Load(upstream)
	return v.(*toolSet).hash
}

func catalogDescription(i *Interceptor, upstream, tool string) string {
	v, _ := i.catalog.Load(upstream)
	return v.(*toolSet).tools[tool].Description
}

// capsObserver records what each of its methods is told.
type capsObserver struct{ got []string }

func (o *capsObserver) ObserveTools(up string, _ jsontext.Value) { o.got = append(o.got, "tools "+up) }
func (o *capsObserver) ObserveToolsPage(up string, _ jsontext.Value, cursor string) {
	o.got = append(o.got, "page "+up+" "+cursor)
}
func (o *capsObserver) ObserveToolsPageWith(up string, _ jsontext.Value, cursor string, caps jsontext.Value) {
	o.got = append(o.got, "with "+up+" "+cursor+" "+string(caps))
}

// pageObserver is an Observer told pages but not capabilities.
type pageObserver struct{ got []string }

func (o *pageObserver) ObserveTools(up string, _ jsontext.Value) { o.got = append(o.got, "tools "+up) }
func (o *pageObserver) ObserveToolsPage(up string, _ jsontext.Value, cursor string) {
	o.got = append(o.got, "page "+up+" "+cursor)
}

// TestObserveToolsPageWith: an Observer that is a ToolsCapsObserver is
// told the client's capabilities, one that is not is told the page as
// before, and the catalog has the list either way.
func TestObserveToolsPageWith(t *testing.T) {
	list := jsontext.Value(`{"tools":[{"name":"ask","description":"Ask the user."}]}`)
	co := &capsObserver{}
	i := &Interceptor{Observer: co}
	i.ObserveToolsPageWith("ev", list, "", jsontext.Value(`{"elicitation":{}}`))
	if want := []string{`with ev  {"elicitation":{}}`}; !slices.Equal(co.got, want) {
		t.Errorf("ToolsCapsObserver told %q, want %q", co.got, want)
	}
	if got := catalogDescription(i, "ev", "ask"); got != "Ask the user." {
		t.Errorf("catalog description %q, want the list's", got)
	}
	po := &pageObserver{}
	i = &Interceptor{Observer: po}
	i.ObserveToolsPageWith("ev", list, "", jsontext.Value(`{"elicitation":{}}`))
	if want := []string{"page ev "}; !slices.Equal(po.got, want) {
		t.Errorf("ToolsPageObserver told %q, want %q", po.got, want)
	}
	if got := catalogDescription(i, "ev", "ask"); got != "Ask the user." {
		t.Errorf("catalog description %q, want the list's", got)
	}
}
