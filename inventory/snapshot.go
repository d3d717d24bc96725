package inventory

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// MaxTools bounds the tools of one upstream that a snapshot holds, so that a
// hostile or broken upstream cannot grow the inventory without limit. A list
// (all pages together) with more tools is rejected.
const MaxTools = 10_000

// MaxListBytes bounds the bytes of one upstream's list (all pages
// together) the inventory collects: a list past it is rejected too, so
// pages of huge tools that never end cannot grow it without limit.
const MaxListBytes = 32 << 20

func (t *Tool) size() int {
	return len(t.Name) + len(t.Title) + len(t.Description) + len(t.InputSchema) + len(t.OutputSchema) + len(t.Annotations) +
		len(t.Icons) + len(t.Execution) + len(t.Meta) + len(t.Unknown) + len(t.Hash) + len(t.known)
}

// Tool is one tool of a snapshot: the parts of a tools/list entry that the
// model sees and that decide what a call may do. Schemas and annotations are
// kept in RFC 8785 canonical form; an absent or null member is nil.
type Tool struct {
	Name         string         `json:"name"`
	Title        string         `json:"title,omitempty"`
	Description  string         `json:"description,omitempty"`
	InputSchema  jsontext.Value `json:"inputSchema,omitzero"`
	OutputSchema jsontext.Value `json:"outputSchema,omitzero"`
	Annotations  jsontext.Value `json:"annotations,omitzero"`
	// Icons, Execution (taskSupport) and Meta (_meta: an MCP App's
	// ui.resourceUri, a client's output template) are passed on to the
	// client as well and say what it shows and runs for the tool.
	Icons     jsontext.Value `json:"icons,omitzero"`
	Execution jsontext.Value `json:"execution,omitzero"`
	Meta      jsontext.Value `json:"_meta,omitzero"`
	// Unknown holds, as one object, the members of the tool that MCP does
	// not define (x-notes, examples…): the client is passed them too,
	// and some hand the model the whole tool. {} when there are none;
	// nil in a tool pinned before they were kept, whose hash is over the
	// other members only (see adoptUnknown).
	Unknown jsontext.Value `json:"unknown,omitzero"`
	// Hash is the lowercase hex SHA-256 of the RFC 8785 form of the tool
	// object above (every member except hash itself, and unknown only
	// when it has members: a tool without unknown members has the hash
	// it had before they were kept).
	Hash string `json:"hash"`

	known string // the hash of the tool without its unknown members, once worked out
}

// toolBody is Tool without its hash: what the hash is taken over.
type toolBody struct {
	Name         string         `json:"name"`
	Title        string         `json:"title,omitempty"`
	Description  string         `json:"description,omitempty"`
	InputSchema  jsontext.Value `json:"inputSchema,omitzero"`
	OutputSchema jsontext.Value `json:"outputSchema,omitzero"`
	Annotations  jsontext.Value `json:"annotations,omitzero"`
	Icons        jsontext.Value `json:"icons,omitzero"`
	Execution    jsontext.Value `json:"execution,omitzero"`
	Meta         jsontext.Value `json:"_meta,omitzero"`
	Unknown      jsontext.Value `json:"unknown,omitzero"`
}

func (t *Tool) body() toolBody {
	return toolBody{t.Name, t.Title, t.Description, t.InputSchema, t.OutputSchema, t.Annotations, t.Icons, t.Execution, t.Meta, t.unknown()}
}

// unknown returns t.Unknown, nil when it has no members.
func (t *Tool) unknown() jsontext.Value {
	if string(t.Unknown) == "{}" {
		return nil
	}
	return t.Unknown
}

// knownHash returns the hash of t without its unknown members: the hash
// a pin made before they were kept has for it.
func (t *Tool) knownHash() string {
	if t.unknown() == nil {
		return t.Hash
	}
	if t.known != "" {
		return t.known
	}
	b := t.body()
	b.Unknown = nil
	j, err := json.Marshal(b)
	if err != nil {
		return ""
	}
	c, err := canonical(j)
	if err != nil {
		return ""
	}
	return sum(c)
}

// matches reports whether o, an observed tool, is the version p of the
// pin holds it to. A tool pinned before unknown members were kept
// (Unknown nil) is held to its other members only, until adoptUnknown
// pins them.
func matches(p, o Tool) bool {
	return p.Hash == o.Hash || p.Unknown == nil && p.Hash == o.knownHash()
}

// wire returns the tool as a tools/list result lists it: its members,
// unknown ones included, without its hash.
func (t *Tool) wire() (jsontext.Value, error) {
	b := t.body()
	b.Unknown = nil
	j, err := json.Marshal(b)
	if err != nil {
		return nil, err
	}
	if u := t.unknown(); len(u) > 2 && u.Kind() == '{' {
		j = append(append(j[:len(j)-1], ','), u[1:]...)
	}
	return j, nil
}

// canonicalBody returns the RFC 8785 form of the tool without its hash.
func (t *Tool) canonicalBody() (jsontext.Value, error) {
	b, err := json.Marshal(t.body())
	if err != nil {
		return nil, err
	}
	return canonical(b)
}

// seal canonicalizes the tool's JSON members and sets its hash.
func (t *Tool) seal() error {
	for _, v := range []*jsontext.Value{&t.InputSchema, &t.OutputSchema, &t.Annotations, &t.Icons, &t.Execution, &t.Meta, &t.Unknown} {
		if len(*v) == 0 || v.Kind() == 'n' && v != &t.Unknown {
			*v = nil
			continue
		}
		c, err := canonical(*v)
		if err != nil {
			return fmt.Errorf("tool %q: %w", t.Name, err)
		}
		*v = c
	}
	b, err := t.canonicalBody()
	if err != nil {
		return fmt.Errorf("tool %q: %w", t.Name, err)
	}
	t.Hash = sum(b)
	t.known = ""
	t.known = t.knownHash()
	return nil
}

// Snapshot is the tool inventory of one upstream at one time. A Snapshot is
// immutable once made; it is safe for concurrent use.
type Snapshot struct {
	Upstream string `json:"upstream"`
	// Hash is the tool_inventory_hash: the lowercase hex SHA-256 of the
	// RFC 8785 form of the JSON object that maps each tool's name to its
	// tool object (as for Tool.Hash, without the hash member).
	Hash      string    `json:"hash"`
	CreatedAt time.Time `json:"created_at"`
	// Tools are sorted by name; names are unique.
	Tools []Tool `json:"tools"`
	// ListedWith, in an observed snapshot, is the capability set
	// (CapabilitySet) of the client whose listing it is.
	ListedWith string `json:"listed_with,omitzero"`
	// Sets, in a pinned snapshot, maps each capability set a listing was
	// pinned under to the names of its tools, sorted (see capsets.go).
	// Nil in a pin made before sets were kept: every set is then held to
	// all the pin's tools. The key approvedSet, "(approved)", is no set:
	// it holds the names of the tools an operator approved.
	Sets map[string][]string `json:"capability_sets,omitzero"`
	// Instructions, in a pinned snapshot, are the instructions of the
	// upstream's initialize and server/discover results, by method,
	// pinned on first sight after the tools (see ScreenInstructions).
	// Not part of Hash, the tools' hash.
	Instructions map[string]string `json:"instructions,omitzero"`
}

// newSnapshot sorts tools (already sealed) and computes the snapshot hash.
func newSnapshot(upstream string, tools []Tool, at time.Time) (*Snapshot, error) {
	tools = slices.Clone(tools)
	slices.SortFunc(tools, func(a, b Tool) int { return strings.Compare(a.Name, b.Name) })
	for i := 1; i < len(tools); i++ {
		if tools[i].Name == tools[i-1].Name {
			return nil, fmt.Errorf("duplicate tool %q", tools[i].Name)
		}
	}
	h, err := inventoryHash(tools)
	if err != nil {
		return nil, err
	}
	return &Snapshot{Upstream: upstream, Hash: h, CreatedAt: at.UTC(), Tools: tools}, nil
}

// inventoryHash computes a snapshot hash; see Snapshot.Hash.
func inventoryHash(tools []Tool) (string, error) {
	m := make(map[string]toolBody, len(tools))
	for i := range tools {
		m[tools[i].Name] = tools[i].body()
	}
	b, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	c, err := canonical(b)
	if err != nil {
		return "", err
	}
	return sum(c), nil
}

// Tool returns the tool called name, if the snapshot has one.
func (s *Snapshot) Tool(name string) (Tool, bool) {
	i, ok := slices.BinarySearchFunc(s.Tools, name, func(t Tool, name string) int { return strings.Compare(t.Name, name) })
	if !ok {
		return Tool{}, false
	}
	return s.Tools[i], true
}

// verify recomputes every hash of a snapshot read from disk. The signature
// already covers the contents; this catches a file written by a buggy or
// foreign producer whose hashes do not describe its tools.
func (s *Snapshot) verify() error {
	for i := range s.Tools {
		t := s.Tools[i]
		want := t.Hash
		if err := t.seal(); err != nil {
			return err
		}
		if t.Hash != want {
			return fmt.Errorf("tool %q: hash %s does not match its contents (%s)", t.Name, want, t.Hash)
		}
		if i > 0 && s.Tools[i-1].Name >= t.Name {
			return fmt.Errorf("tools not sorted by name or not unique at %q", t.Name)
		}
	}
	for set, names := range s.Sets {
		// Looked up by binary search (setHolds).
		for i := 1; i < len(names); i++ {
			if names[i-1] >= names[i] {
				return fmt.Errorf("capability set %q: names not sorted or not unique at %q", set, names[i])
			}
		}
	}
	h, err := inventoryHash(s.Tools)
	if err != nil {
		return err
	}
	if h != s.Hash {
		return fmt.Errorf("inventory hash %s does not match its tools (%s)", s.Hash, h)
	}
	return nil
}

// Page is one decoded tools/list result.
type Page struct {
	Tools []Tool // sealed, in the upstream's order
	// NextCursor is not empty when the upstream has more tools to list.
	NextCursor string
}

// ErrInvalidList is wrapped by the errors of ParsePage.
var ErrInvalidList = errors.New("inventory: invalid tools/list result")

// ParsePage decodes a tools/list result (the JSON-RPC result member, not
// the whole response) and seals its tools. A tool's members that MCP does
// not define are kept together in its Unknown. It fails on a result that is not JSON, has a tool
// without a name, or lists one name twice.
func ParsePage(result jsontext.Value) (Page, error) {
	p, err := parsePage(result)
	if err == nil && len(p.Tools) > MaxTools {
		return Page{}, fmt.Errorf("%w: %d tools, more than %d", ErrInvalidList, len(p.Tools), MaxTools)
	}
	return p, err
}

// parsePage is ParsePage without the bound on the number of tools: the
// inventory rejects a list past MaxTools, but the client may still be
// shown it, so its tools are compared with the pin all the same.
func parsePage(result jsontext.Value) (Page, error) {
	var raw struct {
		Tools []struct {
			Name         *string        `json:"name"`
			Title        string         `json:"title"`
			Description  string         `json:"description"`
			InputSchema  jsontext.Value `json:"inputSchema"`
			OutputSchema jsontext.Value `json:"outputSchema"`
			Annotations  jsontext.Value `json:"annotations"`
			Icons        jsontext.Value `json:"icons"`
			Execution    jsontext.Value `json:"execution"`
			Meta         jsontext.Value `json:"_meta"`
			Unknown      jsontext.Value `json:",embed"` // the members not above
		} `json:"tools"`
		NextCursor string `json:"nextCursor"`
	}
	if err := json.Unmarshal(result, &raw); err != nil {
		return Page{}, fmt.Errorf("%w: %v", ErrInvalidList, err)
	}
	p := Page{Tools: make([]Tool, 0, len(raw.Tools)), NextCursor: raw.NextCursor}
	seen := make(map[string]bool, len(raw.Tools))
	for i, r := range raw.Tools {
		if r.Name == nil || *r.Name == "" {
			return Page{}, fmt.Errorf("%w: tool %d has no name", ErrInvalidList, i)
		}
		if seen[*r.Name] {
			return Page{}, fmt.Errorf("%w: tool %q listed twice", ErrInvalidList, *r.Name)
		}
		seen[*r.Name] = true
		t := Tool{
			Name:         *r.Name,
			Title:        r.Title,
			Description:  r.Description,
			InputSchema:  r.InputSchema,
			OutputSchema: r.OutputSchema,
			Annotations:  r.Annotations,
			Icons:        r.Icons,
			Execution:    r.Execution,
			Meta:         r.Meta,
			Unknown:      r.Unknown,
		}
		if len(t.Unknown) == 0 {
			t.Unknown = jsontext.Value("{}")
		}
		if err := t.seal(); err != nil {
			return Page{}, fmt.Errorf("%w: %v", ErrInvalidList, err)
		}
		p.Tools = append(p.Tools, t)
	}
	return p, nil
}

// pages merges the pages of one paginated tools/list into one list. A page
// that repeats a name already collected is taken to start a new listing
// (the only sign of one ObserveTools has, not told the request's cursor).
type pages struct {
	tools map[string]Tool
	bytes int    // what tools holds, Tool.size
	next  string // the nextCursor of the page added last, while tools is not nil
	set   string // the capability set of the client that asked for the first page
}

// continues reports whether a page asked for with cursor continues the
// listing being collected: one is, and cursor is its last page's
// nextCursor.
func (ps *pages) continues(cursor string) bool {
	return ps.tools != nil && cursor == ps.next
}

// restarts reports whether p starts a new listing while one is being
// collected: it repeats a name collected already (see add).
func (ps *pages) restarts(p Page) bool {
	if ps.tools == nil {
		return false
	}
	for _, t := range p.Tools {
		if _, dup := ps.tools[t.Name]; dup {
			return true
		}
	}
	return false
}

// add merges p. It reports done with the complete tool list when p was the
// last page.
func (ps *pages) add(p Page) (tools []Tool, done bool, err error) {
	for _, t := range p.Tools {
		if _, dup := ps.tools[t.Name]; dup {
			ps.tools = nil
			break
		}
	}
	if ps.tools == nil {
		ps.tools, ps.bytes = make(map[string]Tool, len(p.Tools)), 0
	}
	for _, t := range p.Tools {
		ps.tools[t.Name] = t
		ps.bytes += t.size()
	}
	if len(ps.tools) > MaxTools {
		ps.tools = nil
		return nil, false, fmt.Errorf("%w: more than %d tools across pages", ErrInvalidList, MaxTools)
	}
	if ps.bytes > MaxListBytes {
		ps.tools = nil
		return nil, false, fmt.Errorf("%w: more than %d bytes of tools across pages", ErrInvalidList, MaxListBytes)
	}
	if p.NextCursor != "" {
		ps.next = p.NextCursor
		return nil, false, nil
	}
	tools = make([]Tool, 0, len(ps.tools))
	for _, t := range ps.tools {
		tools = append(tools, t)
	}
	ps.tools = nil
	return tools, true, nil
}
