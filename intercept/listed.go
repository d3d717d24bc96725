package intercept

import (
	"context"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	lru "github.com/hashicorp/golang-lru/v2"
)

// Reads that carry: a resources/read or prompts/get goes to the upstream
// with a URI, a prompt name and arguments the client chose, and reaches it
// as surely as a carry (carry.go). A read that names what the upstream
// itself listed to this client (a resources/list URI, a prompts/list name)
// with nothing else of the client's — no arguments, no member or _meta
// beyond what the protocol puts in every request — tells the upstream only
// which of its own items the client wants, as a cursor it was given does:
// it is plain. Any other read (a URI of the client's making, a template
// filled in, a prompt's arguments) carries data, and its descriptor says so
// ([ActionDescriptor.ReadCarries]) with the upstream's tools, so that the
// policy denies it when a route rule closes the upstream, as it denies a
// carry; otherwise it is decided as a read like any other (default_read).
//
// What was listed is kept like issued cursors: per upstream and whoever
// was given it (the principal, else the agent), the last maxListed items,
// in the process. A read of an item forgotten, or listed through another
// replica, is decided as carrying: denied while a route rule closes the
// upstream, which costs a client only a listing.

// maxListed is how many listed items an Interceptor remembers.
const maxListed = 100_000

// listedKey names one item an upstream listed to a client. Strings only,
// so a lookup allocates nothing.
type listedKey struct {
	upstream string
	owner    string // the principal's ID, else the agent
	agent    bool   // owner is an agent name, not a principal's ID
	kind     byte   // 'r' a resource URI, 'p' a prompt name; 's', 't' tools listed in a session, by an owner (unlisted.go)
	name     string
}

func (i *Interceptor) listedTable() *lru.Cache[listedKey, struct{}] {
	i.listedOnce.Do(func() { i.listed, _ = lru.New[listedKey, struct{}](maxListed) })
	return i.listed
}

// ownerOf is who a listing is given to: the principal, else the agent
// (as taskOwner, without building a string).
func ownerOf(ctx context.Context, cc CallContext) (owner string, agent bool) {
	if p := principalOf(ctx, cc); p != nil {
		return p.ID, false
	}
	return cc.Agent, true
}

// ObserveListed records the items of result, the upstream's answer to a
// resources/list (their URIs) or prompts/list (their names) request of the
// client of cc, as listed to that client, so that a read of one of them is
// plain (see above); and for a tools/list, that the client listed the
// upstream's tools (unlisted.go). Other methods are ignored.
func (i *Interceptor) ObserveListed(ctx context.Context, cc CallContext, method string, result jsontext.Value) {
	var kind byte
	switch method {
	case "tools/list":
		if result.Kind() == '{' {
			// The client has its own listing (unlisted.go).
			i.listedTable().Add(toolsListedKey(ctx, cc), struct{}{})
		}
		return
	case "resources/list":
		kind = 'r'
	case "prompts/list":
		kind = 'p'
	default:
		return
	}
	if result.Kind() != '{' {
		return
	}
	var page struct {
		Resources []struct {
			URI string `json:"uri"`
		} `json:"resources"`
		Prompts []struct {
			Name string `json:"name"`
		} `json:"prompts"`
	}
	if json.Unmarshal(result, &page) != nil {
		return // what cannot be read was not listed
	}
	owner, agent := ownerOf(ctx, cc)
	t := i.listedTable()
	add := func(name string) {
		if name != "" {
			t.Add(listedKey{upstream: cc.Upstream, owner: owner, agent: agent, kind: kind, name: name}, struct{}{})
		}
	}
	for _, r := range page.Resources {
		add(r.URI)
	}
	for _, p := range page.Prompts {
		add(p.Name)
	}
}

// readCarries reports whether m, a resources/read or prompts/get, carries
// bytes of the client's choosing to the upstream (see above). A
// requestState is not the client's: checkRequestState forwards only one
// the upstream issued to this client for this very request.
func (i *Interceptor) readCarries(ctx context.Context, m *Message, cc CallContext) bool {
	switch {
	case m.extra || m.readExtra:
		return true // a member of the client's naming
	case m.Method == "prompts/get" && m.Arguments != nil && !EmptyValue(m.Arguments):
		return true
	case m.Meta != nil && !plainMetaOnly(m.Meta):
		return true
	}
	return !i.wasListed(ctx, cc, m)
}

// wasListed reports whether the upstream of cc listed what m reads to
// m's client.
func (i *Interceptor) wasListed(ctx context.Context, cc CallContext, m *Message) bool {
	kind := byte('r')
	if m.Method == "prompts/get" {
		kind = 'p'
	}
	owner, agent := ownerOf(ctx, cc)
	return i.listedTable().Contains(listedKey{upstream: cc.Upstream, owner: owner, agent: agent, kind: kind, name: m.Name})
}
