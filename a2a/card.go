package a2a

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/internal/throttle"
)

// cardCache keeps an agent's upstream card per protocol version (an A2A
// server may answer a 0.3 and a 1.0 client with different shapes).
type cardCache struct {
	mu      sync.Mutex
	entries [2]cardEntry // [0]: 0.3, [1]: 1.0
	skills  map[string]string
}

type cardEntry struct {
	card    jsontext.Value
	fetched time.Time
	// endpoint is the URL calls of this version go to, read from card
	// once: its JSON-RPC interface, or its 1.0 HTTP+JSON one (rest).
	endpoint string
	rest     bool
	// signedBy1 says the card (a 0.3 one) was accepted because the 1.0
	// card verified: that card's signatures are what vouch for it.
	signedBy1 bool
}

func vi(v1 bool) int {
	if v1 {
		return 1
	}
	return 0
}

// skill returns the description of the agent's skill id, and whether a
// card declared it ("send" always is).
func (c *cardCache) skill(id string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.skills[id]
	return d, ok || id == "send"
}

// card returns the agent's card for the version, fetched at most CardTTL
// ago. A card that cannot be fetched or is not a JSON object is an error.
func (g *Gateway) card(ctx context.Context, a *agent, v1 bool) (jsontext.Value, error) {
	card, _, err := g.signedCard(ctx, a, v1)
	return card, err
}

// signedCard is card, and the card whose verified signatures vouch for
// it: itself, or for a 0.3 card accepted through the agent's verified
// 1.0 card, that one.
func (g *Gateway) signedCard(ctx context.Context, a *agent, v1 bool) (card, signed jsontext.Value, err error) {
	a.cards.mu.Lock()
	e, e1 := a.cards.entries[vi(v1)], a.cards.entries[1]
	a.cards.mu.Unlock()
	if e.card != nil && time.Since(e.fetched) < g.opts.CardTTL {
		if e.signedBy1 {
			return e.card, e1.card, nil
		}
		return e.card, e.card, nil
	}
	card, err = g.fetchCard(ctx, a, v1)
	by1 := false
	if err == nil {
		signed, by1, err = g.checkSignatures(ctx, a, card, v1)
	}
	if err != nil {
		if g.opts.OnCardRefused != nil {
			g.opts.OnCardRefused(a.Name, err.Error())
		}
		g.log.Warn("a2a: agent card refused", "agent", a.Name, "err", err)
		return nil, nil, err
	}
	endpoint, rest, err := g.pickEndpoint(a, card, v1)
	if err != nil {
		return nil, nil, err
	}
	a.cards.mu.Lock()
	a.cards.entries[vi(v1)] = cardEntry{card: card, fetched: time.Now(), endpoint: endpoint, rest: rest, signedBy1: by1}
	list, skills := skillTools(card)
	a.cards.skills = skills
	a.cards.mu.Unlock()
	if g.ic != nil && list != nil {
		// The skills are the agent's tools: pinned, drift-checked and
		// scanned by the inventory like an MCP server's tools/list.
		g.ic.ObserveTools("a2a:"+a.Name, list)
	}
	return card, signed, nil
}

// checkSignatures verifies the card's signatures and returns the card
// they vouch for. A 0.3 card is the agent's 1.0 card in the 0.3 shape,
// which its signatures (over the 1.0 form) do not cover: it is accepted
// when the 1.0 card verifies and both name the same skills, and the 1.0
// card is returned (by1).
func (g *Gateway) checkSignatures(ctx context.Context, a *agent, card jsontext.Value, v1 bool) (signed jsontext.Value, by1 bool, err error) {
	var c map[string]any
	if err := json.Unmarshal(card, &c); err != nil {
		return nil, false, err
	}
	err = g.verifyCard(ctx, a, c)
	if err == nil {
		return card, false, nil
	}
	if v1 || errors.Is(err, errUnsigned) {
		return nil, false, err
	}
	signed, err1 := g.card(ctx, a, true)
	if err1 != nil {
		return nil, false, fmt.Errorf("%v; and the 1.0 card: %w", err, err1)
	}
	// Their skills' text (the rest the pin covers may differ: what a 0.3
	// client is served of it with require_signed_card is the 1.0 card's,
	// signedView).
	got, _ := toolList(card, false)
	want, _ := toolList(signed, false)
	if string(got) != string(want) {
		return nil, false, fmt.Errorf("%v; and its skills differ from the verified 1.0 card's", err)
	}
	return signed, true, nil
}

// skillTools turns a card's skills into a tools/list result, one tool per
// skill (described by its description, examples and tags: the text the
// card serves with it) plus "send" (a message naming no skill) described
// by the card's description, and returns the skills' descriptions by id. Only fields
// both versions' cards share are kept, so that a 0.3 and a 1.0 fetch of
// one card give the same list.
func skillTools(card jsontext.Value) (jsontext.Value, map[string]string) {
	return toolList(card, true)
}

// toolList is skillTools, the card's other members that clients act on
// pinned too if pin (cardpin.go).
func toolList(card jsontext.Value, pin bool) (jsontext.Value, map[string]string) {
	var c cardText
	if json.Unmarshal(card, &c) != nil {
		return nil, nil // fetchCard refuses such a card (readSkills)
	}
	type tool struct {
		Name        string         `json:"name"`
		Title       string         `json:"title,omitempty"`
		Description string         `json:"description"`
		InputSchema map[string]any `json:"inputSchema"`
	}
	schema := map[string]any{"type": "object", "properties": map[string]any{
		"text": map[string]any{"type": "string"}, "data": map[string]any{"type": "array"}, "files": map[string]any{"type": "array"}}}
	tools := []tool{{Name: "send", Title: c.Name, Description: c.Description, InputSchema: schema}}
	skills := map[string]string{"send": c.Description}
	// What else the card serves that clients act on (where to send
	// credentials, extensions, modes: cardpin.go) is pinned with it, a
	// skill's with the skill.
	var raw struct {
		Card   map[string]any   `json:"-"`
		Skills []map[string]any `json:"skills"`
	}
	if pin {
		_ = json.Unmarshal(card, &raw.Card)
		_ = json.Unmarshal(card, &raw)
	}
	if p := cardPin(raw.Card); p != "" {
		tools[0].Description += "\nCard: " + p
	}
	for i, s := range c.Skills {
		d := s.Description
		if len(s.Examples) > 0 {
			d += "\nExamples: " + strings.Join(s.Examples, "; ")
		}
		if len(s.Tags) > 0 {
			// Text the card serves with the skill too: pinned with it.
			d += "\nTags: " + strings.Join(s.Tags, "; ")
		}
		if i < len(raw.Skills) {
			if p := skillPin(raw.Skills[i]); p != "" {
				d += "\nServed with: " + p
			}
		}
		if s.ID == "" || s.ID == "send" {
			// No tool of its own (send is a message naming no skill; a
			// skill without an id cannot be named), but the card serves
			// its text all the same: pinned, and withheld when it
			// drifts, with send's.
			tools[0].Description += "\nSkill " + strconv.Quote(s.ID) + " (" + s.Name + "): " + d
			continue
		}
		tools = append(tools, tool{Name: s.ID, Title: s.Name, Description: d, InputSchema: schema})
		skills[s.ID] = s.Description
	}
	b, err := json.Marshal(map[string]any{"tools": tools}, json.Deterministic(true))
	if err != nil {
		return nil, skills
	}
	return b, skills
}

// readSkills is nil when skillTools can read the card's name,
// description and skills (each an object, its text members strings, its
// tags and examples lists of strings). A card it cannot read would not
// reach the inventory at all: its skills not pinned nor compared with the
// pin, their text served unreviewed beside the member that spoilt it.
func readSkills(card jsontext.Value) error {
	var c cardText
	return json.Unmarshal(card, &c)
}

// cardText is what of a card skillTools reads.
type cardText struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Skills      []struct {
		ID          string   `json:"id"`
		Name        string   `json:"name"`
		Description string   `json:"description"`
		Tags        []string `json:"tags"`
		Examples    []string `json:"examples"`
	} `json:"skills"`
}

func (g *Gateway) fetchCard(ctx context.Context, a *agent, v1 bool) (jsontext.Value, error) {
	var last error
	for _, path := range []string{"/.well-known/agent-card.json", "/.well-known/agent.json"} {
		u := strings.TrimSuffix(a.URL, "/") + path
		shown := a.shown + path // u may hold the operator's credentials: errors reach the client
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			cancel()
			return nil, err
		}
		req.Header.Set("Accept", "application/json")
		if v1 {
			req.Header.Set("A2A-Version", "1.0")
		}
		for k, v := range a.Headers {
			req.Header.Set(k, v)
		}
		resp, err := g.calls.Do(req)
		if err != nil {
			cancel()
			if ue, ok := err.(*url.Error); ok {
				err = ue.Err // its URL is u, the password starred but the rest whole
			}
			return nil, fmt.Errorf("fetching the card of agent %q at %s: %v", a.Name, shown, err)
		}
		b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		cancel()
		if resp.StatusCode == http.StatusNotFound {
			last = fmt.Errorf("agent %q has no card at %s", a.Name, shown)
			continue
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("fetching the card of agent %q at %s: %w", a.Name, shown, unreadableCard(resp.StatusCode))
		}
		if err != nil {
			return nil, fmt.Errorf("fetching the card of agent %q at %s: %v", a.Name, shown, err)
		}
		v := jsontext.Value(b)
		if !v.IsValid() || v.Kind() != '{' {
			return nil, fmt.Errorf("the card of agent %q at %s is not a JSON object", a.Name, shown)
		}
		if _, err := g.interfaces(a, v); err != nil {
			return nil, err
		}
		if err := readSkills(v); err != nil {
			return nil, fmt.Errorf("the card of agent %q: its name, description or skills cannot be read (%v); refused", a.Name, err)
		}
		return v, nil
	}
	return nil, last
}

// iface is one JSON-RPC interface of a card.
type iface struct {
	url     string
	version string
	rest    bool // the A2A 1.0 HTTP+JSON binding (else JSON-RPC)
}

// interfaces returns the card's JSON-RPC and A2A 1.0 HTTP+JSON
// interfaces, and refuses a card
// with an interface outside the agent's origin: calls there would bypass
// the gateway, or the card would send the client elsewhere.
func (g *Gateway) interfaces(a *agent, card jsontext.Value) ([]iface, error) {
	var c struct {
		URL                string `json:"url"`
		PreferredTransport string `json:"preferredTransport"`
		ProtocolVersion    string `json:"protocolVersion"`
		Supported          []struct {
			URL             string `json:"url"`
			ProtocolBinding string `json:"protocolBinding"`
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"supportedInterfaces"`
		Additional []struct {
			URL       string `json:"url"`
			Transport string `json:"transport"`
		} `json:"additionalInterfaces"`
	}
	if err := json.Unmarshal(card, &c); err != nil {
		return nil, fmt.Errorf("the card of agent %q: %v", a.Name, err)
	}
	// The interfaces and skills are read, checked and rewritten under
	// their exact names; a client reading the card with Go's
	// encoding/json (a2a-go) takes "URL" or "additionalInterfaceſ" for
	// them, and would call wherever those point, around the gateway (or
	// read a skill's "Description" the inventory never scanned).
	// So does one reading it as protobuf JSON (@a2a-js/sdk's
	// AgentCard.fromJSON, a protobuf parser) or a pydantic model by field
	// name: "supported_interfaces" and "additional_interfaces" for the
	// lists.
	if why, bad := spellingVariant(card, cardFields); bad {
		return nil, fmt.Errorf("the card of agent %q: %s; refused", a.Name, why)
	}
	if why, bad := pinnedVariant(card); bad {
		return nil, fmt.Errorf("the card of agent %q: %s; refused", a.Name, why)
	}
	for list, fields := range map[string][]string{"supportedInterfaces": ifaceFields, "additionalInterfaces": ifaceFields, "skills": skillFields} {
		if ifs := intercept.Member(card, list); ifs.Kind() == '[' {
			err := intercept.EachElement(ifs, func(_ int, v jsontext.Value) error {
				if why, bad := spellingVariant(v, fields); v.Kind() == '{' && bad {
					return fmt.Errorf("the card of agent %q: %s: %s; refused", a.Name, list, why)
				}
				return nil
			})
			if err != nil {
				return nil, err
			}
		}
	}
	var out []iface
	add := func(raw, binding, version string) error {
		if raw == "" {
			return nil
		}
		u, err := url.Parse(raw)
		if err != nil || !sameOrigin(u, a.base) {
			return fmt.Errorf("the card of agent %q points elsewhere: interface %s is not at %s://%s; refused", a.Name, raw, a.base.Scheme, a.base.Host)
		}
		if u.User == nil && a.base.User != nil {
			// The operator's credentials for the agent (its url's
			// userinfo, sent as Basic authorization) go to its
			// interfaces too: they are at the same origin.
			u.User = a.base.User
			raw = u.String()
		}
		switch {
		case strings.EqualFold(binding, "JSONRPC") || binding == "":
			out = append(out, iface{url: raw, version: version})
		case strings.EqualFold(binding, "HTTP+JSON") && strings.HasPrefix(version, "1"):
			// 0.3's REST binding (paths under /v1) is another API.
			out = append(out, iface{url: raw, version: version, rest: true})
		}
		return nil
	}
	if err := add(c.URL, c.PreferredTransport, c.ProtocolVersion); err != nil {
		return nil, err
	}
	for _, i := range c.Supported {
		if err := add(i.URL, i.ProtocolBinding, i.ProtocolVersion); err != nil {
			return nil, err
		}
	}
	for _, i := range c.Additional {
		if err := add(i.URL, i.Transport, c.ProtocolVersion); err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the card of agent %q offers no JSON-RPC or A2A 1.0 HTTP+JSON interface", a.Name)
	}
	return out, nil
}

// cardFields are the card members the gateway reads or rewrites,
// ifaceFields those of one of its interfaces and skillFields those of a
// skill: a case variant of one is refused.
var (
	cardFields = []string{"url", "preferredTransport", "protocolVersion", "supportedInterfaces", "additionalInterfaces", "signatures", "skills", "name", "description",
		"provider", "documentationUrl", "iconUrl", "capabilities", "securitySchemes", "security", "securityRequirements", "defaultInputModes", "defaultOutputModes"}
	ifaceFields = []string{"url", "transport", "protocolBinding", "protocolVersion"}
	skillFields = []string{"id", "name", "description", "tags", "examples", "inputModes", "outputModes", "security", "securityRequirements"}
)

// spellingVariant is intercept.CaseVariant, and also reports a member
// of obj that is one of known spelt in snake case ("supported_interfaces"
// for "supportedInterfaces"): readers of protobuf JSON and pydantic
// models take either spelling for the same field.
func spellingVariant(obj jsontext.Value, known []string) (string, bool) {
	if why, bad := intercept.CaseVariant(obj, known); bad {
		return why, true
	}
	var why string
	_ = intercept.EachMember(obj, func(key string, _ jsontext.Value) error {
		if why != "" || !strings.Contains(key, "_") {
			return nil
		}
		for _, k := range known {
			if strings.EqualFold(strings.ReplaceAll(key, "_", ""), k) {
				why = fmt.Sprintf("member %q is %q spelt otherwise", key, k)
				break
			}
		}
		return nil
	})
	return why, why != ""
}

func sameOrigin(u, base *url.URL) bool {
	return strings.EqualFold(u.Scheme, base.Scheme) && strings.EqualFold(u.Host, base.Host)
}

// endpoint is the agent's URL for the version, from its card, and whether
// it is an HTTP+JSON interface.
func (g *Gateway) endpoint(ctx context.Context, a *agent, v1 bool) (string, bool, error) {
	if _, err := g.card(ctx, a, v1); err != nil {
		return "", false, err
	}
	a.cards.mu.Lock()
	defer a.cards.mu.Unlock()
	e := a.cards.entries[vi(v1)]
	return e.endpoint, e.rest, nil
}

// pickEndpoint chooses the card's JSON-RPC interface for the version,
// another JSON-RPC interface, or else its HTTP+JSON one.
func (g *Gateway) pickEndpoint(a *agent, card jsontext.Value, v1 bool) (string, bool, error) {
	ifs, err := g.interfaces(a, card)
	if err != nil {
		return "", false, err
	}
	var rpc, rest []iface
	for _, i := range ifs {
		if i.rest {
			rest = append(rest, i)
		} else {
			rpc = append(rpc, i)
		}
	}
	for _, i := range rpc {
		if strings.HasPrefix(i.version, "1") == v1 {
			return i.url, false, nil
		}
	}
	if len(rpc) > 0 {
		return rpc[0].url, false, nil
	}
	return rest[0].url, true, nil
}

func (g *Gateway) serveCard(w http.ResponseWriter, r *http.Request) {
	a := g.agent(w, r)
	if a == nil {
		return
	}
	v1, err := version(r)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, intercept.ErrorResponse(nil, &intercept.WireError{Code: codeVersionNotSupported, Message: err.Error()}))
		return
	}
	card, signed, err := g.signedCard(r.Context(), a, v1)
	if err == nil && a.RequireSignedCard {
		card, err = vouched(card, signed, v1)
	}
	if err != nil {
		writeJSON(w, http.StatusBadGateway, intercept.ErrorResponse(nil, &intercept.WireError{Code: intercept.CodeInternalError, Message: err.Error()}))
		return
	}
	out, err := g.rewriteCard(r, a, card)
	if err != nil {
		writeJSON(w, http.StatusBadGateway, intercept.ErrorResponse(nil, &intercept.WireError{Code: intercept.CodeInternalError, Message: err.Error()}))
		return
	}
	w.Header().Set("Vary", "A2A-Version")
	w.Header().Set("Cache-Control", "max-age=60")
	writeJSON(w, http.StatusOK, out)
}

// vouched is card as signedView gives it, signed the card that vouches
// for it.
func vouched(card, signed jsontext.Value, v1 bool) (jsontext.Value, error) {
	var c, sc map[string]any
	if err := json.Unmarshal(card, &c); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(signed, &sc); err != nil {
		return nil, err
	}
	return json.Marshal(signedView(c, signedContent(sc), v1), json.Deterministic(true))
}

// rewriteCard points the card's JSON-RPC interfaces at the gateway and
// drops what the gateway does not serve (other bindings) and what the
// rewrite invalidates (the upstream's signatures, verified when fetched),
// and signs the result with the gateway's key.
func (g *Gateway) rewriteCard(r *http.Request, a *agent, card jsontext.Value) (jsontext.Value, error) {
	own, err := g.interfaces(a, card)
	if err != nil {
		return nil, err
	}
	restOnly := !slices.ContainsFunc(own, func(i iface) bool { return !i.rest })
	var c map[string]any
	if err := json.Unmarshal(card, &c); err != nil {
		return nil, err
	}
	self := g.baseURL(r) + "/a2a/" + a.Name
	if _, ok := c["url"].(string); ok {
		c["url"] = self
		c["preferredTransport"] = "JSONRPC"
	}
	// The 1.0 interfaces name their binding protocolBinding, 0.3's
	// additional ones transport.
	for list, binding := range map[string]string{"supportedInterfaces": "protocolBinding", "additionalInterfaces": "transport"} {
		ifs, ok := c[list].([]any)
		if !ok {
			continue
		}
		var keep []any
		for _, x := range ifs {
			m, ok := x.(map[string]any)
			switch {
			case !ok:
			case strings.EqualFold(fmt.Sprint(m[binding]), "JSONRPC"):
				m["url"] = self
				keep = append(keep, m)
			case list == "supportedInterfaces" && strings.EqualFold(fmt.Sprint(m[binding]), "HTTP+JSON"):
				// The 1.0 REST binding, served by translating to JSON-RPC.
				m["url"] = self + "/rest"
				keep = append(keep, m)
			}
		}
		if list == "supportedInterfaces" && restOnly {
			// The gateway serves JSON-RPC in front of an agent that
			// offers only HTTP+JSON: say so.
			keep = append([]any{map[string]any{"url": self, "protocolBinding": "JSONRPC", "protocolVersion": own[0].version}}, keep...)
		}
		c[list] = keep
	}
	if caps, ok := c["capabilities"].(map[string]any); ok && g.opts.CredentialsLapse && !g.opts.PushRelay {
		if _, declared := caps["pushNotifications"]; declared {
			caps["pushNotifications"] = false // push.go: refused, not relayed
		}
	}
	g.withholdDrifted(a, c)
	delete(c, "signatures")
	if g.signer != nil {
		if err := g.signer.sign(c, g.baseURL(r)+"/a2a/.well-known/jwks.json"); err != nil {
			return nil, err
		}
	}
	out, err := json.Marshal(c, json.Deterministic(true))
	return out, err
}

// reviewedExtendedCard is an agent's authenticated extended card (the
// answer to agent/getAuthenticatedExtendedCard or GetExtendedAgentCard)
// with only the text the gateway reviewed: the card's name and
// description and each skill's name, description, tags and examples as
// the public card, whose skills the inventory pins and scans, gives them
// for the same skill id; a skill the public card does not declare is left
// out, as a message naming it is refused. Clients take the extended card
// in place of the public one, so text only it carries would reach the
// calling agent unreviewed (and signed by the gateway). Its signatures
// are checked as a fetched card's are.
func (g *Gateway) reviewedExtendedCard(ctx context.Context, a *agent, v1 bool, extended jsontext.Value) (jsontext.Value, error) {
	public, signed, err := g.signedCard(ctx, a, v1)
	if err == nil && a.RequireSignedCard {
		public, err = vouched(public, signed, v1) // as serveCard serves it
	}
	if err != nil {
		return nil, err
	}
	var pub, ext map[string]any
	if err := json.Unmarshal(public, &pub); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(extended, &ext); err != nil {
		return nil, err
	}
	// Verified as the public card is (require_signed_card, a signature
	// that must hold): the gateway signs what it serves. A 0.3 card may be
	// the 1.0 card reshaped, which its signatures do not cover: as for
	// the public card, that passes when the 1.0 card verifies, but not
	// where signed cards are required (nothing else would vouch for it).
	if err := g.verifyCard(ctx, a, ext); err != nil {
		if v1 || a.RequireSignedCard || errors.Is(err, errUnsigned) {
			if g.opts.OnCardRefused != nil {
				g.opts.OnCardRefused(a.Name, "extended card: "+err.Error())
			}
			return nil, err
		}
		if _, err1 := g.card(ctx, a, true); err1 != nil {
			return nil, fmt.Errorf("extended card: %v; and the 1.0 card: %w", err, err1)
		}
	}
	if a.RequireSignedCard {
		// Verified itself (above): served as far as its signatures vouch.
		ext = signedView(ext, signedContent(ext), v1)
	}
	reviewed := map[string]map[string]any{}
	pubSkills, _ := pub["skills"].([]any)
	for _, x := range pubSkills {
		if s, ok := x.(map[string]any); ok {
			if id, _ := s["id"].(string); id != "" {
				reviewed[id] = s
			}
		}
	}
	for _, k := range append([]string{"name", "description"}, cardPinned...) {
		setAs(ext, pub, k)
	}
	// The extensions, as the rest the public card's pin covers
	// (cardpin.go).
	if caps, ok := ext["capabilities"].(map[string]any); ok {
		pubCaps, _ := pub["capabilities"].(map[string]any)
		if pubCaps == nil {
			pubCaps = map[string]any{}
		}
		setAs(caps, pubCaps, "extensions")
	} else if _, ok := ext["capabilities"]; ok {
		setAs(ext, pub, "capabilities") // not read as capabilities: the public card's
	}
	if skills, ok := ext["skills"].([]any); ok {
		keep := []any{}
		for _, x := range skills {
			s, ok := x.(map[string]any)
			if !ok {
				continue
			}
			id, _ := s["id"].(string)
			p, declared := reviewed[id]
			if !declared {
				continue
			}
			for _, k := range append([]string{"name", "description", "tags", "examples"}, skillPinned...) {
				setAs(s, p, k)
			}
			keep = append(keep, s)
		}
		ext["skills"] = keep
	}
	return json.Marshal(ext, json.Deterministic(true))
}

// setAs makes dst's member k what src's is, or absent if src has none.
func setAs(dst, src map[string]any, k string) {
	if v, ok := src[k]; ok {
		dst[k] = v
	} else {
		delete(dst, k)
	}
}

// driftWithheld replaces the text of a skill that changed since it was
// pinned and awaits approval.
const driftWithheld = "This skill changed since it was approved; it is unavailable until an operator approves the change."

// withholdDrifted keeps the text of skills the inventory blocks (changed
// since the pin, not approved: name, description, examples, tags) out of
// the card clients get: messages naming them are refused, and their new
// text, a server's to write, is not shown to clients unreviewed either.
// The card's own name and description stand for the skill "send".
func (g *Gateway) withholdDrifted(a *agent, c map[string]any) {
	if g.ic == nil {
		return
	}
	inv, ok := g.ic.Observer.(interface {
		Blocked(upstream, tool string) (string, bool)
	})
	if !ok {
		return
	}
	up := "a2a:" + a.Name
	if _, blocked := inv.Blocked(up, "send"); blocked {
		c["description"] = driftWithheld
		if _, ok := c["name"]; ok {
			c["name"] = a.Name // its name is pinned text too (send's title)
		}
		withholdPinned(c, cardPinned, []string{"defaultInputModes", "defaultOutputModes"})
		if caps, ok := c["capabilities"].(map[string]any); ok {
			delete(caps, "extensions")
		}
	}
	skills, _ := c["skills"].([]any)
	for _, x := range skills {
		m, ok := x.(map[string]any)
		if !ok {
			continue
		}
		id, _ := m["id"].(string)
		if id == "" {
			id = "send" // its text is pinned with send's (skillTools)
		}
		if _, blocked := inv.Blocked(up, id); blocked {
			m["description"] = driftWithheld
			if _, ok := m["name"]; ok {
				m["name"] = id // its name is pinned text too (the tool's title)
			}
			delete(m, "examples")
			if _, ok := m["tags"]; ok {
				m["tags"] = []any{} // required by 0.3 readers (@a2a-js/sdk)
			}
			withholdPinned(m, skillPinned, nil)
		}
	}
}

// baseURL is how the client reached the gateway: Options.PublicURL, else
// the request's scheme and Host, or X-Forwarded-Proto/Host from a trusted
// proxy.
func (g *Gateway) baseURL(r *http.Request) string {
	if g.opts.PublicURL != "" {
		return g.opts.PublicURL
	}
	scheme, host := "http", r.Host
	if r.TLS != nil {
		scheme = "https"
	}
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil && throttle.Trusted(g.opts.TrustedProxies, ap.Addr()) {
		if p := r.Header.Get("X-Forwarded-Proto"); p == "http" || p == "https" {
			scheme = p
		}
		// A host the gateway would not serve under its own Host header is
		// not one the card (signed by the gateway) may name either: a
		// proxy that passes its client's header on would have the
		// gateway sign a card sending agents elsewhere.
		if h := r.Header.Get("X-Forwarded-Host"); h != "" && !strings.ContainsAny(h, "/ \t,") &&
			(g.opts.HostAllowed == nil || g.opts.HostAllowed(h)) {
			host = h
		}
	}
	return scheme + "://" + host
}
