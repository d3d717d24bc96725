package inventory

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// ReasonDrift is the decision reason for a call that Blocked holds back.
const ReasonDrift = "inventory_drift"

// AllTools, as the tool of Approve, approves every change of an upstream.
const AllTools = "*"

// Pinning says when an upstream's inventory is pinned.
type Pinning int

const (
	// PinFirstSeen pins the first complete tools/list of an upstream.
	PinFirstSeen Pinning = iota
	// PinManually pins only on Pin (sluice inventory pin). Until then,
	// with DriftBlock, every tool of the upstream is blocked.
	PinManually
)

// DriftAction says what happens to a tool that drifted from its pin.
type DriftAction int

const (
	// DriftBlock blocks drifted, new, removed and unknown tools of a
	// pinned upstream until they are approved.
	DriftBlock DriftAction = iota
	// DriftWarn only reports drift events; nothing is blocked.
	DriftWarn
)

func (p Pinning) String() string {
	if p == PinManually {
		return "manual"
	}
	return "first"
}

// MarshalText writes "first" or "manual".
func (p Pinning) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText reads "first" (or "") and "manual", for config files.
func (p *Pinning) UnmarshalText(b []byte) error {
	switch string(b) {
	case "", "first":
		*p = PinFirstSeen
	case "manual":
		*p = PinManually
	default:
		return fmt.Errorf("inventory: pinning %q: want first or manual", b)
	}
	return nil
}

func (a DriftAction) String() string {
	if a == DriftWarn {
		return "warn"
	}
	return "block"
}

// MarshalText writes "block" or "warn".
func (a DriftAction) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText reads "block" (or "") and "warn", for config files.
func (a *DriftAction) UnmarshalText(b []byte) error {
	switch string(b) {
	case "", "block":
		*a = DriftBlock
	case "warn":
		*a = DriftWarn
	default:
		return fmt.Errorf("inventory: on_drift %q: want block or warn", b)
	}
	return nil
}

// Options configures New. The zero value of every field but Dir is a
// documented default.
type Options struct {
	// ReadName, if set, puts a read's name (resource:URI, prompt:NAME)
	// in the form the gateway's policy compares reads in (the gateway
	// gives policy.NormalName): a resource withheld from its listing is
	// then refused under every spelling of its URI that form makes one
	// (file:///srv/./x, FILE:///srv/x, file://localhost/srv/x), which a
	// server reads as the same. Nil compares them as written.
	ReadName func(string) string
	// Dir is the gateway's data directory. Snapshots are kept in
	// Dir/inventory (see Store) and, unless Key or KeyFile is set, the
	// signing key in Dir/signing-key.pem, generated on first run.
	Dir string
	// KeyFile, if set, is the Ed25519 signing key (PEM PKCS #8) to use
	// instead of the one in Dir. It must exist; it is never created.
	KeyFile string
	// Key, if set, is the signing key, and KeyFile is ignored.
	Key ed25519.PrivateKey
	// Pinning: zero is PinFirstSeen.
	Pinning Pinning
	// OnDrift: zero is DriftBlock.
	OnDrift DriftAction
	// MaxDescription is passed to Scan: zero means
	// DefaultMaxDescription, negative disables the length check.
	MaxDescription int
	// Events receives the inventory's events. Nil discards them.
	Events EventSink
	// Now is the clock for snapshot times. Nil means time.Now.
	Now func() time.Time
	// OnPoisonedListing: zero is ListingWithhold (see ScreenListed).
	OnPoisonedListing ListingAction
	// AllowedListings are the item_hash values (hex SHA-256, from
	// EventPoisoning events) of listed items and instructions an operator
	// judged false alarms: shown whatever their findings, as long as they
	// are those exact bytes.
	AllowedListings []string
	// Backend, if set, keeps the snapshots instead of files in
	// Dir/inventory: OpenRedisBackend shares them between replicas, which
	// then need the same signing key (KeyFile or Key). Run Watch to apply
	// the other replicas' changes.
	Backend Backend
}

// Errors that Approve, Pin and Diff return.
var (
	ErrUnknownUpstream  = errors.New("inventory: no inventory of this upstream")
	ErrNotObserved      = errors.New("inventory: no tools/list of this upstream seen yet")
	ErrNotPinned        = errors.New("inventory: upstream has no valid pinned inventory; pin it as a whole")
	ErrNothingToApprove = errors.New("inventory: tool has no change to approve")
	// ErrStale: the version to approve is no longer the observed one.
	ErrStale = errors.New("inventory: tool changed again since the version to approve")
	// ErrStoreUnavailable: a pin or approval could not be written (a
	// full disk, an unreachable Redis); nothing changed, try again.
	ErrStoreUnavailable = errors.New("the inventory store cannot be written now")
)

// Inventory keeps the tool inventories of the gateway's upstreams: it
// snapshots every tools/list, pins, detects drift, blocks drifted tools,
// scans for poisoning and reports name collisions across upstreams.
//
// Blocked, Hash and RiskFactors read an immutable view published after
// each change, without locks, so they are cheap enough for every call.
// All methods are safe for concurrent use.
type Inventory struct {
	store     *Store
	backend   Backend
	pinning   Pinning
	onDrift   DriftAction
	maxDesc   int
	onListing ListingAction
	readName  func(string) string        // Options.ReadName
	allowed   map[[sha256.Size]byte]bool // AllowedListings
	events    EventSink
	now       func() time.Time

	view atomic.Pointer[view]

	mu         sync.Mutex // guards the fields below
	ups        map[string]*upstream
	collisions map[string]bool // collision keys already reported
	toolNames  []string        // every tool name served, sorted
	lists      map[string]*listing
}

// upstream is the mutable state of one upstream, guarded by Inventory.mu.
type upstream struct {
	name   string
	pinned *Snapshot
	pinErr error // the stored pin failed verification; pinned is nil
	// partial: the pin was made from a listing abandoned unfinished
	// (pinAbandoned); the next complete list completes it. In memory: a
	// restart forgets it, and the missing tools are then new.
	partial bool
	// unsaved: pinned could not be written (a full disk, a store that did
	// not answer) and holds in memory only; a restart would forget it and
	// pin whatever it saw first. Later listings write it again (keepPin),
	// at most once every retrySaveEvery (retrySaveAt).
	unsaved     bool
	retrySaveAt time.Time
	// unpinned is why a list of an upstream not pinned yet was rejected
	// (too many tools or bytes): it blocks every tool until a pin.
	unpinned error
	observed *Snapshot
	pages    pages
	// lastList is the SHA-256 of the raw result that made observed, if it
	// was a single page.
	lastList [sha256.Size]byte
	// quiet are the capability sets other than observed's whose last
	// single-page list, lastList, had nothing to add to observed
	// (driftsAs), so that clients of several sets taking turns are not
	// each a write of the store. Emptied when the pin changes (refresh).
	quiet map[string][sha256.Size]byte

	changes map[string]ToolChange // tool -> drift from pinned
	// seen are the drifts observed since the pin that no approval has
	// answered: a tool whose later list matches its pin again stays
	// blocked, since clients were shown the changed version meanwhile
	// (a server can serve one session a poisoned list and the next the
	// pinned one). Kept in memory, by the replica that saw them, and
	// bounded (remember): an upstream serving ever new names, listing
	// after listing, would otherwise grow it without limit.
	seen     map[string]ToolChange
	findings map[string][]Finding // tool -> scan of its current version
	base     map[string][]Finding // tool hash -> Scan without foreign tools
	reported map[string]bool      // drift and finding events already sent
	// cross caches the cross-server references by tool hash, valid while
	// the other upstreams' tool names are foreign.
	cross   map[string][]Finding
	foreign []string
	own     []string // its tool names in lower case, sorted, as the cross index has them
	// instr are the instructions last listed, by method, that differ
	// from the pin's (pinInstructions): what Approve of AllTools pins.
	instr map[string]string
}

// current is the snapshot that describes what the upstream serves now.
func (u *upstream) current() *Snapshot {
	if u.observed != nil {
		return u.observed
	}
	return u.pinned
}

// view is what Blocked, Hash and RiskFactors read.
type view struct {
	ups map[string]*upstreamView
}

type upstreamView struct {
	hash     string
	blockAll string            // if set, every tool is blocked with it
	blocked  map[string]string // tool -> reason
	allowed  map[string]bool   // if not nil, tools outside it are blocked
	findings map[string][]Finding
	pinned   *Snapshot // with DriftBlock, what ScreenTools shows
}

// New opens the inventory in opts.Dir, loading and verifying the stored
// snapshots. A stored snapshot that fails verification does not make New
// fail: it is reported as an EventSnapshotRejected, and a rejected pin
// blocks the upstream (with DriftBlock) until it is pinned again.
func New(opts Options) (*Inventory, error) {
	if opts.Dir == "" {
		return nil, errors.New("inventory: Options.Dir is empty; set the gateway's data directory")
	}
	allowed, err := allowedHashes(opts.AllowedListings)
	if err != nil {
		return nil, err
	}
	key := opts.Key
	if key == nil {
		var err error
		if opts.KeyFile != "" {
			key, err = LoadKey(opts.KeyFile)
		} else {
			key, err = LoadOrCreateKey(filepath.Join(opts.Dir, KeyFileName))
		}
		if err != nil {
			return nil, err
		}
	}
	be := opts.Backend
	if be == nil {
		be = FileBackend(filepath.Join(opts.Dir, "inventory"))
	}
	inv := &Inventory{
		store:      NewBackendStore(be, key),
		backend:    be,
		pinning:    opts.Pinning,
		onDrift:    opts.OnDrift,
		maxDesc:    opts.MaxDescription,
		onListing:  opts.OnPoisonedListing,
		readName:   opts.ReadName,
		allowed:    allowed,
		lists:      map[string]*listing{},
		events:     opts.Events,
		now:        opts.Now,
		ups:        map[string]*upstream{},
		collisions: map[string]bool{},
	}
	if inv.now == nil {
		inv.now = time.Now
	}
	var evs []Event
	for _, kind := range []Kind{Pinned, Observed} {
		names, err := inv.store.List(kind)
		if err != nil {
			return nil, err
		}
		for _, name := range names {
			u := inv.upstream(name)
			snap, err := inv.store.Load(kind, name)
			if err != nil {
				evs = append(evs, Event{Type: EventSnapshotRejected, Upstream: name, Detail: map[string]any{
					"kind": string(kind), "path": inv.store.Path(kind, name), "error": err.Error(),
				}})
				if kind == Pinned {
					u.pinErr = err
				}
				continue
			}
			if kind == Pinned {
				u.pinned = snap
			} else {
				u.observed = snap
			}
		}
	}
	// A crash between saving the observed list and pinning it leaves an
	// observed snapshot without a pin.
	for _, name := range slices.Sorted(maps.Keys(inv.ups)) {
		if u := inv.ups[name]; u.observed != nil && inv.autoPin(u) {
			pinEvs, _ := inv.setPin(u, u.observed)
			evs = append(evs, pinEvs...)
		}
	}
	// What the stored state implies was reported before the restart: mark
	// it so, rather than repeat every drift and finding event.
	inv.refresh("")
	inv.mu.Lock()
	inv.publish()
	inv.mu.Unlock()
	inv.emit(evs)
	return inv, nil
}

// upstream returns the state of name, creating it. Callers hold mu or
// have not yet shared inv.
func (inv *Inventory) upstream(name string) *upstream {
	u := inv.ups[name]
	if u == nil {
		u = &upstream{name: name, base: map[string][]Finding{}, reported: map[string]bool{}}
		inv.ups[name] = u
	}
	return u
}

// KeyID returns the id of the key that signs the snapshots.
func (inv *Inventory) KeyID() string { return inv.store.KeyID() }

// ObserveTools takes a tools/list result of upstream (the JSON-RPC result
// member). Pages of a paginated list are collected until the page without
// nextCursor; the complete list becomes the observed snapshot. The work is
// synchronous and proportional to the list; file writes happen only when
// the inventory changed. A result that cannot be read is reported as an
// EventInvalidList and otherwise ignored. Not told which page result is,
// it takes it for the next page of the listing being collected, if any;
// callers that know the request use ObserveToolsPage.
func (inv *Inventory) ObserveTools(upstream string, result jsontext.Value) {
	inv.observeTools(upstream, result, nil, "")
}

// ObserveToolsPage is ObserveTools told the cursor of the request result
// answers: "" for the first page, which starts a listing. A page asked
// for with the nextCursor of the last page collected continues that
// listing. Any other (a later page asked for alone, with a cursor given
// in another listing or of the client's making) is compared with the pin
// tool by tool, a tool changed or added there blocked as on any page, but
// it joins no listing and concludes nothing: the tools it does not show
// are not taken as removed, and it pins nothing.
func (inv *Inventory) ObserveToolsPage(upstream string, result jsontext.Value, cursor string) {
	inv.observeTools(upstream, result, &cursor, "")
}

// ObserveToolsPageWith is ObserveToolsPage told the capabilities the
// client that asked declared (clientCaps: those of its initialize, or of
// its 2026-07-28 request's _meta; nil when none): a listing is compared
// with the names pinned under the client's capability set (CapabilitySet),
// and a set not pinned yet has its new names pinned on first sight, as the
// first listing of the upstream was (see capsets.go). A tool of the pin
// that differs is drift whatever the client declared. ObserveTools and
// ObserveToolsPage take the client to declare no capabilities.
func (inv *Inventory) ObserveToolsPageWith(upstream string, result jsontext.Value, cursor string, clientCaps jsontext.Value) {
	inv.observeTools(upstream, result, &cursor, CapabilitySet(clientCaps))
}

func (inv *Inventory) observeTools(upstream string, result jsontext.Value, cursor *string, set string) {
	// Most lists repeat the previous one byte for byte; recognizing that
	// is much cheaper than canonicalizing every schema again.
	digest := sha256.Sum256(result)
	if inv.repeated(upstream, digest, set) {
		return
	}
	page, err := parsePage(result)
	if err != nil {
		inv.emit(inv.unreadable(upstream, result, err, cursor, set))
		return
	}
	inv.emit(inv.observe(upstream, page, digest, cursor, set))
}

// unreadable takes a list that cannot be read as a whole (a title or
// description that is not a string) as the list of the tools in it that
// can be read alone, and reports it: a client may read the list all the
// same. A pinned tool changed there is drift, one that cannot be read is
// missing from it (removed), and an upstream not pinned yet is pinned
// with the readable tools, if any (ScreenTools leaves the others out;
// the transports refuse some such lists whole, e.g. a tool without a
// name, and then the client was shown nothing of it); otherwise a
// server could keep its upstream unpinned, and its changes no drift, by
// listing one odd tool.
func (inv *Inventory) unreadable(upstream string, result jsontext.Value, err error, cursor *string, set string) []Event {
	evs := []Event{invalidList(upstream, err)}
	var raw struct {
		Tools      []jsontext.Value `json:"tools"`
		NextCursor string           `json:"nextCursor"`
	}
	if json.Unmarshal(result, &raw) != nil {
		return evs
	}
	page := Page{NextCursor: raw.NextCursor}
	count := map[string]int{}
	for _, it := range raw.Tools {
		if p, err := parsePage(jsontext.Value(`{"tools":[` + string(it) + `]}`)); err == nil && len(p.Tools) == 1 {
			page.Tools = append(page.Tools, p.Tools[0])
			count[p.Tools[0].Name]++
		}
	}
	// A name listed twice is neither version: it is missing.
	page.Tools = slices.DeleteFunc(page.Tools, func(t Tool) bool { return count[t.Name] > 1 })
	if len(page.Tools) == 0 {
		// Nothing to compare or pin: a pin of nothing would block every
		// tool of a server whose one answer was broken.
		return evs
	}
	return append(evs, inv.observe(upstream, page, [sha256.Size]byte{}, cursor, set)...)
}

// rejected handles a page of a list the inventory rejects (past MaxTools
// or MaxListBytes): compared with the pin (rejectedDrift), or, on an
// upstream not pinned yet, every tool of the upstream is blocked until a
// list is pinned. The client may be shown such a list; were it simply
// ignored, a server could keep its upstream unpinned, its tools callable
// and its changes no drift, by listing too much. Callers hold mu.
func (inv *Inventory) rejected(u *upstream, page Page, err error) []Event {
	if u.pinned == nil && u.pinErr == nil && u.unpinned == nil {
		u.unpinned = err
		defer inv.publish()
	}
	return inv.rejectedDrift(u, page, err)
}

// rejectedDrift compares the pinned tools on a page of a list the
// inventory rejects (past MaxTools or MaxListBytes) with the pin: the
// gateway may have passed that list on, so a pinned tool changed there is
// drift seen, as on any page. Tools not in the pin are blocked already
// (Blocked), and are not remembered, so that such lists cannot grow the
// inventory. Callers hold mu.
func (inv *Inventory) rejectedDrift(u *upstream, page Page, err error) []Event {
	evs := []Event{invalidList(u.name, err)}
	if u.pinned == nil {
		return evs
	}
	pinned := Page{}
	for _, t := range page.Tools {
		if _, ok := u.pinned.Tool(t.Name); ok {
			pinned.Tools = append(pinned.Tools, t)
		}
	}
	return append(evs, inv.pageDrift(u, pinned, "")...)
}

// repeated reports whether result is the same single-page list that was
// last recorded for upstream, with nothing else to do about it.
func (inv *Inventory) repeated(upstream string, digest [sha256.Size]byte, set string) bool {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	u := inv.ups[upstream]
	return u != nil && u.observed != nil && u.lastList == digest && (u.observed.ListedWith == set || u.quiet[set] == digest) &&
		u.pages.tools == nil && !inv.autoPin(u) && !inv.retrySave(u)
}

// maxQuiet bounds upstream.quiet: the sets are the clients' choice.
const maxQuiet = 64

// quietAs records that the single-page list digest, listed to a client of
// capability set set, has nothing to add to the list held. Callers hold
// mu.
func (u *upstream) quietAs(set string, digest [sha256.Size]byte) {
	if u.quiet == nil || len(u.quiet) >= maxQuiet {
		u.quiet = map[string][sha256.Size]byte{}
	}
	u.quiet[set] = digest
}

// driftsAs reports whether snap, a list of the same tools as u.observed
// listed to a client of another capability set, has drift that u has not
// seen: a tool pinned under its set missing. Callers hold mu.
func (inv *Inventory) driftsAs(u *upstream, snap *Snapshot) bool {
	if u.pinned == nil {
		return false
	}
	for _, c := range diffSnapshots(u.pinned, snap) {
		if old, ok := u.seen[c.Tool]; !ok || old.Kind != c.Kind || old.ObservedHash != c.ObservedHash || old.PinnedHash != c.PinnedHash {
			return true
		}
	}
	return false
}

// retrySaveEvery is how often a pin held in memory only (upstream.unsaved)
// is written again, as listings come: a full disk is not tried, and its
// failure logged, at every tools/list.
const retrySaveEvery = 10 * time.Second

// retrySave reports whether u's pin, held in memory only, is due to be
// written again. Callers hold mu.
func (inv *Inventory) retrySave(u *upstream) bool {
	return u.unsaved && u.pinned != nil && u.pinErr == nil && !inv.now().Before(u.retrySaveAt)
}

// observe merges a page, asked for with cursor (nil: not known) by a
// client of capability set set, and, when the list is complete, records
// it.
func (inv *Inventory) observe(upstream string, page Page, digest [sha256.Size]byte, cursor *string, set string) []Event {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	u := inv.upstream(upstream)
	if cursor != nil && *cursor != "" && (!u.pages.continues(*cursor) || u.pages.set != set) {
		// A page asked for alone (ObserveToolsPage), or by a client of
		// another capability set than the listing's first page: it must
		// not have its names pinned under the listing's set.
		if len(page.Tools) > MaxTools {
			return inv.rejectedDrift(u, page, fmt.Errorf("%w: %d tools, more than %d", ErrInvalidList, len(page.Tools), MaxTools))
		}
		return inv.pageDrift(u, page, set)
	}
	var evs []Event
	if cursor != nil && *cursor == "" && u.pages.tools != nil {
		// A first page: the listing being collected was abandoned.
		if inv.autoPin(u) {
			evs = inv.pinAbandoned(u)
		}
		u.pages.tools = nil
	}
	single := u.pages.tools == nil && page.NextCursor == ""
	u.lastList = [sha256.Size]byte{}
	if len(page.Tools) > MaxTools {
		u.pages.tools = nil
		return inv.rejected(u, page, fmt.Errorf("%w: %d tools, more than %d", ErrInvalidList, len(page.Tools), MaxTools))
	}
	if inv.autoPin(u) && u.pages.restarts(page) {
		evs = append(evs, inv.pinAbandoned(u)...)
	}
	if u.pages.tools == nil || u.pages.restarts(page) {
		u.pages.set = set
	}
	tools, done, err := u.pages.add(page)
	if err != nil {
		return append(evs, inv.rejected(u, page, err)...)
	}
	if !done {
		return append(evs, inv.pageDrift(u, page, set)...)
	}
	if single {
		u.lastList = digest
	}
	snap, err := newSnapshot(upstream, tools, inv.now())
	if err != nil {
		return append(evs, invalidList(upstream, err))
	}
	snap.ListedWith = set
	evs = append(evs, inv.adoptUnknown(u, snap)...)
	if u.partial {
		// The first complete list after a pin of an unfinished one: its
		// tools on the pages no one had read join the pin.
		evs = append(evs, inv.completePin(u, snap)...)
	}
	if u.observed != nil && u.observed.Hash == snap.Hash && !inv.autoPin(u) && u.observed.ListedWith != set {
		// The tools of the list held, listed to a client of another
		// capability set (clients of a server that lists the same to all
		// take turns): its set pinned if new, and nothing written unless
		// that set finds drift the list held did not (a tool it was
		// pinned with missing).
		evs = append(evs, inv.pinSet(u, snap)...)
		if !inv.driftsAs(u, snap) {
			if single {
				u.quietAs(set, digest)
			}
			set = u.observed.ListedWith
		}
	}
	if u.observed != nil && u.observed.Hash == snap.Hash && u.observed.ListedWith == set && !inv.autoPin(u) {
		if inv.retrySave(u) {
			evs = append(evs, inv.keepPin(u)...)
		}
		if len(evs) > 0 {
			evs = append(evs, inv.refresh(upstream)...)
			inv.publish()
		}
		return evs
	}
	u.observed = snap
	// The pin first: a replica starting on a store that lost it would
	// otherwise pin the list saved next, and one that loaded the list
	// before the pin of its capability set would take its new tools for
	// drift.
	evs = append(evs, inv.keepPin(u)...)
	if !inv.autoPin(u) {
		evs = append(evs, inv.pinSet(u, snap)...)
	}
	if err := inv.store.Save(Observed, snap); err != nil {
		evs = append(evs, storeError(upstream, Observed, err))
	}
	if inv.autoPin(u) {
		pinEvs, _ := inv.setPin(u, snap)
		evs = append(evs, pinEvs...)
	}
	evs = append(evs, inv.refresh(upstream)...)
	inv.publish()
	return evs
}

// adoptUnknown pins the unknown members (Tool.Unknown) of the tools of a
// pin made before they were kept, as snap, a complete listing, has them:
// each tool of the pin that has none (nil) and that snap lists as pinned
// otherwise takes snap's version. So an upgrade raises no drift for the
// tools pinned before, and from then on a change of such a member is
// drift. A tool that differs otherwise stays as pinned, drift as ever.
// Callers hold mu.
func (inv *Inventory) adoptUnknown(u *upstream, snap *Snapshot) []Event {
	if u.pinned == nil || u.pinErr != nil {
		return nil
	}
	var tools []Tool
	var adopted []string
	for i, p := range u.pinned.Tools {
		if p.Unknown != nil {
			continue
		}
		o, ok := snap.Tool(p.Name)
		if !ok || !matches(p, o) {
			continue
		}
		if tools == nil {
			tools = slices.Clone(u.pinned.Tools)
		}
		tools[i] = o
		adopted = append(adopted, p.Name)
	}
	if tools == nil {
		return nil
	}
	pin, err := newSnapshot(u.name, tools, inv.now())
	if err != nil {
		return []Event{invalidList(u.name, err)}
	}
	pin.Sets, pin.Instructions = cloneSets(u.pinned.Sets), u.pinned.Instructions
	if err := inv.store.Save(Pinned, pin); err != nil {
		// Held in memory all the same: saved with the next pin or approval.
		u.pinned = pin
		return []Event{storeError(u.name, Pinned, err)}
	}
	u.pinned = pin
	var changed []string // those whose hash now covers unknown members
	for _, t := range tools {
		if slices.Contains(adopted, t.Name) && t.unknown() != nil {
			changed = append(changed, t.Name)
		}
	}
	return []Event{{Type: EventPinned, Upstream: u.name, Detail: map[string]any{
		"hash": pin.Hash, "tools": len(pin.Tools), "unknown_members_adopted": len(adopted), "with_unknown_members": changed,
	}}}
}

// pinAbandoned pins, under PinFirstSeen, the tools collected from a
// listing of an upstream not pinned yet that was abandoned before its last
// page (the page just come starts another): they are what clients were
// shown first. Without it a server answering every listing with a
// nextCursor, to clients that read one page, would never be pinned, and
// could change those tools at will. The pin is partial: the first
// complete list adds the tools of the pages no one read (completePin).
// Callers hold mu.
func (inv *Inventory) pinAbandoned(u *upstream) []Event {
	tools := make([]Tool, 0, len(u.pages.tools))
	for _, t := range u.pages.tools {
		tools = append(tools, t)
	}
	snap, err := newSnapshot(u.name, tools, inv.now())
	if err != nil {
		return []Event{invalidList(u.name, err)}
	}
	snap.ListedWith = u.pages.set
	var evs []Event
	u.observed = snap
	if err := inv.store.Save(Observed, snap); err != nil {
		evs = append(evs, storeError(u.name, Observed, err))
	}
	pinEvs, ours := inv.setPin(u, snap)
	evs = append(evs, pinEvs...)
	u.partial = ours
	evs = append(evs, inv.refresh(u.name)...)
	inv.publish()
	return evs
}

// completePin adds to a partial pin (pinAbandoned) the tools of snap, the
// first complete list since, that it does not name; a tool it names that
// differs is drift as ever. Callers hold mu.
func (inv *Inventory) completePin(u *upstream, snap *Snapshot) []Event {
	u.partial = false
	if u.pinned == nil {
		return nil
	}
	tools := slices.Clone(u.pinned.Tools)
	for _, t := range snap.Tools {
		if _, ok := u.pinned.Tool(t.Name); !ok {
			tools = append(tools, t)
		}
	}
	if len(tools) == len(u.pinned.Tools) {
		return nil
	}
	pin, err := newSnapshot(u.name, tools, inv.now())
	if err != nil {
		return []Event{invalidList(u.name, err)}
	}
	if sets := cloneSets(u.pinned.Sets); sets != nil {
		sets[snap.ListedWith] = addNames(sets[snap.ListedWith], snap.toolNames()...)
		pin.Sets = sets
	}
	pin.Instructions = u.pinned.Instructions
	if err := inv.store.Save(Pinned, pin); err != nil {
		return []Event{storeError(u.name, Pinned, err)}
	}
	u.pinned = pin
	u.unsaved = false
	return []Event{{Type: EventPinned, Upstream: u.name, Detail: map[string]any{
		"hash": pin.Hash, "tools": len(pin.Tools), "first_seen": true, "completed": true,
	}}}
}

// pageDrift compares a page of an unfinished list with the pin as it
// comes: a tool changed or added there is blocked at once, as drift seen
// (upstream.seen), rather than when the last page arrives, which a
// server need never send while clients read the first. Callers hold mu.
func (inv *Inventory) pageDrift(u *upstream, page Page, set string) []Event {
	if u.pinned == nil {
		return nil
	}
	changed, dropped := false, 0
	for _, t := range page.Tools {
		p, ok := u.pinned.Tool(t.Name)
		if ok && matches(p, t) {
			continue
		}
		if !ok && inv.mayPinSet(u, set) {
			// New under a capability set whose names are pinned on first
			// sight, when its listing completes (pinSet); blocked as
			// outside the pin meanwhile.
			continue
		}
		c := ToolChange{Tool: t.Name, Kind: ToolAdded, ObservedHash: t.Hash}
		if ok {
			c.Kind, c.PinnedHash, c.Fields = ToolChanged, p.Hash, diffTool(p, t)
		}
		if old, had := u.seen[t.Name]; had && old.ObservedHash == c.ObservedHash {
			continue
		}
		if !u.remember(c) {
			dropped++
			continue
		}
		changed = true
	}
	var evs []Event
	if dropped > 0 {
		evs = append(evs, invalidList(u.name, fmt.Errorf("%w: %d tools not in the pin past the %d drifted tools remembered; they stay blocked as tools outside the pin",
			ErrInvalidList, dropped, u.seenLimit())))
	}
	if !changed {
		return evs
	}
	evs = append(evs, inv.refresh(u.name)...)
	inv.publish()
	return evs
}

// seenLimit is how many drifted tools u.seen holds before it stops
// remembering tools that are not in the pin: MaxTools of them, besides
// the pinned tools.
func (u *upstream) seenLimit() int {
	n := MaxTools
	if u.pinned != nil {
		n += len(u.pinned.Tools)
	}
	return n
}

// remember records c in u.seen, unless c is a tool not in the pin and
// u.seen is full (seenLimit). A change of a pinned tool is always
// recorded, so seen holds at most seenLimit plus the pinned tools. What a
// tool not remembered loses: with DriftBlock it is blocked all the same,
// as a tool outside the pin (with that reason rather than "new since the
// pin"), but cannot be approved alone until a complete list has it; with
// DriftWarn nothing. Callers hold mu.
func (u *upstream) remember(c ToolChange) bool {
	if _, had := u.seen[c.Tool]; !had && c.Kind == ToolAdded && len(u.seen) >= u.seenLimit() {
		return false
	}
	if u.seen == nil {
		u.seen = map[string]ToolChange{}
	}
	u.seen[c.Tool] = c
	return true
}

func invalidList(upstream string, err error) Event {
	return Event{Type: EventInvalidList, Upstream: upstream, Detail: map[string]any{"error": err.Error()}}
}

// autoPin reports whether u is to be pinned on its next complete list.
func (inv *Inventory) autoPin(u *upstream) bool {
	return u.pinned == nil && u.pinErr == nil && inv.pinning == PinFirstSeen
}

// setPin pins snap, a listing, as u's first pin, its names as those of
// its capability set. It reports whether the pin is snap's (not another
// writer's). Callers hold mu.
func (inv *Inventory) setPin(u *upstream, snap *Snapshot) ([]Event, bool) {
	ev := Event{Type: EventPinned, Upstream: u.name, Detail: map[string]any{
		"hash": snap.Hash, "tools": len(snap.Tools), "first_seen": true, "capability_set": snap.ListedWith,
	}}
	snap = snap.withSets(map[string][]string{snap.ListedWith: snap.toolNames()})
	kept, err := inv.store.SaveFirst(Pinned, snap)
	var bad *LoadError
	switch {
	case errors.As(err, &bad):
		// Another writer's pin is kept, and does not verify: block as a
		// rejected pin found at start would.
		u.pinned, u.pinErr, u.unsaved = nil, err, false
		return []Event{{Type: EventSnapshotRejected, Upstream: u.name, Detail: map[string]any{
			"kind": string(Pinned), "path": bad.Path, "error": err.Error(),
		}}}, false
	case err != nil:
		// Pin in memory anyway: the gateway must not run unpinned because
		// the disk is full; later listings write it again (keepPin), and
		// so does a pin or approval.
		u.pinned, u.pinErr = snap, nil
		u.unsaved, u.retrySaveAt = true, inv.now().Add(retrySaveEvery)
		return []Event{storeError(u.name, Pinned, err), ev}, true
	case kept != snap:
		// Another replica pinned the upstream first: its pin is the pin,
		// and what this one saw is compared with it.
		u.pinned, u.pinErr, u.unsaved = kept, nil, false
		return nil, false
	}
	u.pinned, u.pinErr, u.seen, u.unpinned = snap, nil, nil, nil
	u.unsaved = false
	return []Event{ev}, true
}

// mayPinSet reports whether the names of a listing of capability set set
// not in u's pin are pinned on first sight: pinning is PinFirstSeen, and
// the pin keeps capability sets (not one made before they were), has
// not pinned set, and has room for one (setRoom; pinSet tells by the
// set's list). Callers hold mu.
func (inv *Inventory) mayPinSet(u *upstream, set string) bool {
	return inv.pinning == PinFirstSeen && u.pinned != nil && u.pinErr == nil && !u.partial &&
		u.pinned.Sets != nil && !u.pinned.setPinned(set) && setRoom(u.pinned.Sets, nil)
}

// pinSet pins the names of snap, a complete listing of a capability set
// not pinned yet (mayPinSet), on first sight: its tools that are not in
// the pin join it. A tool of the pin that differs in snap stays the
// pinned version, drift as ever; and then the set is pinned with the
// names of the pin alone, its new ones drift too: a server seen changing
// a tool under a set is not trusted with that set's new tools, which may
// be the rest of the same rug pull (a changed tool telling the model to
// call a new one). So too when snap has a new tool that is drift already
// (listed new under a pinned set): a set first seen later must not
// launder it into the pin. Callers hold mu.
func (inv *Inventory) pinSet(u *upstream, snap *Snapshot) []Event {
	if !inv.mayPinSet(u, snap.ListedWith) {
		return nil
	}
	tools := slices.Clone(u.pinned.Tools)
	var added, known []string
	drifted := false
	for _, t := range snap.Tools {
		p, ok := u.pinned.Tool(t.Name)
		_, pending := u.changes[t.Name]
		if !pending {
			_, pending = u.seen[t.Name]
		}
		switch {
		case !ok && pending:
			drifted = true
		case !ok:
			tools = append(tools, t)
			added = append(added, t.Name)
		case !matches(p, t):
			drifted = true
			fallthrough
		default:
			known = append(known, t.Name)
		}
	}
	if drifted {
		tools, added = u.pinned.Tools, nil
	}
	names := snap.toolNames()
	if drifted {
		names = known // sorted: snap.Tools are
	}
	if !setRoom(u.pinned.Sets, names) {
		// Past the bound: its new names stay drift; a list of other
		// sets' adds nothing to the pin.
		return nil
	}
	if len(tools) > MaxTools {
		return []Event{invalidList(u.name, fmt.Errorf("%w: the tools of capability set %q would make the pin more than %d tools; they stay outside it",
			ErrInvalidList, snap.ListedWith, MaxTools))}
	}
	pin, err := newSnapshot(u.name, tools, inv.now())
	if err != nil {
		return []Event{invalidList(u.name, err)}
	}
	pin.Sets, pin.Instructions = cloneSets(u.pinned.Sets), u.pinned.Instructions
	pin.Sets[snap.ListedWith] = names
	ev := Event{Type: EventPinned, Upstream: u.name, Detail: map[string]any{
		"hash": pin.Hash, "tools": len(pin.Tools), "first_seen": true,
		"capability_set": snap.ListedWith, "added": added, "drifted": drifted,
	}}
	if err := inv.store.Save(Pinned, pin); err != nil {
		// Not held in memory only, as a first pin is (setPin): the
		// upstream is pinned already, and a restart would pin the set
		// again on first sight. Its new names stay drift, and the set's
		// next listing tries again.
		return []Event{storeError(u.name, Pinned, err)}
	}
	u.pinned = pin
	u.unsaved = false
	return []Event{ev}
}

// Watch applies the snapshots other replicas save to a shared Backend
// (one that is a Watcher, such as OpenRedisBackend's) until ctx is done:
// a pin, approval or observed list saved by any replica takes effect here.
// With a Backend that cannot tell of changes it returns nil at once.
func (inv *Inventory) Watch(ctx context.Context) error {
	w, ok := inv.backend.(Watcher)
	if !ok {
		return nil
	}
	return w.Watch(ctx,
		func(kind Kind, upstream string) { inv.emit(inv.reload(kind, upstream)) },
		func() { inv.emit(inv.resync()) })
}

// resync reloads every stored snapshot that differs from the one held,
// and puts back the pins held that the store lost (keepPin).
func (inv *Inventory) resync() []Event {
	var evs []Event
	for _, kind := range []Kind{Pinned, Observed} {
		names, err := inv.store.List(kind)
		if err != nil {
			return append(evs, storeError("", kind, err))
		}
		if kind == Pinned {
			evs = append(evs, inv.keepPins(names)...)
		}
		for _, name := range names {
			evs = append(evs, inv.reload(kind, name)...)
		}
	}
	return evs
}

// keepPins puts back the pins held of upstreams not among stored, the
// upstreams the store has a pin of.
func (inv *Inventory) keepPins(stored []string) []Event {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	var evs []Event
	for _, name := range slices.Sorted(maps.Keys(inv.ups)) {
		if !slices.Contains(stored, name) {
			evs = append(evs, inv.keepPin(inv.ups[name])...)
		}
	}
	return evs
}

// keepPin saves u's pin again if the store no longer has one: a Redis
// restarted without persistence, flushed or failed over to a replica
// that had not caught up has lost it. Otherwise a replica starting then
// would pin what the upstream shows it first, a list this pin holds the
// upstream to (drift), and every other replica would take that pin from
// the store as an approval through another replica. A pin the store has
// is left alone, whoever saved it. Callers hold mu.
func (inv *Inventory) keepPin(u *upstream) []Event {
	if u.pinned == nil || u.pinErr != nil {
		return nil
	}
	kept, err := inv.store.SaveFirst(Pinned, u.pinned)
	var bad *LoadError
	switch {
	case errors.As(err, &bad):
		u.unsaved = false
		return nil // another writer's pin, which reload rejects
	case err != nil:
		u.retrySaveAt = inv.now().Add(retrySaveEvery)
		return []Event{storeError(u.name, Pinned, err)}
	case kept != u.pinned:
		u.unsaved = false
		return nil // stored already, by this replica or another
	}
	u.unsaved = false
	return []Event{{Type: EventPinned, Upstream: u.name, Detail: map[string]any{
		"hash": u.pinned.Hash, "tools": len(u.pinned.Tools), "restored": true,
	}}}
}

// reload makes the stored snapshot of kind for upstream the one held, if
// it differs. A stored pin that fails verification blocks the upstream.
func (inv *Inventory) reload(kind Kind, upstream string) []Event {
	// Loaded under mu, as observe and approve save under it: a document
	// read before this replica saved a newer one must not replace it.
	inv.mu.Lock()
	defer inv.mu.Unlock()
	snap, err := inv.store.Load(kind, upstream)
	var bad *LoadError
	if err != nil && !errors.As(err, &bad) {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed: keep what is held
		}
		return []Event{storeError(upstream, kind, err)}
	}
	u := inv.upstream(upstream)
	var evs []Event
	switch {
	case bad != nil:
		evs = append(evs, Event{Type: EventSnapshotRejected, Upstream: upstream, Detail: map[string]any{
			"kind": string(kind), "path": bad.Path, "error": err.Error(),
		}})
		if kind != Pinned {
			return evs
		}
		u.pinned, u.pinErr, u.unsaved = nil, err, false
	case kind == Pinned:
		if u.pinned != nil && samePin(u.pinned, snap) {
			return nil
		}
		u.pinned, u.pinErr = snap, nil
		u.unsaved = false
	default:
		if u.observed != nil && u.observed.Hash == snap.Hash && u.observed.ListedWith == snap.ListedWith {
			return nil
		}
		u.observed = snap
		u.lastList = [sha256.Size]byte{}
		// And the pin stored now, which is at least the one saved before
		// this list (observe saves the pin of a new capability set first):
		// a list read before that pin's notice came (a resync under way
		// as the writer saved both) would take the set's new tools for
		// drift.
		if pin, err := inv.store.Load(Pinned, upstream); err == nil && u.pinErr == nil && (u.pinned == nil || !samePin(u.pinned, pin)) {
			u.pinned = pin
			u.unsaved = false
		}
	}
	if u.pinned != nil {
		// Instructions another replica's approval pinned are no change.
		maps.DeleteFunc(u.instr, func(m, text string) bool {
			pinned, ok := u.pinned.Instructions[m]
			return ok && pinned == text
		})
	}
	evs = append(evs, inv.refresh(upstream)...)
	inv.publish()
	return evs
}

// samePin reports whether two pins hold the same tools under the same
// capability sets, with the same instructions. A tool whose unknown
// members were adopted as none ({}) has the hash it had in the pin before
// (nil): the pins differ all the same, or a replica that did not adopt
// would adopt, without drift, members added since.
func samePin(a, b *Snapshot) bool {
	return a.Hash == b.Hash && (a.Sets == nil) == (b.Sets == nil) && maps.EqualFunc(a.Sets, b.Sets, slices.Equal) &&
		maps.Equal(a.Instructions, b.Instructions) &&
		slices.EqualFunc(a.Tools, b.Tools, func(x, y Tool) bool { return (x.Unknown == nil) == (y.Unknown == nil) })
}

func storeError(upstream string, kind Kind, err error) Event {
	return Event{Type: EventStoreError, Upstream: upstream, Detail: map[string]any{"kind": string(kind), "error": err.Error()}}
}

// Pin makes the observed inventory of upstream its pinned one, as is,
// discarding the previous pin (or a pin that failed verification).
func (inv *Inventory) Pin(upstream string) error {
	return inv.approve(upstream, AllTools, nil, EventPinned)
}

// PinHash is Pin that only pins the observed list with the given snapshot
// hash (the Diff's observed hash), so that a list that changed again after
// an operator reviewed it is not pinned unseen. It returns ErrStale
// otherwise.
func (inv *Inventory) PinHash(upstream, hash string) error {
	return inv.approve(upstream, AllTools, &hash, EventPinned)
}

// Approve pins the observed version of one drifted tool of upstream (or
// of every tool, with AllTools): a changed or added tool's new definition
// is pinned, a removed tool is dropped from the pin.
func (inv *Inventory) Approve(upstream, tool string) error {
	return inv.approve(upstream, tool, nil, EventApproved)
}

// ApproveHash is Approve that only approves the version with the given
// hash (the tool's observed_hash in the Diff, or the snapshot hash for
// AllTools; "" for a removed tool), so that a tool that changed again
// after an operator reviewed it is not approved unseen. It returns
// ErrStale otherwise.
func (inv *Inventory) ApproveHash(upstream, tool, hash string) error {
	return inv.approve(upstream, tool, &hash, EventApproved)
}

// approve pins the observed version of tool (or all tools) of upstream. If
// want is not nil, that version must have hash *want.
func (inv *Inventory) approve(upstream, tool string, want *string, evType EventType) error {
	evs, err := inv.approveLocked(upstream, tool, want, evType)
	inv.emit(evs)
	return err
}

func (inv *Inventory) approveLocked(upstream, tool string, want *string, evType EventType) ([]Event, error) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	u := inv.ups[upstream]
	if u == nil {
		return nil, fmt.Errorf("%w: %q", ErrUnknownUpstream, upstream)
	}
	if u.observed == nil {
		return nil, fmt.Errorf("%w: %q", ErrNotObserved, upstream)
	}
	var (
		snap *Snapshot
		ev   = Event{Type: evType, Upstream: upstream}
	)
	if tool == AllTools {
		if want != nil && *want != u.approvalHash() {
			if len(u.instr) > 0 {
				return nil, fmt.Errorf("%w: %q is at %s with its instructions changed, not %s (the approval hash sluice inventory diff shows)", ErrStale, upstream, u.approvalHash(), *want)
			}
			return nil, fmt.Errorf("%w: %q is at %s, not %s", ErrStale, upstream, u.observed.Hash, *want)
		}
		if evType == EventPinned || u.pinned == nil || u.pinned.Sets == nil {
			// Pinned as a whole: the observed list, the names of its
			// capability set; other sets are pinned on their first sight.
			snap = u.observed.withSets(map[string][]string{u.observed.ListedWith: u.observed.toolNames()})
		} else {
			// Every change approved, the tools of other capability sets
			// kept.
			var err error
			if snap, err = approvedAll(u, inv.now()); err != nil {
				return nil, fmt.Errorf("inventory: approving %q: %w", upstream, err)
			}
		}
		ev.Detail = map[string]any{"hash": snap.Hash, "tools": len(snap.Tools)}
	} else {
		if u.pinned == nil {
			return nil, fmt.Errorf("%w: %q", ErrNotPinned, upstream)
		}
		c, ok := u.changes[tool]
		if !ok {
			return nil, fmt.Errorf("%w: %q of %q", ErrNothingToApprove, tool, upstream)
		}
		if want != nil && *want != c.ObservedHash {
			return nil, fmt.Errorf("%w: %q of %q is at %q, not %q", ErrStale, tool, upstream, c.ObservedHash, *want)
		}
		var err error
		if snap, err = approvedTools(u, []string{tool}, inv.now()); err != nil {
			return nil, fmt.Errorf("inventory: approving %q of %q: %w", tool, upstream, err)
		}
		ev.Tool = tool
		ev.Detail = map[string]any{"change": string(c.Kind), "tool_hash": c.ObservedHash, "pinned_hash": snap.Hash}
	}
	// The instructions stay as pinned; approving every change approves
	// theirs too (pinInstructions).
	if u.pinned != nil {
		snap.Instructions = u.pinned.Instructions
	}
	if tool == AllTools && len(u.instr) > 0 {
		instr := maps.Clone(snap.Instructions)
		if instr == nil {
			instr = map[string]string{}
		}
		maps.Copy(instr, u.instr)
		snap.Instructions = instr
		ev.Detail["instructions"] = slices.Sorted(maps.Keys(u.instr))
	}
	if err := inv.store.Save(Pinned, snap); err != nil {
		return nil, err
	}
	u.pinned, u.pinErr = snap, nil
	u.unsaved = false
	if tool == AllTools {
		u.seen, u.instr = nil, nil
	} else {
		delete(u.seen, tool)
	}
	evs := append([]Event{ev}, inv.refresh(upstream)...)
	inv.publish()
	return evs, nil
}

// approvedAll is u's pin with every change (u.changes) approved, and the
// names of the observed list as those of its capability set. Callers hold
// mu.
func approvedAll(u *upstream, at time.Time) (*Snapshot, error) {
	snap, err := approvedTools(u, slices.Sorted(maps.Keys(u.changes)), at)
	if err != nil {
		return nil, err
	}
	if snap.Sets != nil {
		snap.Sets[u.observed.ListedWith] = u.observed.toolNames()
	}
	return snap, nil
}

// approvedTools is u's pin with the observed version of each of tools (a
// tool the observed list lacks dropped, if its capability set was pinned
// with it), the name added to, or dropped
// from, the observed list's capability set: a tool dropped from the pin
// is dropped from every set. Callers hold mu.
func approvedTools(u *upstream, tools []string, at time.Time) (*Snapshot, error) {
	pinned := slices.Clone(u.pinned.Tools)
	sets := cloneSets(u.pinned.Sets)
	for _, tool := range tools {
		set := u.observed.ListedWith
		if c, ok := u.changes[tool]; ok && c.setAdd {
			// A tool of the pin new under a set: that set holds it now,
			// and it is reviewed.
			if sets != nil {
				sets[c.set] = addNames(sets[c.set], tool)
				sets[approvedSet] = addNames(sets[approvedSet], tool)
			}
			continue
		}
		t, ok := u.observed.Tool(tool)
		if !ok && !u.pinned.setHolds(set, tool) {
			// Not listed to the observed list's capability set, nor
			// pinned under it: that list neither changed nor removed it.
			continue
		}
		pinned = slices.DeleteFunc(pinned, func(t Tool) bool { return t.Name == tool })
		switch {
		case ok:
			pinned = append(pinned, t)
			if sets != nil {
				sets[set] = addNames(sets[set], tool)
				sets[approvedSet] = addNames(sets[approvedSet], tool)
			}
		case sets != nil:
			for k, names := range sets {
				sets[k] = slices.DeleteFunc(names, func(n string) bool { return n == tool })
			}
		}
	}
	snap, err := newSnapshot(u.name, pinned, at)
	if err != nil {
		return nil, err
	}
	snap.Sets = sets
	return snap, nil
}

// Blocked reports whether a call of tool on upstream must be held back
// because of the inventory, with a reason for the operator and client; the
// decision's reason code is ReasonDrift. With DriftBlock, a tool is
// blocked when its upstream is pinned and the tool is not in the pin, or
// differs from it, or was removed from the list; and every tool of an
// upstream whose stored pin failed verification, or (with PinManually)
// that has not been pinned yet. Nothing is blocked with DriftWarn, nor on
// an upstream the inventory has not seen.
func (inv *Inventory) Blocked(upstream, tool string) (reason string, blocked bool) {
	u := inv.view.Load().ups[upstream]
	if u == nil {
		return "", false
	}
	if u.blockAll != "" {
		return u.blockAll, true
	}
	if r, ok := u.blocked[tool]; ok {
		return r, true
	}
	if u.allowed != nil && !u.allowed[tool] {
		// Not pinned and not a change: its upstream's latest tools/list
		// has no such tool either (a typo, a made-up name), which no
		// review would let through.
		return fmt.Sprintf("tool %q is not in the pinned inventory of upstream %q nor in its latest tools/list: the upstream does not offer it (check the name)", tool, upstream), true
	}
	return "", false
}

// Hash returns the tool_inventory_hash of upstream: that of its latest
// complete tools/list, or of its pin before any list was seen, or "" if
// the upstream is unknown.
func (inv *Inventory) Hash(upstream string) string {
	if u := inv.view.Load().ups[upstream]; u != nil {
		return u.hash
	}
	return ""
}

// RiskFactors returns the scan findings of the current version of a tool
// that make it suspicious (SeverityMedium or above), or nil. Low findings
// are common in legitimate tools and are only reported as events. The
// caller may modify the result.
func (inv *Inventory) RiskFactors(upstream, tool string) []Finding {
	u := inv.view.Load().ups[upstream]
	if u == nil {
		return nil
	}
	var rf []Finding
	for _, f := range u.findings[tool] {
		if f.Severity >= SeverityMedium {
			rf = append(rf, f)
		}
	}
	return rf
}

// Diff compares the pinned and the observed inventory of upstream.
func (inv *Inventory) Diff(upstream string) (*Diff, error) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	u := inv.ups[upstream]
	if u == nil {
		return nil, fmt.Errorf("%w: %q", ErrUnknownUpstream, upstream)
	}
	d := &Diff{Upstream: upstream, Pinned: infoOf(u.pinned), Observed: infoOf(u.observed)}
	d.Changes = diffSnapshots(u.pinned, u.observed)
	if d.Changes == nil {
		d.Changes = []ToolChange{}
	}
	if u.pinned != nil {
		for _, m := range slices.Sorted(maps.Keys(u.instr)) {
			d.Instructions = append(d.Instructions, InstructionsChange{Method: m, Pinned: u.pinned.Instructions[m], Observed: u.instr[m]})
		}
	}
	if u.observed != nil {
		d.ApprovalHash = u.approvalHash()
	}
	return d, nil
}

// approvalHash is the hash that approves every change of u (Approve of
// AllTools, Pin) as seen now: its observed list's hash, or, while
// instructions differ from the pin's, a hash over it and them, so that
// instructions changed again after an operator reviewed them are not
// pinned unseen. Callers hold mu; u.observed is not nil.
func (u *upstream) approvalHash() string {
	if len(u.instr) == 0 {
		return u.observed.Hash
	}
	var b strings.Builder
	b.WriteString(u.observed.Hash)
	for _, m := range slices.Sorted(maps.Keys(u.instr)) {
		fmt.Fprintf(&b, "\n%s %s", m, sum([]byte(u.instr[m])))
	}
	return sum([]byte(b.String()))
}

// Upstreams returns the names of the upstreams the inventory knows, sorted.
func (inv *Inventory) Upstreams() []string {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	return slices.Sorted(maps.Keys(inv.ups))
}

// Snapshot returns the pinned or observed snapshot of upstream, or nil.
// Snapshots are immutable.
func (inv *Inventory) Snapshot(upstream string, kind Kind) *Snapshot {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	u := inv.ups[upstream]
	switch {
	case u == nil:
		return nil
	case kind == Pinned:
		return u.pinned
	default:
		return u.observed
	}
}

// Collision is a tool name that more than one upstream offers.
type Collision struct {
	Tool      string   `json:"tool"`
	Upstreams []string `json:"upstreams"` // sorted
}

// Collisions returns the tool names offered by more than one upstream
// (by their current inventories), sorted by name.
func (inv *Inventory) Collisions() []Collision {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	return inv.collisionList()
}

func (inv *Inventory) collisionList() []Collision {
	by := map[string][]string{}
	for _, name := range slices.Sorted(maps.Keys(inv.ups)) {
		if s := inv.ups[name].current(); s != nil {
			for _, t := range s.Tools {
				by[t.Name] = append(by[t.Name], name)
			}
		}
	}
	var out []Collision
	for _, tool := range slices.Sorted(maps.Keys(by)) {
		if ups := by[tool]; len(ups) > 1 {
			out = append(out, Collision{Tool: tool, Upstreams: ups})
		}
	}
	return out
}

// maxRefreshEvents bounds the drift and finding events one listing of an
// upstream records: it chooses how many of its up to MaxTools tools
// change, at every listing any client makes. One more event of each type
// counts the rest.
const maxRefreshEvents = 256

// refresh recomputes drift, findings and collisions of every upstream and
// returns the events not sent before. changed names the upstream whose
// inventory just changed ("" at load, when nothing is sent). Callers hold
// mu, or have not yet shared inv.
func (inv *Inventory) refresh(changed string) []Event {
	quiet := changed == ""
	var evs []Event
	// Every tool name served, sorted, with how many upstreams serve it:
	// an upstream's foreign names are those some other upstream serves.
	offered := map[string]int{}
	for _, u := range inv.ups {
		if s := u.current(); s != nil {
			seen := map[string]bool{}
			for _, t := range s.Tools {
				if !seen[t.Name] {
					seen[t.Name] = true
					offered[t.Name]++
				}
			}
		}
	}
	allNames := slices.Sorted(maps.Keys(offered))
	inv.toolNames = allNames
	for _, name := range slices.Sorted(maps.Keys(inv.ups)) {
		u := inv.ups[name]
		u.quiet = nil // a pin or list changed: evaluated again
		reported := map[string]bool{}
		// The events to record this listing are maxRefreshEvents of those
		// not recorded before, from a place chosen at random and round to
		// the first: decoys changed at every listing, coming first, would
		// otherwise take the bound every time (TestAttackEventsStarved),
		// and an upstream that knew where the bound starts would keep the
		// tool that matters just outside it (TestAttackEventsAligned).
		type cand struct {
			key string
			ev  Event
		}
		var cands []cand
		report := func(key string, ev Event) {
			if quiet || u.reported[key] {
				reported[key] = true
				return
			}
			cands = append(cands, cand{key, ev})
		}

		// Drift.
		u.changes = map[string]ToolChange{}
		if u.pinned != nil {
			for tool, c := range u.seen {
				t, _ := u.pinned.Tool(tool)
				if c.setAdd && (t.Hash != c.ObservedHash || !u.pinned.setPinned(c.set) || u.pinned.setHolds(c.set, tool) || u.pinned.setHolds(approvedSet, tool)) ||
					!c.setAdd && t.Hash != c.PinnedHash {
					// Its pin moved since: someone approved it (here or on
					// another replica), or the set it was new under holds
					// it now (or is no longer pinned).
					delete(u.seen, tool)
					continue
				}
				u.changes[tool] = c // overwritten below if it still differs
			}
			for _, c := range diffSnapshots(u.pinned, u.observed) {
				// A tool not remembered is still a change while the observed
				// list has it.
				u.remember(c)
				u.changes[c.Tool] = c
				reason, blocked := inv.driftReason(name, c)
				fields := make([]string, len(c.Fields))
				for i, f := range c.Fields {
					fields[i] = f.Field
				}
				var text strings.Builder
				writeChange(&text, c, maxEventDelta)
				detail := map[string]any{
					"change": string(c.Kind), "fields": fields,
					"pinned_hash": c.PinnedHash, "observed_hash": c.ObservedHash,
					"diff": text.String(), "blocked": blocked,
				}
				if blocked {
					detail["reason"] = reason
				}
				report("drift\x00"+c.Tool+"\x00"+c.PinnedHash+"\x00"+c.ObservedHash,
					Event{Type: EventDrift, Upstream: name, Tool: c.Tool, Detail: detail})
			}
		}

		// Poisoning scan of the current version of every tool. A name this
		// upstream offers itself is not foreign: mentioning it refers to
		// its own tool (two upstreams offering it is a collision). Nor is
		// a mention spelt as its own name where another's is spelt
		// otherwise (its get-lists, another's get_lists); but its own
		// send-email does not make another's send_email, spelt so, its
		// own (TestAttackOwnSpellingHidesForeign).
		isOwn := map[string]bool{}
		var own []string
		if s := u.current(); s != nil {
			for _, t := range s.Tools {
				isOwn[t.Name] = true
				own = append(own, strings.ToLower(t.Name))
			}
		}
		slices.Sort(own)
		own = slices.Compact(own)
		foreign := make([]string, 0, len(allNames))
		for _, n := range allNames {
			if !isOwn[n] { // so offered by another upstream
				foreign = append(foreign, n)
			}
		}
		u.findings = map[string][]Finding{}
		base := map[string][]Finding{}
		// Another upstream's new description changes no name: only when
		// the foreign names change is every tool searched again.
		var fx *foreignIndex
		if !slices.Equal(foreign, u.foreign) || !slices.Equal(own, u.own) || u.cross == nil {
			fx = newForeignIndex(foreign, own)
			u.cross, u.foreign, u.own = map[string][]Finding{}, foreign, own
		}
		cross := map[string][]Finding{}
		if s := u.current(); s != nil {
			for _, t := range s.Tools {
				fs, ok := u.base[t.Hash]
				if !ok {
					fs = Scan(t, ScanOptions{MaxDescription: inv.maxDesc})
				}
				base[t.Hash] = fs
				cr, ok := u.cross[t.Hash]
				if !ok {
					if fx == nil {
						fx = newForeignIndex(foreign, own)
					}
					cr = crossReferences(t, fx)
				}
				cross[t.Hash] = cr
				if len(cr) > 0 {
					fs = append(slices.Clone(fs), cr...)
				}
				if len(fs) > 0 {
					u.findings[t.Name] = fs
				}
				for _, f := range fs {
					report("finding\x00"+t.Name+"\x00"+t.Hash+"\x00"+f.Rule+"\x00"+f.Field,
						Event{Type: EventPoisoning, Upstream: name, Tool: t.Name, Detail: map[string]any{
							"rule": f.Rule, "severity": f.Severity.String(), "field": f.Field,
							"excerpt": f.Excerpt, "tool_hash": t.Hash,
						}})
				}
			}
		}
		left, start := map[EventType]int{}, 0
		if len(cands) > maxRefreshEvents {
			start = rand.IntN(len(cands))
		}
		for i := range cands {
			c := &cands[(start+i)%len(cands)]
			if i >= maxRefreshEvents {
				left[c.ev.Type]++ // not marked: recorded at a later listing
				continue
			}
			evs = append(evs, c.ev)
			reported[c.key] = true
		}
		u.base = base
		u.cross = cross
		u.reported = reported
		for _, typ := range slices.Sorted(maps.Keys(left)) {
			evs = append(evs, Event{Type: typ, Upstream: name, Detail: map[string]any{
				"not_recorded": left[typ],
				"reason": fmt.Sprintf("%d more %s events of this listing were not recorded one by one (at most %d a listing of an upstream); "+
					"they are recorded at later listings while they hold, and sluice inventory diff shows every change", left[typ], typ, maxRefreshEvents),
			}})
		}
	}

	// Collisions.
	reported := map[string]bool{}
	for _, c := range inv.collisionList() {
		key := c.Tool + "\x00" + strings.Join(c.Upstreams, "\x00")
		reported[key] = true
		if !inv.collisions[key] && !quiet {
			evs = append(evs, Event{Type: EventCollision, Upstream: changed, Tool: c.Tool, Detail: map[string]any{
				"upstreams": slices.Clone(c.Upstreams),
			}})
		}
	}
	inv.collisions = reported
	return evs
}

// crossReferences is the cross_server_reference part of Scan, kept apart
// so that the rest of a tool's scan can be cached by its hash while the
// set of other upstreams' tools changes.
func crossReferences(t Tool, foreign *foreignIndex) []Finding {
	if foreign == nil || len(foreign.byRun)+len(foreign.odd) == 0 {
		return nil
	}
	s := scanner{foreignOnly: true, foreign: foreign}
	s.tool(t)
	return s.found
}

// driftReason says whether a change blocks its tool, and why.
func (inv *Inventory) driftReason(upstream string, c ToolChange) (string, bool) {
	if inv.onDrift != DriftBlock {
		return "", false
	}
	// The version blocked, which a later change makes stale: without
	// --hash, approve takes whatever version the tool has by then.
	hash := cmp.Or(c.ObservedHash, "''")
	review := fmt.Sprintf("review with \"sluice inventory diff %s\", approve with \"sluice inventory approve %s %s --hash %s\"", upstream, upstream, c.Tool, hash)
	switch c.Kind {
	case ToolAdded:
		return fmt.Sprintf("tool %q of upstream %q is new since the inventory was pinned; %s", c.Tool, upstream, review), true
	case ToolRemoved:
		return fmt.Sprintf("tool %q of upstream %q was removed from its tools/list since the inventory was pinned; %s", c.Tool, upstream, review), true
	default:
		fields := make([]string, len(c.Fields))
		for i, f := range c.Fields {
			fields[i] = f.Field
		}
		return fmt.Sprintf("tool %q of upstream %q changed since it was pinned (%s); %s", c.Tool, upstream, strings.Join(fields, ", "), review), true
	}
}

// publish rebuilds the view that the lock-free readers see. Callers hold
// mu.
func (inv *Inventory) publish() {
	v := &view{ups: make(map[string]*upstreamView, len(inv.ups))}
	for name, u := range inv.ups {
		uv := &upstreamView{findings: u.findings}
		if s := u.current(); s != nil {
			uv.hash = s.Hash
		}
		if inv.onDrift == DriftBlock {
			switch {
			case u.pinErr != nil:
				uv.blockAll = fmt.Sprintf("the pinned inventory of upstream %q failed verification (%v); "+
					"review with \"sluice inventory diff %s\" and re-pin with \"sluice inventory pin %s\"",
					name, errors.Unwrap(u.pinErr), name, name)
			case u.pinned == nil && u.unpinned != nil:
				uv.blockAll = fmt.Sprintf("upstream %q has no pinned inventory and its tools/list was rejected (%v); "+
					"it is pinned on the first list within the bounds",
					name, u.unpinned)
			case u.pinned == nil && inv.pinning == PinManually:
				uv.blockAll = fmt.Sprintf("upstream %q has no pinned inventory; "+
					"review with \"sluice inventory diff %s\" and pin with \"sluice inventory pin %s\"", name, name, name)
			case u.pinned != nil:
				uv.pinned = u.pinned
				uv.allowed = make(map[string]bool, len(u.pinned.Tools))
				for _, t := range u.pinned.Tools {
					uv.allowed[t.Name] = true
				}
				uv.blocked = map[string]string{}
				for tool, c := range u.changes {
					if r, ok := inv.driftReason(name, c); ok {
						uv.blocked[tool] = r
					}
				}
			}
		}
		v.ups[name] = uv
	}
	inv.view.Store(v)
}

func (inv *Inventory) emit(evs []Event) {
	if inv.events == nil {
		return
	}
	for _, e := range evs {
		inv.events.Emit(e)
	}
}
