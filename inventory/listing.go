package inventory

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// Listings: an upstream shows the model more than its tools. Prompts
// (prompts/list: their descriptions and their arguments'), resources and
// resource templates (resources/list, resources/templates/list: their
// titles and descriptions) and the server's instructions (the initialize
// and server/discover results) reach the model as tool descriptions do,
// and carry the same poisoning. ScreenListed and ScreenInstructions scan
// them with Scan's rules; what looks poisoned (SeverityMedium or above)
// is withheld from the client, and a later prompts/get or resources/read
// of a withheld item is refused (Withheld). Listings are scanned, not
// pinned: there is no drift for them.

// ReasonPoisoned is the decision reason for a read (prompts/get,
// resources/read) of an item ScreenListed withheld.
const ReasonPoisoned = "inventory_poisoning"

// ListingAction says what happens to a prompt, resource, resource
// template or server instructions that look poisoned.
type ListingAction int

const (
	// ListingWithhold leaves the item out of its list (the instructions
	// out of the result) and refuses reads of a withheld item.
	ListingWithhold ListingAction = iota
	// ListingReport only reports EventPoisoning events.
	ListingReport
)

func (a ListingAction) String() string {
	if a == ListingReport {
		return "report"
	}
	return "withhold"
}

// MarshalText writes "withhold" or "report".
func (a ListingAction) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText reads "withhold" (or "") and "report", for config files.
func (a *ListingAction) UnmarshalText(b []byte) error {
	switch string(b) {
	case "", "withhold":
		*a = ListingWithhold
	case "report":
		*a = ListingReport
	default:
		return fmt.Errorf("inventory: on_poisoned_listing %q: want withhold or report", b)
	}
	return nil
}

// maxListed bounds what the inventory remembers of one upstream's
// listings: withheld items, and scans kept so as not to repeat them.
const maxListed = MaxTools

// listing is what the inventory keeps of one upstream's listings,
// guarded by Inventory.mu.
type listing struct {
	// foreign are the tool names of other upstreams that fx indexes, and
	// scans were made with.
	foreign []string
	own     []string // the upstream's own names that fx knows
	fx      *foreignIndex
	scans   map[[sha256.Size]byte][]Finding // item digest -> findings
	// withheld are the reads refused, by action name (prompt:NAME,
	// resource:URI), and the withheld templates, by uriTemplate. Once an
	// upstream has served an item poisoned it stays withheld while the
	// gateway runs, whatever later lists say: a server can serve one
	// session a poisoned listing and the next a clean one.
	withheld  map[string]string
	templates map[string]string
	// matchers are the templates as Withheld matches them, sorted; nil
	// when templates changed since. Never modified once made: Withheld
	// matches them without the lock.
	matchers []templateMatcher
	reported map[string]bool // finding events already sent
}

// templateMatcher is a withheld resource template split into its literal
// text (see matchTemplate).
type templateMatcher struct {
	template, reason string
	lits             []string // nil: no expression; the URI must be the template
}

func newTemplateMatcher(t, reason string) templateMatcher {
	m := templateMatcher{template: t, reason: reason}
	rest := t
	for {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			break
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			break
		}
		m.lits = append(m.lits, rest[:i])
		rest = rest[i+j+1:]
	}
	if m.lits != nil {
		m.lits = append(m.lits, rest)
	}
	return m
}

// matches reports whether uri could be an expansion of the template: its
// literal text in order, each {expression} standing for any text. It
// matches more than the template could expand to, never less. searched
// is whether it had to search uri for literals between expressions, which
// costs up to its length.
func (m *templateMatcher) matches(uri string) (ok, searched bool) {
	if m.lits == nil {
		return m.template == uri, false
	}
	first, last := m.lits[0], m.lits[len(m.lits)-1]
	if !strings.HasPrefix(uri, first) || !strings.HasSuffix(uri[len(first):], last) {
		return false, false
	}
	uri = uri[len(first) : len(uri)-len(last)]
	for _, lit := range m.lits[1 : len(m.lits)-1] {
		searched = true
		i := strings.Index(uri, lit)
		if i < 0 {
			return false, true
		}
		uri = uri[i+len(lit):]
	}
	return true, searched
}

// maxTemplateSearch bounds the bytes of a URI that Withheld searches, all
// templates together (each template with literals between its
// expressions counts the URI's length): an upstream listing thousands of
// poisoned templates and an agent reading a long URI of it would
// otherwise have every read scan the URI thousands of times. A read past
// it is refused.
const maxTemplateSearch = 16 << 20

// listKind describes the items of a list method.
type listKind struct {
	member string // the result's array member
	key    string // the member naming an item
	prefix string // of the name events and Withheld use
	what   string // for reasons
}

var listKinds = map[string]listKind{
	"prompts/list":             {"prompts", "name", "prompt:", "prompt"},
	"resources/list":           {"resources", "uri", "resource:", "resource"},
	"resources/templates/list": {"resourceTemplates", "uriTemplate", "resource_template:", "resource template"},
}

// ListedMember returns the member of a method's result that ScreenListed
// screens the elements of ("prompts", "resources", "resourceTemplates"),
// or "" for a method whose results it does not screen.
func ListedMember(method string) string { return listKinds[method].member }

// ScreenListed scans items, the elements of the prompts, resources or
// resourceTemplates of a prompts/list, resources/list or
// resources/templates/list result (method) of upstream, and reports for
// each whether it may be shown to the client. An item is scanned like a
// tool (Scan): every string and member name of it, except its name, uri
// and uriTemplate (checked for invisible characters only); a prompt's
// arguments' names likewise. _meta and icons are read too, as a tool's. Findings become
// EventPoisoning events, whose Tool is prompt:NAME, resource:URI or
// resource_template:TEMPLATE and whose Detail also has method, item_hash
// and withheld. With ListingWithhold an item with a finding of
// SeverityMedium or above is not shown, and Withheld refuses reads of it
// from then on. An element that is not an object is shown: what it is is
// the client's to judge, and it says nothing to the model.
func (inv *Inventory) ScreenListed(upstream, method string, items []jsontext.Value) (show []bool) {
	show = make([]bool, len(items))
	for i := range show {
		show[i] = true
	}
	k, ok := listKinds[method]
	if !ok {
		return show
	}
	evs := inv.screenListed(upstream, method, k, items, show)
	inv.emit(evs)
	return show
}

func (inv *Inventory) screenListed(upstream, method string, k listKind, items []jsontext.Value, show []bool) []Event {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	l := inv.listing(upstream)
	var evs []Event
	left, leftItems, leftSev := 0, 0, Severity(0) // findings not recorded one by one
	// The findings to record are maxListingEvents of those not recorded
	// before, from a place chosen at random and round to the first:
	// decoys new at every listing, coming first, would otherwise take the
	// bound every time (TestAttackListedEventsStarved), and an upstream
	// that knew where the bound starts would list the item that matters
	// just outside it, every time (TestAttackListedEventsAligned).
	type held struct {
		key               string
		f                 Finding
		digest            [sha256.Size]byte
		label             string
		withhold, allowed bool
		item              int
	}
	var cands []held
	leftOf := map[int]bool{} // the items counted in leftItems
	leave := func(sev Severity, item int) {
		left++
		leftSev = max(leftSev, sev)
		if !leftOf[item] {
			leftItems, leftOf[item] = leftItems+1, true
		}
	}
	for i, it := range items {
		if it.Kind() != '{' {
			continue
		}
		name := stringMember(it, k.key)
		fs, digest := l.scan(method, it, inv.maxDesc)
		allowed := inv.allowed[digest]
		withhold := inv.onListing == ListingWithhold && Suspicious(fs) && !allowed
		label := k.prefix + name
		if withhold {
			show[i] = false
			reason := fmt.Sprintf("%s %q of upstream %q was withheld from %s: its text looks like tool poisoning (%s at %s); "+
				"see the sluice.tool_poisoning events, or set inventory.on_poisoned_listing: report to pass such items on",
				k.what, name, upstream, method, fs[0].Rule, fs[0].Field)
			if method == "resources/templates/list" {
				l.remember(&l.templates, name, reason)
				if t := inv.normalTemplate(name); t != name {
					l.remember(&l.templates, t, reason)
				}
			} else {
				l.remember(&l.withheld, label, reason)
				if inv.readName != nil && inv.readName(label) != label {
					l.remember(&l.withheld, inv.readName(label), reason)
				}
			}
		}
		for _, f := range fs {
			key := string(digest[:]) + "\x00" + f.Rule + "\x00" + f.Field
			if l.reported[key] {
				continue
			}
			cands = append(cands, held{key, f, digest, label, withhold, allowed, i})
		}
	}
	start := 0
	if len(cands) > maxListingEvents {
		start = rand.IntN(len(cands))
	}
	for i := range cands {
		h := &cands[(start+i)%len(cands)]
		if i >= maxListingEvents {
			leave(h.f.Severity, h.item)
			continue
		}
		l.report(h.key)
		evs = append(evs, Event{Type: EventPoisoning, Upstream: upstream, Tool: h.label, Detail: map[string]any{
			"rule": h.f.Rule, "severity": h.f.Severity.String(), "field": h.f.Field, "excerpt": h.f.Excerpt,
			"method": method, "item_hash": hex.EncodeToString(h.digest[:]), "withheld": h.withhold, "allowed": h.allowed,
		}})
	}
	if left > 0 {
		// Recorded at later listings, maxListingEvents at a time.
		evs = append(evs, Event{Type: EventPoisoning, Upstream: upstream, Detail: map[string]any{
			"rule": "findings_not_recorded", "severity": leftSev.String(), "method": method, "not_recorded": left,
			"excerpt": fmt.Sprintf("%d more findings in %d more items of this %s answer, not recorded one by one (at most %d a listing)",
				left, leftItems, method, maxListingEvents),
		}})
	}
	return evs
}

// maxListingEvents bounds the finding events one listed answer records:
// the upstream chooses how many items it lists (hundreds of thousands in
// one answer) and each may trip every rule, at every listing of any
// client. The findings past it are counted in one more event, and
// recorded at later listings.
const maxListingEvents = 64

// allowedHashes parses Options.AllowedListings.
func allowedHashes(list []string) (map[[sha256.Size]byte]bool, error) {
	var out map[[sha256.Size]byte]bool
	for _, h := range list {
		b, err := hex.DecodeString(strings.TrimSpace(h))
		if err != nil || len(b) != sha256.Size {
			return nil, fmt.Errorf("allowed_listings: %q is not an item_hash (64 hex digits, from a sluice.tool_poisoning event)", h)
		}
		if out == nil {
			out = map[[sha256.Size]byte]bool{}
		}
		out[[sha256.Size]byte(b)] = true
	}
	return out, nil
}

// ScreenInstructions scans the instructions of an initialize or
// server/discover result (method) of upstream as it scans a tool's
// description, and reports whether they may be shown to the client: not
// with ListingWithhold when a finding is of SeverityMedium or above, nor
// with DriftBlock when they differ from those pinned (pinInstructions).
// Findings become EventPoisoning events with an empty Tool, field
// "/instructions", and Detail method, item_hash and withheld.
func (inv *Inventory) ScreenInstructions(upstream, method, instructions string) (show bool) {
	b, err := jsontext.AppendQuote(nil, instructions)
	if err != nil {
		return true // invalid UTF-8: the decoder refused it before
	}
	item := jsontext.Value(`{"instructions":` + string(b) + `}`)
	inv.mu.Lock()
	l := inv.listing(upstream)
	fs, digest := l.scan(method, item, inv.maxDesc)
	allowed := inv.allowed[digest]
	withhold := inv.onListing == ListingWithhold && Suspicious(fs) && !allowed
	var evs []Event
	for _, f := range fs {
		key := string(digest[:]) + "\x00" + f.Rule + "\x00" + f.Field
		if !l.report(key) {
			continue
		}
		evs = append(evs, Event{Type: EventPoisoning, Upstream: upstream, Detail: map[string]any{
			"rule": f.Rule, "severity": f.Severity.String(), "field": f.Field, "excerpt": f.Excerpt,
			"method": method, "item_hash": hex.EncodeToString(digest[:]), "withheld": withhold, "allowed": allowed,
		}})
	}
	drift, pinEvs := inv.pinInstructions(inv.upstream(upstream), method, instructions, Suspicious(fs) && !allowed)
	evs = append(evs, pinEvs...)
	inv.mu.Unlock()
	inv.emit(evs)
	return !withhold && !(drift && inv.onDrift == DriftBlock)
}

// pinInstructions compares text, the instructions of u's result of
// method, with those u's pin holds for method. The first seen once u is
// pinned are pinned, unless poisoned (those are not shown, nor pinned):
// so are those of an upstream pinned before instructions were. Later
// instructions that differ are drift, reported once for each text; with
// DriftBlock ScreenInstructions does not show them, until Approve of
// AllTools (or Pin) pins them. A server that told the model one thing
// when approved can otherwise tell it another, in its system prompt,
// while every tool stays as pinned. Callers hold mu.
func (inv *Inventory) pinInstructions(u *upstream, method, text string, poisoned bool) (drift bool, evs []Event) {
	if u.pinned == nil || u.pinErr != nil {
		return false, nil
	}
	pinned, ok := u.pinned.Instructions[method]
	switch {
	case ok && pinned == text:
		delete(u.instr, method)
		return false, nil
	case ok:
		if had, seen := u.instr[method]; seen && had == text {
			return true, nil // reported
		}
		if u.instr == nil {
			u.instr = map[string]string{}
		}
		u.instr[method] = text
		pre, oldMid, newMid, post := textDelta(pinned, text)
		detail := map[string]any{
			"change": string(ToolChanged), "fields": []string{"instructions"}, "field": "/instructions", "method": method,
			"pinned_hash": sum([]byte(pinned)), "observed_hash": sum([]byte(text)),
			"diff":    "instructions of " + method + ":\n  - " + quoteDelta(pre, oldMid, post, maxEventDelta) + "\n  + " + quoteDelta(pre, newMid, post, maxEventDelta) + "\n",
			"blocked": inv.onDrift == DriftBlock,
		}
		if inv.onDrift == DriftBlock {
			detail["reason"] = fmt.Sprintf("the instructions of upstream %q (%s) changed since they were pinned; they are withheld until approved with \"sluice inventory approve %s\" (every change of the upstream)", u.name, method, u.name)
		}
		return true, []Event{{Type: EventDrift, Upstream: u.name, Detail: detail}}
	case poisoned:
		return false, nil
	}
	if stored, err := inv.store.Load(Pinned, u.name); err == nil && !samePin(u.pinned, stored) {
		// A newer pin (another replica's approval, its notice still to
		// come): the instructions join that one, not undo it.
		u.pinned, u.unsaved = stored, false
		evs = append(evs, inv.refresh(u.name)...)
		inv.publish()
		drift, more := inv.pinInstructions(u, method, text, poisoned)
		return drift, append(evs, more...)
	}
	pin := *u.pinned
	pin.Instructions = maps.Clone(u.pinned.Instructions)
	if pin.Instructions == nil {
		pin.Instructions = map[string]string{}
	}
	pin.Instructions[method] = text
	if err := inv.store.Save(Pinned, &pin); err != nil {
		// Not pinned: tried again at the next.
		return false, []Event{storeError(u.name, Pinned, err)}
	}
	u.pinned = &pin
	return false, []Event{{Type: EventPinned, Upstream: u.name, Detail: map[string]any{
		"hash": pin.Hash, "tools": len(pin.Tools), "instructions": method,
	}}}
}

// normalTemplate is URI template t with its literal text up to its first
// expression in the form ReadName puts a read's URI in
// (file://localhost/srv/{name} is file:///srv/{name}), so that a
// withheld template spelled otherwise than a client spells its reads
// still refuses them; t itself if there is no ReadName, or if that form
// would change the text's last character (an empty query dropped), which
// an expression may continue.
func (inv *Inventory) normalTemplate(t string) string {
	if inv.readName == nil {
		return t
	}
	head, rest := t, ""
	if i := strings.IndexByte(t, '{'); i >= 0 {
		head, rest = t[:i], t[i:]
	}
	n, ok := strings.CutPrefix(inv.readName("resource:"+head), "resource:")
	if !ok || n == "" || head == "" || n[len(n)-1] != head[len(head)-1] {
		return t
	}
	return n + rest
}

// Withheld reports whether a read named as the decision point names it
// (prompt:NAME for prompts/get, resource:URI for resources/read) must be
// refused because ScreenListed withheld that prompt or resource, or a
// resource template the URI may expand, from upstream; the decision's
// reason code is ReasonPoisoned.
func (inv *Inventory) Withheld(upstream, action string) (reason string, withheld bool) {
	// Made before the lock is taken: a URI is as long as a request, and
	// every read and listing takes the lock.
	normal := action
	if inv.readName != nil {
		normal = inv.readName(action)
	}
	inv.mu.Lock()
	l := inv.lists[upstream]
	if l == nil {
		inv.mu.Unlock()
		return "", false
	}
	if r, ok := l.withheld[action]; ok {
		inv.mu.Unlock()
		return r, true
	}
	if r, ok := l.withheld[normal]; ok && normal != action {
		inv.mu.Unlock()
		return r, true
	}
	if l.matchers == nil && len(l.templates) > 0 {
		for _, t := range slices.Sorted(maps.Keys(l.templates)) {
			l.matchers = append(l.matchers, newTemplateMatcher(t, l.templates[t]))
		}
	}
	matchers := l.matchers
	inv.mu.Unlock()

	uri, ok := strings.CutPrefix(action, "resource:")
	if !ok || len(matchers) == 0 {
		return "", false
	}
	uris := []string{uri}
	if n, _ := strings.CutPrefix(normal, "resource:"); n != uri {
		uris = append(uris, n) // another spelling of it, as a server reads it
	}
	budget := maxTemplateSearch
	for _, uri := range uris {
		for i := range matchers {
			if budget < 0 {
				return fmt.Sprintf("the URI is too long to check against the %d resource templates withheld from upstream %q for looking like tool poisoning "+
					"(%d bytes, each template searched; at most %d bytes in all)", len(matchers), upstream, len(uri), maxTemplateSearch), true
			}
			ok, searched := matchers[i].matches(uri)
			if ok {
				return matchers[i].reason, true
			}
			if searched {
				budget -= len(uri)
			}
		}
	}
	return "", false
}

// listing returns the listing state of upstream, creating it. Callers
// hold mu.
func (inv *Inventory) listing(upstream string) *listing {
	l := inv.lists[upstream]
	if l == nil {
		l = &listing{scans: map[[sha256.Size]byte][]Finding{}, reported: map[string]bool{}}
		inv.lists[upstream] = l
	}
	// Another upstream's tool mentioned is shadowing here as in a tool.
	foreign, own := inv.toolNames, []string(nil)
	if u := inv.ups[upstream]; u != nil {
		foreign, own = u.foreign, u.own
	}
	if !slices.Equal(foreign, l.foreign) || !slices.Equal(own, l.own) || l.fx == nil {
		l.foreign, l.own, l.fx = foreign, own, newForeignIndex(foreign, own)
		clear(l.scans)
	}
	return l
}

// scan returns the findings of item, a listed element of method, and its
// digest.
func (l *listing) scan(method string, item jsontext.Value, maxDesc int) ([]Finding, [sha256.Size]byte) {
	digest := sha256.Sum256(append([]byte(method+"\x00"), item...))
	if fs, ok := l.scans[digest]; ok {
		return fs, digest
	}
	fs := scanItem(item, ScanOptions{MaxDescription: maxDesc}, l.fx)
	if len(l.scans) >= maxListed {
		clear(l.scans)
	}
	l.scans[digest] = fs
	return fs, digest
}

// report reports whether the finding event of key is still to be sent,
// and marks it sent. What was sent is forgotten past 4×maxListed keys, to
// be sent again once.
func (l *listing) report(key string) bool {
	if l.reported[key] {
		return false
	}
	if len(l.reported) >= 4*maxListed {
		clear(l.reported)
	}
	l.reported[key] = true
	return true
}

// remember records a withheld item in *m, up to maxListed of them: past
// that an item is still withheld from its list, but a read of it is no
// longer refused for it.
func (l *listing) remember(m *map[string]string, name, reason string) {
	if *m == nil {
		*m = map[string]string{}
	}
	if _, had := (*m)[name]; had || len(*m) < maxListed {
		(*m)[name] = reason
		if m == &l.templates {
			l.matchers = nil
		}
	}
}

// identMembers name an item rather than describe it: identifiers and
// addresses that benign servers fill with words like secret and key
// (file:///home/me/.ssh/config is a resource), so only invisible
// characters count there, as in a tool's name.
var identMembers = []string{"name", "uri", "uriTemplate", "mimeType"}

// scanItem scans a listed item: as Scan does a tool, with every member
// but the identifiers (identMembers) read as text or JSON, _meta and
// icons included (an icon's data: URI as Scan reads it). Members are matched whatever their case: a client that reads
// "Description" as the description (Go's encoding/json) shows it to the
// model.
func scanItem(item jsontext.Value, opts ScanOptions, fx *foreignIndex) []Finding {
	s := scanner{opts: opts, foreign: fx}
	s.item("", item)
	maxLen := opts.MaxDescription
	if maxLen == 0 {
		maxLen = DefaultMaxDescription
	}
	for _, f := range []string{"description", "instructions"} {
		if n := len([]rune(stringMember(item, f))); maxLen > 0 && n > maxLen {
			s.add("long_description", SeverityLow, at("/"+f), fmt.Sprintf("%d characters, more than %d", n, maxLen))
		}
	}
	slices.SortStableFunc(s.found, func(a, b Finding) int { return int(b.Severity - a.Severity) })
	return s.found
}

// item scans the members of an object at base (see scanItem); a prompt's
// arguments are items themselves.
func (s *scanner) item(base string, obj jsontext.Value) {
	s.itemFrom(base, jsontext.NewDecoder(bytes.NewReader(obj)))
}

// itemFrom scans the object d is at, reading the items among its
// arguments from d as well: read as values of their own, as they were,
// each level of arguments nested in arguments was copied and decoded
// again, the depth times the item's size. Paths are clipped to what a
// finding reports (maxFieldName), so that deep items do not copy theirs
// for every member either. It reports false if d could not be read.
func (s *scanner) itemFrom(base string, d *jsontext.Decoder) bool {
	if len(base) > maxFieldName {
		base = clip(base, maxFieldName)
	}
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
		return false
	}
	for d.PeekKind() != '}' {
		tok, err := d.ReadToken()
		if err != nil {
			return false
		}
		key := tok.String() // before the decoder moves on
		field := base + "/" + escapePointer(key)
		s.text(at(field+"#name"), key, true)
		if strings.EqualFold(key, "arguments") && d.PeekKind() == '[' {
			if _, err := d.ReadToken(); err != nil {
				return false
			}
			for n := 0; d.PeekKind() != ']'; n++ {
				p := fmt.Sprintf("%s/%d", field, n)
				if d.PeekKind() == '{' {
					if !s.itemFrom(p, d) {
						return false
					}
					continue
				}
				arg, err := d.ReadValue()
				if err != nil {
					return false
				}
				s.json(p, arg)
			}
			if _, err := d.ReadToken(); err != nil {
				return false
			}
			continue
		}
		v, err := d.ReadValue()
		if err != nil {
			return false
		}
		switch {
		case slices.ContainsFunc(identMembers, func(m string) bool { return strings.EqualFold(m, key) }):
			if v.Kind() == '"' {
				s.invisible(at(field), unquote(v))
				continue
			}
			s.json(field, v)
		default:
			s.json(field, v)
		}
	}
	_, err := d.ReadToken()
	return err == nil
}

// stringMember returns the string member key of obj, or "".
func stringMember(obj jsontext.Value, key string) string {
	d := jsontext.NewDecoder(strings.NewReader(string(obj)))
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
		return ""
	}
	for d.PeekKind() != '}' {
		tok, err := d.ReadToken()
		if err != nil {
			return ""
		}
		k := tok.String() // before the decoder moves on
		v, err := d.ReadValue()
		if err != nil {
			return ""
		}
		if k == key && v.Kind() == '"' {
			return unquote(v)
		}
	}
	return ""
}

func unquote(v jsontext.Value) string {
	tok, err := jsontext.NewDecoder(strings.NewReader(string(v))).ReadToken()
	if err != nil {
		return ""
	}
	return tok.String()
}

// matchTemplate reports whether uri could be an expansion of the RFC 6570
// URI template t (see templateMatcher.matches).
func matchTemplate(t, uri string) bool {
	m := newTemplateMatcher(t, "")
	ok, _ := m.matches(uri)
	return ok
}
