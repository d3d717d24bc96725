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
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// Status of an approval request.
type Status string

const (
	Pending  Status = "pending"
	Approved Status = "approved"
	Declined Status = "declined"
	Expired  Status = "expired"
	Used     Status = "used"
)

// Reason codes of decisions the gate makes.
const (
	ReasonGranted  = "approval_granted"
	ReasonDeclined = "approval_declined"
	ReasonTimeout  = "approval_timeout"
)

// Request is one call waiting for, or given, a human's answer.
type Request struct {
	ID            string         `json:"id"`
	TxnID         string         `json:"txn_id"`
	Status        Status         `json:"status"`
	Upstream      string         `json:"upstream"`
	Tool          string         `json:"tool"`
	Arguments     jsontext.Value `json:"arguments"`
	CallHash      string         `json:"call_hash"`
	PolicyVersion string         `json:"policy_version,omitempty"`
	Agent         string         `json:"agent,omitempty"`
	Session       string         `json:"session,omitempty"`
	Reason        string         `json:"reason"`
	RuleID        string         `json:"rule_id,omitempty"`
	Created       time.Time      `json:"created"`
	Expires       time.Time      `json:"expires"`
	DecidedBy     string         `json:"decided_by,omitempty"`
}

// Options configure a Store; the zero value means the defaults.
type Options struct {
	// Timeout is how long a request waits for an answer, and how long an
	// approval stays usable. Zero means 15 minutes.
	Timeout time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// OnChange, if set, is called after every change of a request.
	OnChange func(Request)
}

// Store keeps approval requests in memory. It is safe for concurrent use.
type Store struct {
	timeout  time.Duration
	now      func() time.Time
	onChange func(Request)

	mu      sync.Mutex // guards the fields below
	byID    map[string]*Request
	byCall  map[string]*Request // agent + call hash -> newest request
	changed chan struct{}       // closed and replaced after every change, for Wait
}

// NewStore returns an empty store.
func NewStore(opts Options) *Store {
	s := &Store{timeout: opts.Timeout, now: opts.Now, onChange: opts.OnChange,
		byID: make(map[string]*Request), byCall: make(map[string]*Request), changed: make(chan struct{})}
	if s.timeout <= 0 {
		s.timeout = 15 * time.Minute
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s
}

// Errors of Decide.
var (
	ErrNotFound    = errors.New("approval: no such request")
	ErrNotPending  = errors.New("approval: request is not pending")
	ErrBadDecision = errors.New("approval: decision must be approve or decline")
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
	if err != nil || canon.Canonicalize() != nil {
		canon = jsontext.Value(d.Upstream + "\x00" + d.ToolName + "\x00" + string(args))
	}
	h := sha256.New()
	h.Write(canon)
	h.Write([]byte{0})
	h.Write([]byte(policyVersion))
	return hex.EncodeToString(h.Sum(nil))
}

// List returns every request, newest first, expiring overdue ones.
func (s *Store) List() []Request {
	s.mu.Lock()
	out := make([]Request, 0, len(s.byID))
	var changed []Request
	for _, r := range s.byID {
		if s.expire(r) {
			changed = append(changed, *r)
		}
		out = append(out, *r)
	}
	s.mu.Unlock()
	s.notify(changed...)
	sort.Slice(out, func(i, j int) bool { return out[i].Created.After(out[j].Created) })
	return out
}

// Get returns one request.
func (s *Store) Get(id string) (Request, error) {
	s.mu.Lock()
	r, ok := s.byID[id]
	var expired bool
	if ok {
		expired = s.expire(r)
	}
	var out Request
	if ok {
		out = *r
	}
	s.mu.Unlock()
	if !ok {
		return Request{}, ErrNotFound
	}
	if expired {
		s.notify(out)
	}
	return out, nil
}

// Decide approves or declines a pending request.
func (s *Store) Decide(id string, approve bool, by string) (Request, error) {
	s.mu.Lock()
	r, ok := s.byID[id]
	if !ok {
		s.mu.Unlock()
		return Request{}, ErrNotFound
	}
	if s.expire(r) || r.Status != Pending {
		out := *r
		s.mu.Unlock()
		return out, ErrNotPending
	}
	r.Status, r.DecidedBy = Declined, by
	if approve {
		r.Status = Approved
		// An approval is usable for one timeout from the moment it is given.
		r.Expires = s.now().Add(s.timeout)
	}
	out := *r
	s.mu.Unlock()
	s.notify(out)
	return out, nil
}

// Wait blocks until request id is no longer pending (approved, declined,
// expired or already used) or ctx ends, and returns the request as it then
// is, with ctx's error in the second case. A request nobody answers expires
// at its deadline, so Wait never outlasts the store's timeout. It is safe
// for concurrent use.
func (s *Store) Wait(ctx context.Context, id string) (Request, error) {
	for {
		s.mu.Lock()
		r, ok := s.byID[id]
		if !ok {
			s.mu.Unlock()
			return Request{}, ErrNotFound
		}
		expired := s.expire(r)
		out, changed := *r, s.changed
		s.mu.Unlock()
		if expired {
			s.notify(out)
		}
		if out.Status != Pending {
			return out, nil
		}
		t := time.NewTimer(out.Expires.Sub(s.now()))
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

// expire marks an overdue pending or approved request expired. Callers
// hold s.mu.
func (s *Store) expire(r *Request) bool {
	if (r.Status == Pending || r.Status == Approved) && !s.now().Before(r.Expires) {
		r.Status = Expired
		return true
	}
	return false
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

// Decide asks Next and, for require_approval, answers from the store: an
// approved request for this exact call allows it once; a declined one
// denies; an unanswered one past its timeout denies with approval_timeout;
// otherwise the call is (still) held.
func (g *Gate) Decide(ctx context.Context, d *intercept.ActionDescriptor) (intercept.Decision, error) {
	dec := intercept.Decide(ctx, g.Next, d)
	if dec.Verdict != intercept.RequireApproval {
		return dec, nil
	}
	s := g.Store
	hash := CallHash(d, dec.PolicyVersion)
	key := d.Agent + "\x00" + hash
	s.mu.Lock()
	r := s.byCall[key]
	var changed []Request
	if r != nil && s.expire(r) {
		changed = append(changed, *r)
	}
	out := dec
	switch {
	case r != nil && r.Status == Approved:
		r.Status = Used
		changed = append(changed, *r)
		out.Verdict, out.Reason = intercept.Allow, ReasonGranted
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
		now := s.now()
		r = &Request{ID: "apr_" + intercept.NewTxnID()[:20], TxnID: d.TxnID, Status: Pending, Upstream: d.Upstream,
			Tool: d.ToolName, Arguments: d.Parameters, CallHash: hash, PolicyVersion: dec.PolicyVersion,
			Agent: d.Agent, Session: d.SessionID, Reason: dec.Reason, RuleID: dec.RuleID,
			Created: now, Expires: now.Add(s.timeout)}
		s.byID[r.ID] = r
		s.byCall[key] = r
		changed = append(changed, *r)
		out.ApprovalID = r.ID
	}
	s.mu.Unlock()
	s.notify(changed...)
	return out, nil
}

// Forwarded passes route-memory updates on to Next.
func (g *Gate) Forwarded(ctx context.Context, d *intercept.ActionDescriptor, dec intercept.Decision) error {
	if fo, ok := g.Next.(intercept.ForwardObserver); ok {
		return fo.Forwarded(ctx, d, dec)
	}
	return nil
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
