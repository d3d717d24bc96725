// Package approval holds tools/calls that policy sends to a human. A held
// call is not forwarded: the client is told approval is required, with an
// approval id, and an operator approves or declines it through the admin
// API (or `sluice approvals`). The approval binds to the exact call — a
// SHA-256 over the RFC 8785 canonical JSON of upstream, tool and arguments,
// plus the policy version — so when the agent sends that same call again it
// is allowed once; any other call, or the same call under another policy,
// needs its own approval. A request nobody answers times out to a deny.
//
//	gate := &approval.Gate{Next: policy, Store: approval.NewStore(approval.Options{})}
//	ic := &intercept.Interceptor{Decider: gate}
//	admin := gate.Store.Handler() // GET /admin/approvals, POST /admin/approvals/{id}
package approval

import (
	"bytes"
	"cmp"
	"context"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/text/unicode/norm"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/internal/jcs"
	"github.com/sluicehq/sluice/telemetry"
)

// Status of an approval request.
type Status string

const (
	Pending  Status = "pending"
	Approved Status = "approved"
	Declined Status = "declined"
	Expired  Status = "expired"
	Used     Status = "used"
	// Withdrawn: the client cancelled the call while it was held (see
	// Store.Withdraw), or the gateway refused it because its credential
	// no longer held (Store.Abandon). Nobody can approve it any more, nor
	// use an approval it had; the same call sent again is held anew.
	Withdrawn Status = "withdrawn"
)

// Reason codes of decisions the gate makes.
const (
	ReasonGranted  = "approval_granted"
	ReasonDeclined = "approval_declined"
	ReasonTimeout  = "approval_timeout"
	// ReasonTooMany denies a call that would be held while its agent
	// already has MaxPendingPerAgent calls waiting, its client address
	// (unauthenticated) a tenth of the store's MaxLive, or the store
	// MaxLive: a flood of held calls must not slow every approval, nor
	// leave no room for other agents' calls.
	ReasonTooMany = "approval_limit"
	// ReasonContinued allows a 2026-07-28 retry that answers what the
	// upstream asked of a call an approval allowed (see Gate.UpstreamAsked):
	// the same approved call going on, not a new one.
	ReasonContinued = "approval_continued"
)

// Request is one call waiting for, or given, a human's answer.
type Request struct {
	ID        string         `json:"id"`
	TxnID     string         `json:"txn_id"`
	Status    Status         `json:"status"`
	Upstream  string         `json:"upstream"`
	Tool      string         `json:"tool"`
	Arguments jsontext.Value `json:"arguments"`
	// Extra is what the call holds for the upstream beside its
	// arguments (intercept.ActionDescriptor.CallExtra), bound with them.
	Extra         jsontext.Value `json:"extra,omitempty"`
	CallHash      string         `json:"call_hash"`
	PolicyVersion string         `json:"policy_version,omitempty"`
	Agent         string         `json:"agent,omitempty"`
	// AgentHash is the SHA-256 (hex) of Agent when it is longer than a
	// finished request keeps (maxHistoryName): the request is matched
	// with its agent's calls by it once Agent is kept cut.
	AgentHash string `json:"agent_hash,omitempty"`
	Session   string `json:"session,omitempty"`
	// Client is the address the call came from (an IP, an IPv6 /64)
	// when its agent is not authenticated, so named by itself: a
	// client renaming itself at each call counts against one bound.
	// Empty for an authenticated agent, or over stdio.
	Client    string    `json:"client,omitempty"`
	Reason    string    `json:"reason"`
	RuleID    string    `json:"rule_id,omitempty"`
	Created   time.Time `json:"created"`
	Expires   time.Time `json:"expires"`
	DecidedBy string    `json:"decided_by,omitempty"`
	// BaseHash is CallHash without the call's inputResponses (answers to
	// what its upstream asked) and requestState (the upstream's), when it
	// had any: what a continuation of the call (Gate.UpstreamAsked),
	// carrying a state the approval was told of, is compared with.
	BaseHash string `json:"base_hash,omitempty"`
	// Asked holds the SHA-256 (hex) of each requestState the upstream
	// answered the approved call with and that no retry has carried yet:
	// the retry carrying one goes on under this approval, once.
	Asked []string `json:"asked,omitempty"`
}

// Options configure a Store; the zero value means the defaults.
type Options struct {
	// Timeout is how long a request waits for an answer, and how long an
	// approval stays usable. Zero means 15 minutes.
	Timeout time.Duration
	// History is how many finished requests (used, declined, expired) are
	// kept, without their arguments, for List and Get. Zero means 100.
	History int
	// StateKey is the 32-byte AES-256-GCM key that seals the requestState
	// of 2026-07-28 approval questions (see SealState). Nil means a random
	// key: fresh per Store from NewStore, whose requests live only in its
	// memory; kept in the database by OpenStore, so every process sharing
	// the file opens the states of the others.
	StateKey []byte
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// MaxLive bounds the live requests (waiting, or approved and not yet
	// used) of the store; a call past it is not held but denied with
	// approval_limit. Unauthenticated calls from one client address may
	// hold a tenth of it (at least 1). Zero means [MaxLive].
	MaxLive int
	// MaxLiveBytes bounds the bytes of the arguments (and what else the
	// call sends, and its tool's and agent's names) that live requests
	// keep; an agent, and the
	// unauthenticated calls of one client address, may keep a tenth of
	// it. A call past one is denied with approval_limit. Zero means
	// [MaxLiveBytes].
	MaxLiveBytes int64
	// OnChange, if set, is called after every change of a request.
	OnChange func(Request)
	// OnUnavailable, if set, is told of every error of a persistent
	// Store's backend (each wraps ErrUnavailable): the SQLite file's disk
	// full, Redis down. The operation failed: a call to hold was denied, a
	// decision not taken. It is called with the store locked and must not
	// call the Store.
	OnUnavailable func(error)
	// OnAvailable, if set, is told once when a persistent Store's backend
	// answers again (an operation read and wrote it) after OnUnavailable
	// was told of a failure. It is called with the store locked and must
	// not call the Store.
	OnAvailable func()
	// AgentClaims name the JWT claims agents are named by besides sub,
	// azp, client_id, appid and cid (auth.jwt.agent_claim): an admin JWT
	// whose such claim names the held call's agent cannot answer it
	// (Handler). Nil: only those five and the principal's ID.
	AgentClaims []string
	// SecretKeys are more key fragments whose values Shown redacts, as
	// the audit log does (telemetry.Redactor.SecretKeys: audit.secret_keys).
	SecretKeys []string
}

const defaultHistory = 100

// Store keeps approval requests in memory (NewStore) or in an SQLite file
// shared by processes (OpenStore). Requests waiting for an answer
// or approved and not yet used are live; finished ones drop their
// arguments and stay in a bounded history. It is safe for concurrent use.
type Store struct {
	timeout  time.Duration
	history  int
	now      func() time.Time
	onChange func(Request)
	// onUnavailable is Options.OnUnavailable.
	onUnavailable func(error)
	// onAvailable is Options.OnAvailable.
	onAvailable func()
	// agentClaims are Options.AgentClaims.
	agentClaims []string
	// redact is how Shown redacts what a held call sends.
	redact   telemetry.Redactor
	maxLive  int
	maxBytes int64
	state    cipher.AEAD
	be       backend // where OpenStore and OpenRedisStore keep requests; nil keeps them in memory only

	closed atomic.Bool // Close was called: operations fail

	mu       sync.Mutex         // guards the fields below
	tx       backendTx          // the transaction between lock and unlock, with be
	beErr    error              // the last failure of be, if the last operation failed
	beFailed time.Time          // when
	failing  bool               // the last operation failed with ErrUnavailable: the next to succeed tells onAvailable
	snap     map[string]snapRow // with be: each request's row as the backend holds it
	// version is the backend's version (backendTx.version) when memory
	// last matched it, "" when unknown: a lock finding it unchanged
	// keeps what memory holds instead of reading every request.
	version   string
	byID      map[string]*Request
	byCall    map[string]*Request // agent + call hash -> newest request
	done      []string            // ids of finished requests in byID, oldest first
	live      int                 // pending and approved requests in byID
	nextSweep time.Time
	changed   chan struct{} // closed and replaced after every change, for Wait
}

// NewStore returns an empty store. It panics if opts.StateKey is set but
// not 32 bytes long.
func NewStore(opts Options) *Store {
	s := &Store{timeout: opts.Timeout, history: opts.History, now: opts.Now, onChange: opts.OnChange, onUnavailable: opts.OnUnavailable, onAvailable: opts.OnAvailable, agentClaims: opts.AgentClaims,
		redact:   telemetry.Redactor{SecretKeys: opts.SecretKeys},
		maxLive:  cmp.Or(max(opts.MaxLive, 0), MaxLive),
		maxBytes: cmp.Or(max(opts.MaxLiveBytes, 0), MaxLiveBytes),
		byID:     make(map[string]*Request), byCall: make(map[string]*Request), changed: make(chan struct{})}
	if s.timeout <= 0 {
		s.timeout = 15 * time.Minute
	}
	if s.history <= 0 {
		s.history = defaultHistory
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.state = newStateAEAD(opts.StateKey)
	return s
}

// newID returns a request id with 128 random bits.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return "apr_" + hex.EncodeToString(b[:])
}

// Errors of Decide.
var (
	ErrNotFound    = errors.New("approval: no such request")
	ErrNotPending  = errors.New("approval: request is not pending")
	ErrBadDecision = errors.New("approval: decision must be approve or decline")
	// ErrSelfApproval refuses a decision whose decider is the agent whose
	// call is held: an agent never answers its own approval.
	ErrSelfApproval = errors.New("approval: the agent whose call is held cannot answer it; another operator must")
	// ErrUnavailable is in every error of a persistent Store whose
	// database or Redis did not answer: nothing was read or changed.
	ErrUnavailable = errors.New("approval: the approvals store is unavailable")
)

// CallHash binds an approval to one exact call under one policy version.
func CallHash(d *intercept.ActionDescriptor, policyVersion string) string {
	args := d.Parameters.Clone()
	if len(args) == 0 {
		args = jsontext.Value("{}")
	}
	v, err := json.Marshal(struct {
		Upstream  string         `json:"upstream"`
		Tool      string         `json:"tool"`
		Arguments jsontext.Value `json:"arguments"`
	}{d.Upstream, d.ToolName, args})
	canon := jsontext.Value(v)
	if err != nil || jcs.Canonicalize(&canon) != nil {
		canon = jsontext.Value(d.Upstream + "\x00" + d.ToolName + "\x00" + string(args))
	}
	h := sha256.New()
	h.Write(canon)
	if numbersRounded(args) || foldedNames(args) {
		// The canonical form reads every number as a float64, but the
		// upstream gets the literal: 12345678901234567891 would pass for
		// ...890. And it sorts members, but a Go upstream reads names
		// that differ only in case as one, the last it meets:
		// {"AMOUNT":9,"amount":5} pays 5 where {"amount":5,"AMOUNT":9}
		// pays 9. Such a call is bound to its exact bytes.
		h.Write([]byte{0})
		h.Write(args)
	}
	h.Write([]byte{0})
	h.Write([]byte(policyVersion))
	if len(d.CallExtra) > 0 {
		// What the upstream gets beside the arguments (_meta, other
		// params members): the approved call is not sent again with
		// data of the agent's choosing there.
		h.Write([]byte{0})
		h.Write(d.CallExtra)
	}
	if info, caps := intercept.ValidMembers(d.Meta, "io.modelcontextprotocol/clientInfo", "io.modelcontextprotocol/clientCapabilities"); info != nil || caps != nil {
		// The protocol's members CallExtra leaves out (every 2026-07-28
		// request has them) are the client's to fill all the same: a
		// client name, version or capability of the agent's choosing is
		// not sent under the approval of a call that had others.
		for _, v := range [...]jsontext.Value{info, caps} {
			h.Write([]byte{1})
			c := v.Clone()
			if jcs.Canonicalize(&c) != nil {
				c = v
			}
			h.Write(c)
		}
	}
	if d.UpstreamState != "" {
		// The upstream acts on its requestState, not on what the operator
		// saw: the approved answers sent with another state it issued this
		// agent for the same call (another round, another run) would
		// answer another question. The approved call goes on with its
		// own state only; the states its upstream answers it with next
		// go on under the approval too (Gate.UpstreamAsked).
		h.Write([]byte{2})
		h.Write([]byte(stateHash(d.UpstreamState)))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// foldedNames reports whether an object in v has two member names that
// differ only in case.
func foldedNames(v jsontext.Value) bool {
	_, bad := intercept.CaseVariant(v, nil)
	return bad
}

// numbersRounded reports whether a number in v is written otherwise than
// its canonical (float64) form, which may then stand for another literal.
func numbersRounded(v jsontext.Value) bool {
	if !bytes.ContainsAny(v, "0123456789") {
		return false
	}
	dec := jsontext.NewDecoder(bytes.NewReader(v))
	for {
		tok, err := dec.ReadToken()
		if err != nil {
			return err != io.EOF // unreadable: bind the bytes
		}
		if tok.Kind() != '0' {
			continue
		}
		lit := tok.String()
		c := jsontext.Value(lit)
		if c.Canonicalize() != nil || string(c) != lit {
			return true
		}
	}
}

// List returns every live request and the recent history, newest first,
// expiring overdue ones.
func (s *Store) List() []Request {
	out, _ := s.Current()
	return out
}

// Current is List, and the store's error (ErrUnavailable) when its
// database or Redis did not answer: the list is then this process's last
// known state, which another replica's decisions may have changed.
func (s *Store) Current() ([]Request, error) {
	err := s.lock()
	changed := s.sweep(true)
	out := make([]Request, 0, len(s.byID))
	for _, r := range s.byID {
		out = append(out, *r)
	}
	err = s.unlock(err)
	s.notify(changed...)
	sort.Slice(out, func(i, j int) bool { return out[i].Created.After(out[j].Created) })
	return out, err
}

// Len returns how many requests are live: waiting for an answer, or
// approved and not yet used.
func (s *Store) Len() int {
	err := s.lock()
	changed := s.sweep(true)
	n := s.live
	_ = s.unlock(err) // the database's error leaves the last known state
	s.notify(changed...)
	return n
}

// Get returns one request, live or from the recent history.
func (s *Store) Get(id string) (Request, error) {
	err := s.lock()
	r, ok := s.byID[id]
	var expired bool
	if ok {
		expired = s.expire(r)
	}
	var out Request
	if ok {
		out = *r
	}
	if err := s.unlock(err); err != nil {
		return Request{}, err
	}
	if !ok {
		return Request{}, ErrNotFound
	}
	if expired {
		s.notify(out)
	}
	return out, nil
}

// SameAgent reports whether a and b name one agent: equal in Unicode NFC,
// as manifests, route memory and conditions read agents' names.
func SameAgent(a, b string) bool { return a == b || norm.NFC.String(a) == norm.NFC.String(b) }

// Decide approves or declines a pending request on behalf of by, who is
// recorded with it. A by naming the request's agent gets ErrSelfApproval
// and changes nothing.
func (s *Store) Decide(id string, approve bool, by string) (Request, error) {
	return s.settle(id, func(r *Request) error {
		if by != "" && SameAgent(by, r.Agent) {
			return ErrSelfApproval
		}
		r.DecidedBy = by
		if approve {
			r.Status = Approved
			// An approval is usable for one timeout from the moment it is given.
			r.Expires = s.now().Add(s.timeout)
		} else {
			s.finish(r, Declined)
		}
		return nil
	})
}

// Withdraw ends pending request id because the client that sent the call
// cancelled it while it was held: an operator cannot approve it any more,
// so an abandoned call never runs on a later approval. by is recorded as
// who withdrew it. A request no longer pending gets ErrNotPending and
// stays as it is (an approval already given stays usable by the call
// sent again).
func (s *Store) Withdraw(id, by string) (Request, error) {
	return s.settle(id, func(r *Request) error {
		r.DecidedBy = by
		s.finish(r, Withdrawn)
		return nil
	})
}

// Abandon ends request id, pending or approved and not yet used, because
// the gateway refused the held call it was for: the credential the call
// came with no longer holds (revoked, expired), so the call was not sent.
// Unlike Withdraw it ends an approval already given: given for a call
// that was refused, it must not send the same call again when the agent
// comes back with another credential; that call is held anew. by is
// recorded as who ended it. A request neither pending nor approved gets
// ErrNotPending and stays as it is.
func (s *Store) Abandon(id, by string) (Request, error) {
	return s.settleIf(id, func(r *Request) bool { return r.Status == Pending || r.Status == Approved }, func(r *Request) error {
		r.DecidedBy = by
		s.finish(r, Withdrawn)
		return nil
	})
}

// settle applies change to request id, if it is still pending, under
// the store's lock, and notifies the change. A request no longer pending
// gets ErrNotPending; one change refuses (its error) stays as it is.
func (s *Store) settle(id string, change func(*Request) error) (Request, error) {
	return s.settleIf(id, func(r *Request) bool { return r.Status == Pending }, change)
}

// settleIf is settle for a request whose status open accepts.
func (s *Store) settleIf(id string, open func(*Request) bool, change func(*Request) error) (Request, error) {
	if err := s.lock(); err != nil {
		return Request{}, s.unlock(err)
	}
	r, ok := s.byID[id]
	if !ok {
		s.unlock(nil)
		return Request{}, ErrNotFound
	}
	err := ErrNotPending
	if !s.expire(r) && open(r) {
		err = change(r)
	}
	out := *r
	if uerr := s.unlock(nil); uerr != nil {
		return Request{}, uerr
	}
	if err != nil {
		return out, err
	}
	s.notify(out)
	return out, nil
}

// pollInterval is how often Wait reads the database of a persistent
// Store, where another process may decide the request.
const pollInterval = 250 * time.Millisecond

// Wait blocks until request id is no longer pending (approved, declined,
// expired or already used) or ctx ends, and returns the request as it then
// is, with ctx's error in the second case. A request nobody answers expires
// at its deadline, so Wait never outlasts the store's timeout. It is safe
// for concurrent use.
func (s *Store) Wait(ctx context.Context, id string) (Request, error) {
	for {
		err := s.lock()
		r, ok := s.byID[id]
		if !ok {
			if err := s.unlock(err); err != nil {
				return Request{}, err
			}
			return Request{}, ErrNotFound
		}
		expired := s.expire(r)
		out, changed := *r, s.changed
		if err := s.unlock(err); err != nil {
			return out, err
		}
		if expired {
			s.notify(out)
		}
		if out.Status != Pending {
			return out, nil
		}
		wait := out.Expires.Sub(s.now())
		if s.be != nil {
			wait = min(wait, pollInterval) // another process may answer
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return out, ctx.Err()
		case <-changed:
		case <-t.C:
		}
		t.Stop()
	}
}

// sweepInterval is how often a Store looks for overdue requests: on
// access at most this often, and in Run.
func (s *Store) sweepInterval() time.Duration {
	return min(max(s.timeout/4, time.Second), time.Minute)
}

// Run expires overdue requests every so often, releasing their arguments
// even when nobody asks about them, until ctx ends.
func (s *Store) Run(ctx context.Context) {
	t := time.NewTicker(s.sweepInterval())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			err := s.lock()
			changed := s.sweep(true)
			_ = s.unlock(err) // tried again at the next tick
			s.notify(changed...)
		}
	}
}

// sweep expires every overdue live request, if the last sweep is older
// than the sweep interval or force is set, and returns the requests it
// changed. Callers hold s.mu.
func (s *Store) sweep(force bool) []Request {
	now := s.now()
	if !force && now.Before(s.nextSweep) {
		return nil
	}
	s.nextSweep = now.Add(s.sweepInterval())
	var changed []Request
	for _, r := range s.byID {
		if s.expire(r) {
			changed = append(changed, *r)
		}
	}
	return changed
}

// expire marks an overdue pending or approved request expired. Callers
// hold s.mu.
func (s *Store) expire(r *Request) bool {
	if (r.Status == Pending || r.Status == Approved) && !s.now().Before(r.Expires) {
		s.finish(r, Expired)
		return true
	}
	return false
}

// finish ends live request r with a final status: its arguments go, and
// it joins the history, whose oldest entries leave the store. Callers hold
// s.mu.
func (s *Store) finish(r *Request, status Status) {
	r.Status, r.Arguments, r.Extra = status, nil, nil
	// Its names as long as the client wrote them (a made-up tool's, or
	// an unauthenticated agent's, up to max_body_bytes, and the agent's
	// again in who withdrew it) stay no longer than the call: kept cut.
	// The agent is still matched by its name's hash (AgentHash).
	if len(r.Agent) > maxHistoryName {
		r.AgentHash = cmp.Or(r.AgentHash, agentHash(r.Agent))
		r.Agent = boundName(r.Agent)
	}
	r.Tool, r.Session, r.DecidedBy = boundName(r.Tool), boundName(r.Session), boundName(r.DecidedBy)
	s.live--
	s.done = append(s.done, r.ID)
	for len(s.done) > s.history {
		old := s.byID[s.done[0]]
		s.done = s.done[1:]
		if old == nil {
			continue
		}
		delete(s.byID, old.ID)
		if key := old.callKey(); s.byCall[key] == old {
			delete(s.byCall, key)
		}
	}
}

// maxHistoryName is the most of a name a finished request keeps: as
// events record names, so the record of its end names it as the record
// of its hold and the decision events do (TestHistoryNamesCutAsEventsCutThem).
const maxHistoryName = telemetry.MaxRecordedName

// boundName is s, or as telemetry.BoundName cuts it: its first bytes, its
// length and its SHA-256.
func boundName(s string) string { return telemetry.BoundName(s) }

// use marks approved request id used. Callers do not hold s.mu.
func (s *Store) use(id string) error {
	if err := s.lock(); err != nil {
		return s.unlock(err)
	}
	r, ok := s.byID[id]
	if !ok {
		s.unlock(nil)
		return fmt.Errorf("%w: approval %s", ErrNotFound, id)
	}
	expired := s.expire(r)
	if r.Status != Approved {
		out := *r
		if err := s.unlock(nil); err != nil {
			return err
		}
		if expired {
			s.notify(out)
		}
		return fmt.Errorf("approval %s is %s, no longer approved: %w", id, out.Status, ErrNotPending)
	}
	s.finish(r, Used)
	out := *r
	if err := s.unlock(nil); err != nil {
		return err
	}
	s.notify(out)
	return nil
}

// callKey is the key in Store.byCall of the call hash of agent: a name
// longer than maxHistoryName is in it by its hash, as the history keeps
// it (Request.AgentHash).
func callKey(agent, hash string) string {
	if len(agent) > maxHistoryName {
		return "#" + agentHash(agent) + "\x00" + hash
	}
	return "=" + agent + "\x00" + hash
}

// callKey is callKey of r's agent and call hash.
func (r *Request) callKey() string {
	if r.AgentHash != "" {
		return "#" + r.AgentHash + "\x00" + r.CallHash
	}
	return callKey(r.Agent, r.CallHash)
}

// sentBy reports whether r is a call of agent, whose name r may keep cut
// (AgentHash).
func (r *Request) sentBy(agent string) bool {
	if r.AgentHash != "" {
		return len(agent) > maxHistoryName && agentHash(agent) == r.AgentHash
	}
	return r.Agent == agent
}

func agentHash(agent string) string {
	h := sha256.Sum256([]byte(agent))
	return hex.EncodeToString(h[:])
}

func (s *Store) notify(rs ...Request) {
	if len(rs) == 0 {
		return
	}
	s.mu.Lock()
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
	if s.onChange == nil {
		return
	}
	for _, r := range rs {
		s.onChange(r)
	}
}

// Gate is a Decider that sends require_approval decisions of Next through
// the store. It is safe for concurrent use.
type Gate struct {
	Next  intercept.Decider
	Store *Store
}

var (
	_ intercept.ForwardObserver = (*Gate)(nil)
	_ intercept.RouteCloser     = (*Gate)(nil)
)

// Decide asks Next and, for require_approval, answers from the store: an
// approved request for this exact call allows it (the approval is used up
// only when the call is forwarded: see Forwarded); a declined one denies;
// an unanswered one past its timeout denies with approval_timeout;
// otherwise the call is (still) held.
func (g *Gate) Decide(ctx context.Context, d *intercept.ActionDescriptor) (intercept.Decision, error) {
	dec := intercept.Decide(ctx, g.Next, d)
	if dec.Verdict != intercept.RequireApproval {
		return dec, nil
	}
	s := g.Store
	hash := CallHash(d, dec.PolicyVersion)
	key := callKey(d.Agent, hash)
	var client string
	if d.Principal == nil && intercept.PrincipalFrom(ctx) == nil {
		client = intercept.ClientAddrFrom(ctx)
	}
	if err := s.lock(); err != nil {
		return dec, s.unlock(err)
	}
	changed := s.sweep(false)
	r := s.byCall[key]
	if r != nil && s.expire(r) {
		changed = append(changed, *r)
	}
	out := dec
	var goesOn *Request
	if d.UpstreamState != "" {
		goesOn = s.goesOn(d, dec.PolicyVersion)
	}
	switch {
	case goesOn != nil:
		out.Verdict, out.Reason = intercept.Allow, ReasonContinued
		out.ApprovalID = goesOn.ID
		out.PublicReason = "approved by " + orSomeone(goesOn.DecidedBy) + "; the upstream asked for input and this call answers it"
		out.Evidence.ReasonCode = ReasonContinued
		// Not among the changed: its status is what it was (see
		// UpstreamAsked).
	case r != nil && r.Status == Approved:
		out.Verdict, out.Reason = intercept.Allow, ReasonGranted
		out.ApprovalID = r.ID
		out.PublicReason = "approved by " + orSomeone(r.DecidedBy)
		out.Evidence.ReasonCode = ReasonGranted
	case r != nil && r.Status == Declined:
		delete(s.byCall, key) // the next attempt asks again
		out.Verdict, out.Reason = intercept.Deny, ReasonDeclined
		out.PublicReason = "a human declined this call (approval " + r.ID + ")"
		out.Evidence.ReasonCode = ReasonDeclined
	case r != nil && r.Status == Expired:
		delete(s.byCall, key)
		out.Verdict, out.Reason = intercept.Deny, ReasonTimeout
		out.PublicReason = "nobody approved this call in time (approval " + r.ID + ")"
		out.Evidence.ReasonCode = ReasonTimeout
	case r != nil && r.Status == Pending:
		out.ApprovalID = r.ID
	default:
		// None, or one withdrawn (its client cancelled the call): a new
		// request.
		size := (&Request{Arguments: d.Parameters, Extra: d.CallExtra, Upstream: d.Upstream, Tool: d.ToolName, Agent: d.Agent, Session: d.SessionID}).size()
		if why := s.full(d.Agent, client, size); why != "" {
			out.Verdict, out.Reason, out.ApprovalID = intercept.Deny, ReasonTooMany, ""
			out.PublicReason = why
			out.Evidence.ReasonCode = ReasonTooMany
			break
		}
		now := s.now()
		r = &Request{ID: newID(), TxnID: d.TxnID, Status: Pending, Upstream: d.Upstream,
			Tool: d.ToolName, Arguments: d.Parameters, Extra: d.CallExtra, CallHash: hash, PolicyVersion: dec.PolicyVersion,
			Agent: d.Agent, Session: d.SessionID, Client: client, Reason: dec.Reason, RuleID: dec.RuleID,
			Created: now, Expires: now.Add(s.timeout)}
		if len(d.Agent) > maxHistoryName {
			r.AgentHash = agentHash(d.Agent)
		}
		if hasAnswers(d) || d.UpstreamState != "" {
			r.BaseHash = baseHash(d, dec.PolicyVersion)
		}
		s.byID[r.ID] = r
		s.byCall[key] = r
		s.live++
		changed = append(changed, *r)
		out.ApprovalID = r.ID
	}
	if err := s.unlock(nil); err != nil {
		return dec, err
	}
	s.notify(changed...)
	return out, nil
}

// Bounds on live requests (waiting, or approved and not yet used). The
// calls of unauthenticated agents from one client address may hold a
// tenth of MaxLive: without authentication an agent is whoever the
// client says it is, and a client that gave itself a new name for each
// hundred calls would otherwise fill the store, and no other agent's
// call could be held.
const (
	MaxPendingPerAgent = 100
	MaxLive            = 10_000
	// MaxLiveBytes is the default bound on the bytes live requests keep
	// (Options.MaxLiveBytes): counts alone let one client address keep
	// 1,000 calls of max_body_bytes (4 GiB), the gateway 10,000.
	MaxLiveBytes = 256 << 20
)

// maxPerClient is the live requests one client address's
// unauthenticated calls may hold.
func (s *Store) maxPerClient() int { return max(1, s.maxLive/10) }

// full returns why no more calls of agent, sent from client ("" when it
// is authenticated), may be held, the new one keeping size bytes, or "";
// s is locked.
func (s *Store) full(agent, client string, size int64) string {
	if s.live >= s.maxLive {
		return fmt.Sprintf("%d calls are already waiting for approval, the most the gateway holds; this call was not held", s.maxLive)
	}
	perAgent, perClient := 0, 0
	all, agentBytes, clientBytes := size, size, size
	agent = norm.NFC.String(agent)
	for _, r := range s.byID {
		if r.Status != Pending && r.Status != Approved {
			continue
		}
		n := r.size()
		all += n
		if norm.NFC.String(r.Agent) == agent {
			if perAgent++; perAgent >= MaxPendingPerAgent {
				return fmt.Sprintf("this agent already has %d calls waiting for approval, the most it may; this call was not held (it can be sent again once they are answered)", MaxPendingPerAgent)
			}
			agentBytes += n
		}
		if client != "" && r.Client == client {
			if perClient++; perClient >= s.maxPerClient() {
				return fmt.Sprintf("unauthenticated agents at this client's address (%s) already have %d calls waiting for approval, the most they may; this call was not held (it can be sent again once they are answered)", client, s.maxPerClient())
			}
			clientBytes += n
		}
	}
	share := max(1, s.maxBytes/10)
	switch {
	case all > s.maxBytes:
		return fmt.Sprintf("the calls waiting for approval would keep %d bytes of arguments with this one, more than the gateway holds (%d); this call was not held", all, s.maxBytes)
	case agentBytes > share:
		return fmt.Sprintf("this agent's calls waiting for approval would keep %d bytes of arguments with this one, more than it may (%d); this call was not held (it can be sent again once they are answered)", agentBytes, share)
	case client != "" && clientBytes > share:
		return fmt.Sprintf("unauthenticated agents at this client's address (%s) would keep %d bytes of arguments waiting for approval with this call, more than they may (%d); this call was not held (it can be sent again once they are answered)", client, clientBytes, share)
	}
	return ""
}

// size is what r keeps of its call: its arguments and what else it
// sends, and the names the client gave (a made-up tool's is as long as a
// request).
func (r *Request) size() int64 {
	return int64(len(r.Arguments) + len(r.Extra) + len(r.Upstream) + len(r.Tool) + len(r.Agent) + len(r.Session))
}

// Forwarded passes route-memory updates on to Next and then, for a call
// allowed by an approval, uses the approval up: only a call that is
// really forwarded consumes it. If Next fails, or the approval was used
// up meanwhile by the same call sent twice at once, or expired, the error
// denies the call and the approval is left as it was.
func (g *Gate) Forwarded(ctx context.Context, d *intercept.ActionDescriptor, dec intercept.Decision) error {
	if fo, ok := g.Next.(intercept.ForwardObserver); ok {
		if err := fo.Forwarded(ctx, d, dec); err != nil {
			return err
		}
	}
	if dec.Reason != ReasonGranted || dec.ApprovalID == "" {
		return nil
	}
	return g.Store.use(dec.ApprovalID)
}

func orSomeone(s string) string {
	if s == "" {
		return "an operator"
	}
	return s
}

// Visible implements intercept.ToolFilter by asking Next.
func (g *Gate) Visible(ctx context.Context, d *intercept.ActionDescriptor) bool {
	tf, ok := g.Next.(intercept.ToolFilter)
	return !ok || tf.Visible(ctx, d)
}

// Closes implements intercept.RouteCloser by asking Next.
func (g *Gate) Closes(ctx context.Context, d *intercept.ActionDescriptor) bool {
	rc, ok := g.Next.(intercept.RouteCloser)
	return ok && rc.Closes(ctx, d)
}

// LinkSession implements intercept.SessionLinker by telling Next.
func (g *Gate) LinkSession(ctx context.Context, d *intercept.ActionDescriptor, session string) error {
	if sl, ok := g.Next.(intercept.SessionLinker); ok {
		return sl.LinkSession(ctx, d, session)
	}
	return nil
}
