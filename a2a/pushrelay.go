package a2a

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/sluicehq/sluice/intercept"
)

// The push relay (Options.PushRelay). A push config a caller registers
// (a message's configuration.pushNotificationConfig, or 1.0's
// taskPushNotificationConfig, tasks/pushNotificationConfig/set,
// CreateTaskPushNotificationConfig,
// REST POST /tasks/{id}/pushNotificationConfigs) reaches the agent with
// the gateway's URL, PublicURL/a2a/.push/{id} with an unguessable id, and
// a token of the gateway's, never the caller's URL, token or
// authentication. When the agent POSTs an update there, the gateway
//
//   - refuses it (401) unless it carries the relay's token, compared in
//     constant time;
//   - drops it (410), ending the relay, once the credential of the caller
//     that registered it no longer holds (intercept.Principal.Gone, as a
//     stream's events are withheld);
//   - refuses a body larger than MaxBody (413), or one naming another
//     task than the config's (403);
//   - and delivers it to the caller's URL with the caller's token
//     (X-A2A-Notification-Token) and authentication, through a client
//     that refuses at connect time every loopback, private, link-local
//     and metadata address a name resolves to (pushDialControl), follows
//     no redirect and gives up after PushTimeout; the agent is answered
//     with the delivery's status class.
//
// Relays live in this process (the caller's credential check is a
// function of this process's authenticator): without a shared store
// (Options.Relays, pushshare.go) a replica that did not register one
// answers 404 for it, and a restart forgets them.

// PushRelayPath is where the gateway takes agents' pushes: under /a2a/,
// on the gateway's own listener, {id} after it. Agent names may not
// contain '/', so no agent's routes reach it. Agents do not authenticate
// as callers there: each relay's token is its credential, so sluice serve
// lets a POST to it past auth: (IsPushRelay).
const PushRelayPath = "/a2a/.push/"

// IsPushRelay reports whether r is an agent's push to a relay: a POST
// to PushRelayPath{id}, one segment, its path clean.
func IsPushRelay(r *http.Request) bool {
	id, ok := strings.CutPrefix(r.URL.Path, PushRelayPath)
	return ok && r.Method == http.MethodPost && id != "" && !strings.ContainsAny(id, "/\\") && id != "." && id != ".."
}

// relayHopHeader marks the gateway's own deliveries: one arriving back at
// the gateway (a caller's URL that leads to it) is refused on every path
// (DeliveredByRelay).
const relayHopHeader = "Sluice-Push-Relay"

// tokenHeader is where A2A puts a push config's token.
const tokenHeader = "X-A2A-Notification-Token"

// pushRecord is one relayed push config. The fields before task never
// change once it is added; the rest are guarded by pushRelays.mu.
type pushRecord struct {
	id        string   // the relay URL's last segment
	token     string   // the agent's ("" in a record read from the store)
	tokenHash [32]byte // its SHA-256, checked on every push
	agent     string
	owner     string
	share     string               // what the bounds count it against (callerShare)
	principal *intercept.Principal // nil: no credential to lose, or a record read from the store
	cred      *relayCredential     // what the store keeps of principal (Options.Relays)
	url       string               // the caller's URL, token, authentication
	callerTok string
	auth      jsontext.Value // the caller's authentication member, or nil
	created   time.Time      // registered (by the registering replica's clock)

	// guarded by pushRelays.mu:
	task     string // "" until the agent's answer (or first push) names it
	configID string
	used     time.Time
}

// pushRelays are the relayed push configs, bounded: one principal holds
// at most a tenth of them, its oldest going first; past the bound the
// principal holding the most gives up its oldest to one holding fewer,
// and a registration is otherwise refused.
type pushRelays struct {
	max, perShare int
	ttl           time.Duration
	now           func() time.Time // time.Now; a test's clock
	mu            sync.Mutex       // guards the fields below and records' task, configID, used
	byID          map[string]*pushRecord
	owned         map[string]int // share -> records
	// ended are the ids of relays ended here since takeEnded, for the
	// shared store (keepEnded) to end on every replica.
	ended     []string
	keepEnded bool
}

func newPushRelays(n int, ttl time.Duration) *pushRelays {
	return &pushRelays{max: n, perShare: max(1, n/10), ttl: ttl, now: time.Now, byID: map[string]*pushRecord{}, owned: map[string]int{}}
}

// errRelaysFull refuses a registration past the bound.
var errRelaysFull = &intercept.WireError{Code: codePushNotSupported, Message: "push notifications: the gateway relays as many push configs as it keeps; delete one, or poll tasks/get or subscribe instead"}

func (p *pushRelays) add(r *pushRecord) error {
	r.tokenHash = sha256.Sum256([]byte(r.token)) // what a push's is compared with
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	r.used = now
	if p.owned[r.share] >= p.perShare {
		var oldest *pushRecord
		for _, x := range p.byID {
			if x.share == r.share && (oldest == nil || x.used.Before(oldest.used)) {
				oldest = x
			}
		}
		if oldest != nil {
			p.removeLocked(oldest)
		}
	}
	if len(p.byID) >= p.max {
		for _, x := range p.byID {
			if now.Sub(x.used) > p.ttl {
				p.dropLocked(x)
			}
		}
	}
	if len(p.byID) >= p.max {
		// Full: the share holding the most gives up its oldest, if it
		// would still hold more than r's; or principals filling the
		// relays between them (each within its tenth) would keep every
		// other caller from registering one until the TTL.
		var give *pushRecord
		for _, x := range p.byID {
			n, m := p.owned[x.share], 0
			if give != nil {
				m = p.owned[give.share]
			}
			if give == nil || n > m || (n == m && x.used.Before(give.used)) {
				give = x
			}
		}
		if give == nil || p.owned[give.share] <= p.owned[r.share]+1 {
			return errRelaysFull
		}
		p.removeLocked(give)
	}
	if r.task != "" {
		// The agent replaces a config of the same id: so does the relay.
		for _, x := range p.byID {
			if x.agent == r.agent && x.owner == r.owner && x.task == r.task && x.configID == r.configID {
				p.removeLocked(x)
			}
		}
	}
	p.byID[r.id] = r
	p.owned[r.share]++
	return nil
}

// removeLocked ends r here and, with a shared store, notes it for the
// store to end on every replica (takeEnded). An expiry here only drops r
// (dropLocked): the store keeps its own TTL, which deliveries through
// other replicas may have renewed.
func (p *pushRelays) removeLocked(r *pushRecord) {
	p.dropLocked(r)
	if p.keepEnded {
		p.ended = append(p.ended, r.id)
	}
}

// takeEnded returns the relays ended since it was last called.
func (p *pushRelays) takeEnded() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	ids := p.ended
	p.ended = nil
	return ids
}

// dropLocked forgets r here only.
func (p *pushRelays) dropLocked(r *pushRecord) {
	if p.byID[r.id] != r {
		return
	}
	delete(p.byID, r.id)
	if p.owned[r.share]--; p.owned[r.share] <= 0 {
		delete(p.owned, r.share)
	}
}

func (p *pushRelays) remove(r *pushRecord) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.removeLocked(r)
}

// drop forgets r here only.
func (p *pushRelays) drop(r *pushRecord) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dropLocked(r)
}

// endRelay ends r here and, with a shared store, on every replica.
func (g *Gateway) endRelay(ctx context.Context, r *pushRecord) {
	g.pushes.drop(r)
	if g.shared == nil {
		return
	}
	if err := g.shared.forget(context.WithoutCancel(ctx), []string{r.id}); err != nil {
		g.log.Warn("a2a: push relay: an ended relay could not be removed from the shared store: other replicas hold it until the removal, retried, succeeds", "agent", r.agent, "principal", principalOf(r.owner), "err", err)
	}
}

// touch marks r used now.
func (p *pushRelays) touch(r *pushRecord) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r.used = p.now()
}

// get returns the live record id names, or nil.
func (p *pushRelays) get(id string) *pushRecord {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.byID[id]
	if r != nil && p.now().Sub(r.used) > p.ttl {
		p.dropLocked(r)
		return nil
	}
	return r
}

// bind ties r to the first of tasks if it names none yet (the answer to
// the message that registered it names the task it created).
func (p *pushRelays) bind(r *pushRecord, tasks []string) {
	if r == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, t := range tasks {
		if r.task == "" && t != "" {
			r.task = t
		}
	}
}

// bindPush binds r (bind) to the first of tasks that is its caller's:
// an answer naming another caller's task (an agent's mistake, or worse)
// does not make the relay deliver that task's pushes to r's caller, as a
// first push naming it does not (pushNamesTask).
func (g *Gateway) bindPush(ctx context.Context, r *pushRecord, tasks []string) {
	if r == nil {
		return
	}
	g.pushes.mu.Lock()
	bound := r.task != ""
	g.pushes.mu.Unlock()
	if bound { // a stream's later events: no lookups
		return
	}
	mine := make([]string, 0, 1)
	for _, t := range tasks {
		if t != "" && g.tasks.owns(ctx, r.agent, t, r.owner) {
			mine = append(mine, t)
			break
		}
	}
	g.pushes.bind(r, mine)
	if len(mine) > 0 {
		// Other replicas check the agent's pushes against the task too.
		// One the store did not take is still bound here; there, the
		// first push binds it as when it comes before the answer.
		_ = g.updateRelay(ctx, r)
	}
}

// dropUnbound ends r if no task was named for it: the agent answered the
// message that registered it with no task, or not at all.
func (p *pushRelays) dropUnbound(r *pushRecord) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r.task == "" {
		p.removeLocked(r)
	}
}

// removeConfig ends the relays of owner's config configID on task, after
// the agent deleted it.
func (p *pushRelays) removeConfig(agent, owner, task, configID string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.byID {
		if r.agent == agent && r.owner == owner && r.task == task && (configID == "" || r.configID == configID) {
			p.removeLocked(r)
		}
	}
}

// len is how many relays there are.
func (p *pushRelays) len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.byID)
}

// deliveries bounds the pushes delivered at once: max in all, a quarter
// of them (at least one) to one share's URLs (callerShare: a principal's,
// or an unauthenticated client's), so that a caller whose webhook stalls
// holds no more than its share rather than every other caller's pushes
// waiting out PushTimeout behind it.
type deliveries struct {
	max, perShare int
	mu            sync.Mutex // guards the fields below
	n             int
	byShare       map[string]int
}

func newDeliveries(n int) *deliveries {
	return &deliveries{max: n, perShare: max(1, n/4), byShare: map[string]int{}}
}

var (
	errBusy      = errors.New("as many deliveries as allowed at once")
	errOwnerBusy = errors.New("as many deliveries to this principal as allowed at once")
)

// start takes a delivery for share, or says why not; end gives it back.
func (d *deliveries) start(share string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case d.n >= d.max:
		return errBusy
	case d.byShare[share] >= d.perShare:
		return errOwnerBusy
	}
	d.n++
	d.byShare[share]++
	return nil
}

func (d *deliveries) end(share string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.n--
	if d.byShare[share]--; d.byShare[share] <= 0 {
		delete(d.byShare, share)
	}
}

// callerShare is what the relays, deliveries and unclaimed tasks
// (owners.add) of ctx's caller count against: its principal; without one
// (no auth:, every caller the same owner, none) its address, as intercept
// counts an unauthenticated client's tasks, so that one client cannot
// end every other's relays, hold their deliveries, or push out their
// tasks.
func callerShare(ctx context.Context) string {
	if p := intercept.PrincipalFrom(ctx); p != nil {
		return "p\x00" + p.ID
	}
	return "c\x00" + intercept.ClientAddrFrom(ctx)
}

// randomID is n random bytes, base64url.
func randomID(n int) string {
	b := make([]byte, n)
	rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

// relayURL is r's URL for the agent.
func (g *Gateway) relayURL(id string) string { return g.opts.PublicURL + PushRelayPath + id }

// relayConfig returns v (a push config method's params, or a message's
// configuration) with its push config (the one object holding a url)
// pointed at a new relay for owner's task (or, "", the task the agent's
// answer names), and the relay, not yet added.
func (g *Gateway) relayConfig(ctx context.Context, a *agent, v jsontext.Value, task string) (jsontext.Value, *pushRecord, error) {
	rec := &pushRecord{id: randomID(16), token: randomID(32), created: time.Now(), agent: a.Name, owner: ownerOf(ctx), share: callerShare(ctx),
		principal: intercept.PrincipalFrom(ctx), task: task}
	rec.cred = credentialOf(rec.principal)
	found := 0
	var bad error
	out, err := rewriteObjects(v, func(ms []jsonMember) []jsonMember {
		at := -1
		for i, m := range ms {
			if strings.EqualFold(m.name, "url") {
				if m.name != "url" || m.value.Kind() != '"' {
					bad = &intercept.WireError{Code: intercept.CodeInvalidParams, Message: fmt.Sprintf("invalid params: a push config's url is written url, as a string (not %s)", m.name)}
				}
				at = i
			}
		}
		if at < 0 {
			return ms
		}
		// An agent matching names without regard to case (a2a-go) would
		// read "Token" or "Authentication" as what the relay replaces.
		for _, m := range ms {
			for _, k := range []string{"token", "authentication", "id"} {
				if strings.EqualFold(m.name, k) && m.name != k {
					bad = &intercept.WireError{Code: intercept.CodeInvalidParams, Message: fmt.Sprintf("invalid params: a push config's %s is written %s, not %s", k, k, m.name)}
				}
			}
		}
		if found++; found > 1 {
			bad = &intercept.WireError{Code: intercept.CodeInvalidParams, Message: "invalid params: one push config (one url) per request"}
			return ms
		}
		kept := ms[:0:0]
		hasID := false
		for _, m := range ms {
			switch m.name {
			case "url":
				rec.url = unquote(m.value)
				m.value, _ = jsontext.AppendQuote(nil, g.relayURL(rec.id))
			case "token":
				if m.value.Kind() != '"' && m.value.Kind() != 'n' {
					bad = &intercept.WireError{Code: intercept.CodeInvalidParams, Message: "invalid params: a push config's token must be a string"}
				}
				rec.callerTok = unquote(m.value)
				continue // put back below, the relay's
			case "authentication":
				if !intercept.EmptyValue(m.value) {
					rec.auth = append(jsontext.Value(nil), m.value...)
				}
				continue // the caller's credentials for its webhook: never the agent's
			case "id":
				rec.configID = unquote(m.value)
				hasID = rec.configID != ""
				if !hasID {
					continue
				}
			}
			kept = append(kept, m)
		}
		tok, _ := jsontext.AppendQuote(nil, rec.token)
		kept = append(kept, jsonMember{"token", tok})
		if !hasID {
			// An id of the gateway's, so that a delete names the relay
			// it ends (the agent would pick one it never tells).
			rec.configID = randomID(9)
			id, _ := jsontext.AppendQuote(nil, rec.configID)
			kept = append(kept, jsonMember{"id", id})
		}
		return kept
	})
	if err == nil {
		err = bad
	}
	if err == nil && found == 0 {
		err = &intercept.WireError{Code: intercept.CodeInvalidParams, Message: "invalid params: a push config needs a url"}
	}
	if err == nil && len(rec.url)+len(rec.callerTok)+len(rec.auth) > maxRelayKept {
		err = &intercept.WireError{Code: intercept.CodeInvalidParams, Message: fmt.Sprintf("invalid params: a push config's url, token and authentication are more than %d bytes together", maxRelayKept)}
	}
	if err == nil && pointsAtRelay(rec.url) {
		err = &intercept.WireError{Code: intercept.CodeInvalidParams, Message: fmt.Sprintf("invalid params: push notification url %q leads to the gateway's own push relay, a loop", rec.url)}
	}
	if err == nil && sameHost(rec.url, g.opts.PublicURL) {
		// The agent's pushes would be calls to the gateway, with the
		// caller's authentication: the agent acting as the caller.
		err = &intercept.WireError{Code: intercept.CodeInvalidParams, Message: fmt.Sprintf("invalid params: push notification url %q leads to the gateway itself (public_url): the agent's pushes would be calls to it with this config's authentication", rec.url)}
	}
	if err != nil {
		return nil, nil, err
	}
	return out, rec, nil
}

// maxRelayKept bounds what the gateway keeps of a caller's push config
// (its url, token and authentication), in process and, with relays
// shared, in Redis: otherwise the request's bound (4 MiB) times a
// principal's tenth of max_relays, on every replica and in the store.
const maxRelayKept = 16 << 10

// pointsAtRelay reports whether u's path, as any server would read it,
// is under a relay's.
func pointsAtRelay(u string) bool {
	p, err := url.Parse(webURL(u))
	if err != nil {
		return true
	}
	path := strings.ToLower(strings.ReplaceAll(p.Path, `\`, "/"))
	return strings.Contains(path, strings.TrimSuffix(PushRelayPath, "/"))
}

// sameHost reports whether u and public name the same host and port,
// as a server would read them.
func sameHost(u, public string) bool {
	a, err := url.Parse(webURL(u))
	if err != nil {
		return true
	}
	b, err := url.Parse(public)
	if err != nil {
		return false
	}
	port := func(x *url.URL) string {
		if p := x.Port(); p != "" {
			return p
		}
		if strings.EqualFold(x.Scheme, "https") {
			return "443"
		}
		return "80"
	}
	host := func(x *url.URL) string { return strings.TrimSuffix(strings.ToLower(x.Hostname()), ".") }
	return host(a) == host(b) && port(a) == port(b)
}

// DeliveredByRelay reports whether r is a push the gateway's relay
// delivered, come back to the gateway: a caller's URL that leads to it
// under another name than public_url's. No such request is served, on any
// path: it would be the agent calling the gateway with the caller's
// authentication (or a loop through the relay).
func DeliveredByRelay(r *http.Request) bool { return r.Header.Get(relayHopHeader) != "" }

// refuseDelivered answers 508 to a request DeliveredByRelay.
func (g *Gateway) refuseDelivered(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if DeliveredByRelay(r) {
			g.log.Warn("a2a: push relay: a push the gateway delivered came back to it (a caller's URL leads to the gateway): refused", "path", r.URL.Path)
			LoopDetected(w)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// LoopDetected answers a request DeliveredByRelay.
func LoopDetected(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusLoopDetected)
	io.WriteString(w, "a push the gateway delivered came back to it: not served\n")
}

// relayMessage returns m with its push config relayed (relayConfig) in
// params, or in params' member under (a message's configuration), and the
// relay, added.
func (g *Gateway) relayMessage(ctx context.Context, a *agent, m *intercept.Message, under, task string) (*intercept.Message, *pushRecord, error) {
	v := m.Params
	if under != "" {
		v = intercept.Member(m.Params, under)
	}
	out, rec, err := g.relayConfig(ctx, a, v, task)
	if err != nil {
		return nil, nil, err
	}
	params := out
	if under != "" {
		if params, err = intercept.WithMember(m.Params, under, out); err != nil {
			return nil, nil, err
		}
	}
	raw, err := intercept.WithMember(m.Raw, "params", params)
	if err != nil {
		return nil, nil, err
	}
	sent, err := intercept.DecodeMessage(raw)
	if err != nil {
		return nil, nil, err
	}
	err = g.pushes.add(rec)
	g.forgetEnded(ctx) // the relays the bounds ended for it
	if err != nil {
		return nil, nil, err
	}
	if err := g.saveRelay(ctx, rec); err != nil {
		g.pushes.drop(rec) // the store never held it
		return nil, nil, errRegisterShared
	}
	return sent, rec, nil
}

// showCaller rewrites, in an agent's answer about push configs, each
// config naming one of owner's relays back to what the caller registered
// (its url, token and authentication), learning the config's id; a relay
// that is not owner's, or is gone, keeps its URL but loses its token.
// The relay's token never reaches a caller.
func (g *Gateway) showCaller(ctx context.Context, agentName, owner string, result jsontext.Value) jsontext.Value {
	if result == nil {
		return jsontext.Value("null")
	}
	prefix := g.relayURL("")
	lookups := 0
	var learned []*pushRecord
	out, err := rewriteObjects(result, func(ms []jsonMember) []jsonMember {
		var rec *pushRecord
		ours := false
		for _, m := range ms {
			if m.name == "url" {
				if id, ok := strings.CutPrefix(unquote(m.value), prefix); ok {
					ours = true
					if r := g.relayShown(ctx, id, &lookups); r != nil && r.agent == agentName && r.owner == owner {
						rec = r
					}
				}
			}
		}
		if !ours {
			return ms
		}
		kept := ms[:0:0]
		for _, m := range ms {
			switch m.name {
			case "token", "authentication":
				continue
			case "url":
				if rec != nil {
					m.value, _ = jsontext.AppendQuote(nil, rec.url)
				}
			case "id":
				if rec != nil {
					g.pushes.mu.Lock()
					if rec.configID == "" {
						rec.configID = unquote(m.value)
						learned = append(learned, rec)
					}
					g.pushes.mu.Unlock()
				}
			}
			kept = append(kept, m)
		}
		if rec != nil {
			if rec.callerTok != "" {
				tok, _ := jsontext.AppendQuote(nil, rec.callerTok)
				kept = append(kept, jsonMember{"token", tok})
			}
			if rec.auth != nil {
				kept = append(kept, jsonMember{"authentication", rec.auth})
			}
		}
		return kept
	})
	if err != nil {
		return nil
	}
	for _, r := range learned {
		_ = g.updateRelay(ctx, r) // the id a delete through another replica names
	}
	return out
}

// maxShownLookups bounds the relays one answer about push configs may
// look up in the shared store (a list of thousands would otherwise cost
// as many round trips); past it, or once the store fails, a config of a
// relay this process does not hold is shown without its token, as one
// that is gone.
const maxShownLookups = 64

// relayShown is the relay id names for showCaller: this process's, or
// the shared store's (registered through another replica).
func (g *Gateway) relayShown(ctx context.Context, id string, lookups *int) *pushRecord {
	if r := g.pushes.get(id); r != nil || g.shared == nil || *lookups >= maxShownLookups {
		return r
	}
	*lookups++
	r, err := g.shared.load(ctx, id)
	if err != nil {
		*lookups = maxShownLookups
		return nil
	}
	return r
}

// servePush takes an agent's push for a relay and delivers it.
func (g *Gateway) servePush(w http.ResponseWriter, r *http.Request) {
	answer := func(status int, msg string) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(status)
		io.WriteString(w, msg+"\n")
	}
	rec, err := g.relayFor(r.Context(), r.PathValue("id"))
	if err != nil {
		// The store holds the relay, or not: neither delivered unchecked
		// nor answered 404 (the agent would give up on a live relay).
		if n, ok := g.unanswered.take(time.Now()); ok {
			why := "the shared relay store did not answer"
			if n > 1 {
				why = fmt.Sprintf("%s (%d pushes refused so since the last such event)", why, n)
			}
			g.log.Warn("a2a: push relay: push refused: the shared relay store did not answer", "remote", remoteAddr(r), "refused", n, "err", err)
			g.pushRefused("", "", why)
		}
		answer(http.StatusServiceUnavailable, "the gateway cannot read its push relays now (its shared store does not answer): not delivered; try again")
		return
	}
	if rec == nil {
		// Anyone may POST here, unauthenticated: no event, and only a
		// debug line, or each such request would be a write to the audit
		// log.
		g.log.Debug("a2a: push relay: a push for a relay the gateway does not hold", "remote", remoteAddr(r))
		if g.shared != nil {
			answer(http.StatusNotFound, "no push relay with this id: deleted, ended or expired")
			return
		}
		answer(http.StatusNotFound, "no push relay with this id here: deleted, expired, or registered through another replica (relays are kept by the replica that registered them)")
		return
	}
	if sum := sha256.Sum256([]byte(r.Header.Get(tokenHeader))); subtle.ConstantTimeCompare(sum[:], rec.tokenHash[:]) != 1 {
		g.log.Warn("a2a: push relay: a push without the relay's token refused", "agent", rec.agent, "principal", principalOf(rec.owner), "remote", remoteAddr(r))
		g.pushRefused(rec.agent, principalOf(rec.owner), "wrong or missing token")
		answer(http.StatusUnauthorized, "the push does not carry the token the gateway gave this push config")
		return
	}
	gone := func() bool {
		err := lapsed(rec.principal)
		if rec.principal == nil {
			err = g.storedLapsed(rec.cred, rec.owner) // registered through another replica, or before a restart
		}
		if err == nil {
			return false
		}
		why := err.Error()
		if errors.Is(err, intercept.ErrUncheckable) {
			// Cannot tell now (the key file unreadable): the agent may
			// try again; ending the relay could not be undone.
			g.log.Warn("a2a: push relay: push refused: the caller's credential cannot be checked now", "agent", rec.agent, "principal", principalOf(rec.owner), "why", why)
			g.pushRefused(rec.agent, principalOf(rec.owner), "the caller's credential cannot be checked now: "+why)
			answer(http.StatusServiceUnavailable, "the gateway cannot check the credential of the caller that registered this push config now: not delivered; try again")
			return true
		}
		g.endRelay(r.Context(), rec)
		g.log.Info("a2a: push relay: push dropped and the relay ended: the caller's credential no longer holds", "agent", rec.agent, "principal", principalOf(rec.owner), "why", why)
		g.pushRefused(rec.agent, principalOf(rec.owner), "the caller's credential no longer holds: "+why)
		answer(http.StatusGone, "the caller that registered this push config is no longer authenticated: not delivered, and the relay is ended")
		return true
	}
	if gone() {
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, g.opts.MaxBody))
	if err != nil {
		g.pushRefused(rec.agent, principalOf(rec.owner), "body too large or unreadable")
		answer(http.StatusRequestEntityTooLarge, fmt.Sprintf("a push larger than %d bytes, or unreadable: not delivered", g.opts.MaxBody))
		return
	}
	// The body may have taken as long as the agent liked (the server
	// bounds only the headers' read): the credential is checked again for
	// what is delivered now.
	if gone() {
		return
	}
	b := jsontext.Value(body)
	g.pushes.mu.Lock()
	unbound := rec.task == ""
	g.pushes.mu.Unlock()
	if why := g.pushNamesTask(r.Context(), rec, b); why != "" {
		g.log.Warn("a2a: push relay: push refused", "agent", rec.agent, "principal", principalOf(rec.owner), "why", why)
		g.pushRefused(rec.agent, principalOf(rec.owner), why)
		answer(http.StatusForbidden, why+": not delivered")
		return
	}
	if unbound {
		switch err := g.updateRelay(r.Context(), rec); {
		case errors.Is(err, errRelayGone):
			answer(http.StatusNotFound, "no push relay with this id: deleted, ended or expired")
			return
		case err != nil:
			// Bound here only: another replica would bind the relay to
			// whichever task the next push named.
			g.pushRefused(rec.agent, principalOf(rec.owner), "the shared relay store did not answer")
			answer(http.StatusServiceUnavailable, "the gateway cannot record its push relay's task now (its shared store does not answer): not delivered; try again")
			return
		}
	}
	switch live, err := g.liveRelay(r.Context(), rec); {
	case err != nil:
		g.log.Warn("a2a: push relay: push refused: the shared relay store did not answer", "remote", remoteAddr(r), "err", err)
		g.pushRefused(rec.agent, principalOf(rec.owner), "the shared relay store did not answer")
		answer(http.StatusServiceUnavailable, "the gateway cannot read its push relays now (its shared store does not answer): not delivered; try again")
		return
	case !live:
		answer(http.StatusNotFound, "no push relay with this id: deleted, ended or expired while the push came")
		return
	}
	switch g.delivering.start(rec.share) {
	case errBusy:
		answer(http.StatusServiceUnavailable, "the gateway is delivering as many pushes as it does at once; try again")
		return
	case errOwnerBusy:
		answer(http.StatusServiceUnavailable, "the gateway is delivering as many pushes to this caller as it does at once; try again")
		return
	}
	defer g.delivering.end(rec.share)
	// What the agent pushes is its answer, read later: screened as one
	// (the Interceptor's OnResult: classifier.scan_results), once it is
	// to be delivered: a push turned away is not screened, nor recorded
	// as an injection its caller never got, and the screening of pushes
	// is bounded as their deliveries are. With
	// classifier.on_result_injection: withhold, one that looks like a
	// prompt injection is not delivered (the agent is told only that).
	a := g.agents[rec.agent]
	// Never the gateway's soft deny (softdeny.go): a rejected task is
	// delivered as a tasks/get reads it, without the envelope's members,
	// so that the caller learns its task ended; one that cannot be so
	// made is refused.
	if stripped, changed, ok := withoutForgedEnvelope(b); !ok {
		why := fmt.Sprintf("the push may be a rejected task nested deeper than the %d levels the gateway reads, where a denial envelope, which only the gateway writes, cannot be taken out", maxWalkDepth)
		g.log.Warn("a2a: push relay: push refused", "agent", rec.agent, "principal", principalOf(rec.owner), "why", why)
		g.pushRefused(rec.agent, principalOf(rec.owner), why)
		answer(http.StatusUnprocessableEntity, why+": not delivered")
		return
	} else if changed {
		b, body = stripped, stripped
	}
	if why := g.screen(&intercept.ActionDescriptor{TxnID: intercept.NewTxnID(), ToolName: "push", TargetEndpoint: a.target,
		Upstream: "a2a:" + a.Name, Agent: ownerAgent(rec.owner)}, b, false); why != "" {
		// The agent is told no more than that: the finding kinds (in the
		// event) would tell it what to vary until none is found.
		g.log.Warn("a2a: push relay: push withheld", "agent", rec.agent, "principal", principalOf(rec.owner))
		answer(http.StatusUnprocessableEntity, "the push was not delivered")
		return
	}
	status, err := g.deliver(r.Context(), rec, body, r.Header.Get("Content-Type"))
	if err != nil {
		// The caller's URL is not the agent's to know (its path or query
		// may hold the webhook's secret), nor the log's beyond its host.
		g.log.Warn("a2a: push relay: delivery failed", "agent", rec.agent, "principal", principalOf(rec.owner), "err", redactURL(err))
		switch {
		case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
			answer(http.StatusGatewayTimeout, "delivering the push to the caller timed out")
		case errors.Is(err, errPushAddress):
			answer(http.StatusBadGateway, "delivering the push to the caller failed: the caller's URL leads into the gateway's network")
		default:
			answer(http.StatusBadGateway, "delivering the push to the caller failed")
		}
		return
	}
	if terminal(body) {
		// The task's last update: the agent pushes no more for it.
		g.endRelay(r.Context(), rec)
	} else {
		g.pushes.touch(rec) // in the store, renewed before the delivery (liveRelay)
	}
	// The delivery's status class, not its body or headers: the caller's
	// answer is none of the agent's business.
	switch {
	case status >= 200 && status < 300:
		answer(http.StatusOK, "delivered")
	case status >= 400 && status < 500:
		answer(http.StatusBadRequest, fmt.Sprintf("the caller's webhook refused the push (HTTP %d)", status))
	default:
		answer(http.StatusBadGateway, fmt.Sprintf("the caller's webhook answered HTTP %d", status))
	}
}

// refusalSampler bounds what pushes refused before their relay is known
// (the shared store did not answer) write to the log and the audit:
// anyone may POST to a relay's URL, with any id, and with the store up
// a push for a relay that is not there is only a debug line. One line
// and event a second, with how many pushes were refused since.
type refusalSampler struct {
	mu   sync.Mutex // guards the fields below
	last time.Time  // when the last was heard
	n    int        // refused since
}

// take counts a refusal at now and reports whether it is heard, with
// how many were refused since the last that was.
func (s *refusalSampler) take(now time.Time) (n int, heard bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	if !s.last.IsZero() && now.Sub(s.last) < time.Second {
		return 0, false
	}
	n, s.n, s.last = s.n, 0, now
	return n, true
}

// relayFor returns the relay id names, or nil. With a shared store
// (Options.Relays) the store says whether it lives: this process's copy,
// which holds the caller's Principal, serves only while the store holds
// the relay (another replica may have ended it), the task the store has
// bound it to if it had none.
func (g *Gateway) relayFor(ctx context.Context, id string) (*pushRecord, error) {
	rec := g.pushes.get(id)
	if g.shared == nil {
		return rec, nil
	}
	stored, err := g.shared.load(ctx, id)
	switch {
	case err != nil:
		return nil, err
	case stored == nil:
		if rec != nil {
			g.pushes.drop(rec)
		}
		return nil, nil
	case g.agents[stored.agent] == nil:
		return nil, nil // an agent this replica's config does not name
	case rec == nil || rec.tokenHash != stored.tokenHash:
		return stored, nil
	}
	g.pushes.mu.Lock()
	if rec.task == "" {
		rec.task = stored.task
	}
	if rec.configID == "" {
		rec.configID = stored.configID
	}
	g.pushes.mu.Unlock()
	return rec, nil
}

// remoteAddr is the client r came from: behind trusted_proxies the one
// they forward for (intercept.ClientAddrFrom), not the proxy.
func remoteAddr(r *http.Request) string {
	if a := intercept.ClientAddrFrom(r.Context()); a != "" {
		return a
	}
	return r.RemoteAddr
}

// pushRefused tells Options.OnPushRefused.
func (g *Gateway) pushRefused(agent, principal, reason string) {
	if g.opts.OnPushRefused != nil {
		g.opts.OnPushRefused(agent, principal, reason)
	}
}

// lapsed says why p's credential no longer holds, or "".
func lapsed(p *intercept.Principal) error {
	if p == nil {
		return nil
	}
	if !p.Expires.IsZero() && !time.Now().Before(p.Expires) {
		return errExpired
	}
	if p.Check != nil {
		return p.Check()
	}
	return nil
}

var errExpired = errors.New("expired")

// pushNamesTask says what is wrong with a push body for rec, or "": it
// must name rec's task and no other. A relay registered with a message
// names no task until the agent's answer does; a push that comes first
// (a blocking message/send is answered when the task ends) binds it to
// its task, if that task is the caller's or no one's yet.
func (g *Gateway) pushNamesTask(ctx context.Context, rec *pushRecord, b jsontext.Value) string {
	if !b.IsValid() || b.Kind() != '{' {
		return "the push is not a JSON object"
	}
	if why, bad := intercept.CaseVariant(b, a2aFields); bad {
		return "the push: " + why
	}
	ids := taskIDs(b)
	task := ""
	for _, id := range ids {
		if id == "" || (task != "" && id != task) {
			return "the push names no task, or more than one"
		}
		task = id
	}
	if task == "" {
		return "the push names no task"
	}
	g.pushes.mu.Lock()
	bound := rec.task
	g.pushes.mu.Unlock()
	if bound == "" {
		g.tasks.add(ctx, rec.agent, task, rec.owner, rec.share) // the first owner stays
		if !g.tasks.owns(ctx, rec.agent, task, rec.owner) {
			return "the push names another caller's task"
		}
		g.pushes.bind(rec, []string{task})
		g.pushes.mu.Lock()
		bound = rec.task
		g.pushes.mu.Unlock()
	}
	if task != bound {
		return "the push names another task than the one its config was registered for"
	}
	return ""
}

// terminal reports whether a push carries its task's final state.
func terminal(body jsontext.Value) bool {
	state := ""
	for _, v := range []jsontext.Value{body, intercept.Member(body, "task"), intercept.Member(body, "statusUpdate")} {
		if s := intercept.StringMember(intercept.Member(v, "status"), "state"); s != "" {
			state = s
		}
	}
	switch strings.TrimPrefix(strings.ToLower(state), "task_state_") {
	case "completed", "canceled", "cancelled", "failed", "rejected":
		return true
	}
	return false
}

// deliver POSTs body to rec's caller's URL with its token and
// authentication, as the JSON media type the agent sent (pushContentType),
// and returns the webhook's status.
func (g *Gateway) deliver(ctx context.Context, rec *pushRecord, body []byte, contentType string) (int, error) {
	a := g.agents[rec.agent]
	ctx, cancel := context.WithTimeout(ctx, g.opts.PushTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rec.url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", pushContentType(contentType))
	req.Header.Set(relayHopHeader, "1")
	if rec.callerTok != "" {
		req.Header.Set(tokenHeader, rec.callerTok)
	}
	if h := authorization(rec.auth); h != "" {
		req.Header.Set("Authorization", h)
	}
	resp, err := a.pushes.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, nil
}

// pushContentType is the Content-Type a push is delivered with: the
// agent's when it names one of A2A's JSON media types (application/json,
// and application/a2a+json, which @a2a-js/sdk's sender gives a 1.0
// StreamResponse, so that a webhook telling 1.0 from 0.3 by it still can),
// with its charset only when that is UTF-8, which the relay read the push
// as: a webhook decoding by another (express.json() takes any utf-*) would
// read in UTF-7 quotes and braces where the relay read letters, another
// push than the one checked and screened. application/json for anything
// else, the relay passing on nothing of the agent's it does not know.
func pushContentType(sent string) string {
	mt, params, err := mime.ParseMediaType(sent)
	if err != nil || (mt != "application/json" && mt != "application/a2a+json") {
		return "application/json"
	}
	var keep map[string]string
	if cs, ok := params["charset"]; ok && strings.EqualFold(cs, "utf-8") {
		keep = map[string]string{"charset": "utf-8"}
	}
	if out := mime.FormatMediaType(mt, keep); out != "" {
		return out
	}
	return "application/json"
}

// authorization is the Authorization header a push config's
// authentication asks for, "" for none. A2A 1.0's {"scheme",
// "credentials"} names an HTTP authentication scheme (IANA's registry:
// Bearer, Basic, Digest…), written as @a2a-js/sdk's sender writes it,
// "scheme credentials" (Bearer and Basic in their usual case); of 0.3's
// {"schemes": [...], "credentials"}, Bearer or Basic when listed (all
// a2a-go's sender takes), else the first HTTP scheme (the one the SDK's
// compat layer keeps).
func authorization(auth jsontext.Value) string {
	creds := intercept.StringMember(auth, "credentials")
	if creds == "" || strings.ContainsAny(creds, "\r\n") {
		return ""
	}
	known := func(s string) string {
		switch strings.ToLower(s) {
		case "bearer":
			return "Bearer"
		case "basic":
			return "Basic"
		}
		return ""
	}
	if s := intercept.StringMember(auth, "scheme"); s != "" {
		if k := known(s); k != "" {
			return k + " " + creds
		}
		if httpToken(s) {
			return s + " " + creds
		}
		return ""
	}
	found, first := "", ""
	_ = intercept.EachElement(intercept.Member(auth, "schemes"), func(_ int, v jsontext.Value) error {
		s := unquote(v)
		if k := known(s); k != "" && found == "" {
			found = k
		}
		if first == "" && httpToken(s) {
			first = s
		}
		return nil
	})
	if found == "" {
		found = first
	}
	if found == "" {
		return ""
	}
	return found + " " + creds
}

// httpToken reports whether s is an HTTP token (RFC 9110 5.6.2), as an
// authentication scheme's name must be.
func httpToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// redactURL returns err with the URL a *url.Error names cut to its
// scheme and host.
func redactURL(err error) error {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return err
	}
	short := "the push URL"
	if u, perr := url.Parse(ue.URL); perr == nil {
		short = u.Scheme + "://" + u.Host
	}
	return &url.Error{Op: ue.Op, URL: short, Err: ue.Err}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// errPushAddress is a delivery's connection refused by pushDialControl.
var errPushAddress = errors.New("the push URL's host resolves to an address in the gateway's network")

// pushClient is the client that delivers an agent's pushes: it connects
// to no loopback, private, link-local or metadata address, checked on
// the address dialled (after resolution, so a name that resolves
// otherwise than when the push config was set is caught), except those
// in allowed; uses no proxy (which would connect for it); follows no
// redirect; and gives up after timeout.
func pushClient(allowed []netip.Prefix, timeout time.Duration) *http.Client {
	d := &net.Dialer{Timeout: timeout, Control: pushDialControl(allowed)}
	t := &http.Transport{DialContext: d.DialContext, TLSHandshakeTimeout: timeout, ResponseHeaderTimeout: timeout,
		MaxIdleConns: 256, MaxIdleConnsPerHost: 16, IdleConnTimeout: 90 * time.Second, ForceAttemptHTTP2: true}
	return &http.Client{Transport: t, Timeout: timeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// pushDialControl refuses a connection to an address privateAddr names,
// unless allowed holds it.
func pushDialControl(allowed []netip.Prefix) func(network, address string, _ syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("%w: %q is not an address", errPushAddress, address)
		}
		ip := ap.Addr().Unmap().WithZone("")
		for _, p := range allowed {
			if p.Contains(ip) {
				return nil
			}
		}
		if why := privateAddr(ip); why != "" {
			return fmt.Errorf("%w (%s, %s)", errPushAddress, ip, why)
		}
		return nil
	}
}

// compileAddresses reads an agent's allow_push_addresses.
func compileAddresses(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for i, e := range list {
		e = strings.TrimSpace(e)
		if p, err := netip.ParsePrefix(e); err == nil {
			out = append(out, p.Masked())
			continue
		}
		ip, err := netip.ParseAddr(e)
		if err != nil {
			return nil, fmt.Errorf("allow_push_addresses[%d] %q: write an IP address (10.0.0.7) or a CIDR prefix (10.0.0.0/8)", i, list[i])
		}
		ip = ip.Unmap()
		out = append(out, netip.PrefixFrom(ip, ip.BitLen()))
	}
	return out, nil
}

// jsonMember is one member of a JSON object, its value as written.
type jsonMember struct {
	name  string
	value jsontext.Value
}

// rewriteObjects returns v with every object in it, innermost first,
// replaced by what fn makes of its members; the rest as written.
func rewriteObjects(v jsontext.Value, fn func([]jsonMember) []jsonMember) (jsontext.Value, error) {
	switch v.Kind() {
	case '{':
		var ms []jsonMember
		err := intercept.EachMember(v, func(k string, x jsontext.Value) error {
			x, err := rewriteObjects(x, fn)
			ms = append(ms, jsonMember{k, x})
			return err
		})
		if err != nil {
			return nil, err
		}
		var out []byte
		out = append(out, '{')
		for i, m := range fn(ms) {
			if i > 0 {
				out = append(out, ',')
			}
			out, _ = jsontext.AppendQuote(out, m.name)
			out = append(out, ':')
			out = append(out, m.value...)
		}
		return append(out, '}'), nil
	case '[':
		out := []byte{'['}
		err := intercept.EachElement(v, func(i int, x jsontext.Value) error {
			x, err := rewriteObjects(x, fn)
			if i > 0 {
				out = append(out, ',')
			}
			out = append(out, x...)
			return err
		})
		if err != nil {
			return nil, err
		}
		return append(out, ']'), nil
	}
	return v, nil
}
