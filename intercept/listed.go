package intercept

import (
	"context"
	"encoding/binary"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/internal/ownership"
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
// in the process, of which one principal (else agent; the clients that
// name none together) holds at most maxListedPerOwner, its own oldest
// forgotten past that: one listing
// without end (many sessions, an upstream listing a URI per note it
// made) pushes out only its own. A read of an item forgotten, or listed through another
// replica, is decided as carrying: denied while a route rule closes the
// upstream, which costs a client only a listing.

// maxListed is how many listed items an Interceptor remembers, and
// maxListedPerOwner how many of them one principal (else agent) holds.
const (
	maxListed         = 100_000
	maxListedPerOwner = maxListed / 10
)

// listedKey names one item an upstream listed to a client. Strings only,
// so a lookup allocates nothing.
type listedKey struct {
	upstream string
	owner    string // the principal's ID, else the agent
	agent    bool   // owner is an agent name, not a principal's ID
	kind     byte   // 'r' a resource URI, 'p' a prompt name; 's', 't' tools listed in a session, by an owner (unlisted.go)
	name     string // for 's' and 't': "", or "c" and a cursor given on the way (ObserveListedPage)
}

func (i *Interceptor) listedTable() *ownership.Table {
	i.listedOnce.Do(func() { i.listed = ownership.NewShared(maxListed, maxListedPerOwner) })
	return i.listed
}

// listedHas reports whether k is recorded, without allocating.
func (i *Interceptor) listedHas(k listedKey) bool {
	t := i.listedTable()
	return t.ContainsHash(k.hash(t))
}

// listedAdd records k for the client of cc, in its share of the table.
func (i *Interceptor) listedAdd(ctx context.Context, cc CallContext, k listedKey) {
	t := i.listedTable()
	owner, agent := ownerOf(ctx, cc)
	switch {
	case !agent:
		owner = "p\x00" + owner
	case owner != "":
		owner = "a\x00" + owner
	default:
		// Clients that name no agent share one share: the table's
		// unnamed owner has none, and one of them opening sessions
		// without end would push every principal's items out.
		owner = "u\x00"
	}
	t.ContainsOrAddHash(k.hash(t), owner)
}

// hash is k's hash in t, its parts length-prefixed.
func (k listedKey) hash(t *ownership.Table) uint64 {
	h := t.Hasher()
	var n [8]byte
	for _, s := range [...]string{k.upstream, k.owner} {
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.WriteString(s)
	}
	flag := byte(0)
	if k.agent {
		flag = 1
	}
	h.WriteByte(flag)
	h.WriteByte(k.kind)
	h.WriteString(k.name)
	return h.Sum64()
}

// ownerOf is who a listing is given to: the principal, else the agent
// (as taskOwner, without building a string).
func ownerOf(ctx context.Context, cc CallContext) (owner string, agent bool) {
	if p := principalOf(ctx, cc); p != nil {
		return p.ID, false
	}
	return cc.Agent, true
}

// ObserveListed is ObserveListedPage for an answer to a request without
// a cursor (a first page).
func (i *Interceptor) ObserveListed(ctx context.Context, cc CallContext, method string, result jsontext.Value) {
	i.ObserveListedPage(ctx, cc, method, "", result)
}

// ObserveListedPage records the items of result, the upstream's answer to
// a resources/list (their URIs) or prompts/list (their names) request of
// the client of cc, as listed to that client, so that a read of one of
// them is plain (see above); and for a tools/list asked for with cursor
// (ListCursor; "" for the first page), that the client listed the
// upstream's tools (unlisted.go) when result is the last page of a
// listing it followed from the first. Other methods are ignored.
func (i *Interceptor) ObserveListedPage(ctx context.Context, cc CallContext, method, cursor string, result jsontext.Value) {
	var kind byte
	switch method {
	case "tools/list":
		// The client has its own listing (unlisted.go) once it has seen
		// every page, the first to the last: a tool on a page it did not
		// fetch is one the inventory has not seen as the upstream serves
		// it now. A last page asked for alone, with a cursor this client
		// was not given in a listing it began (given in another session,
		// or of its own making), is no listing. The cursors given on the
		// way are kept as the listing is, under its key.
		if result.Kind() != '{' {
			return
		}
		key := toolsListedKey(ctx, cc)
		if cursor != "" {
			chain := key
			chain.name = "c" + cursor
			if !i.listedHas(chain) {
				return
			}
		}
		if next := StringMember(result, "nextCursor"); next != "" {
			key.name = "c" + next
		}
		i.listedAdd(ctx, cc, key)
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
	add := func(name string) {
		if name != "" {
			i.listedAdd(ctx, cc, listedKey{upstream: cc.Upstream, owner: owner, agent: agent, kind: kind, name: name})
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
	return i.listedHas(listedKey{upstream: cc.Upstream, owner: owner, agent: agent, kind: kind, name: m.Name})
}
