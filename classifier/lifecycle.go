package classifier

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/intercept"
)

// Lifecycle event types (RFC-010 §7.2, §7.6).
const (
	EventClassifierProvisioned   = "classifier.provisioned"
	EventClassifierRevoked       = "classifier.revoked"
	EventClassifierReinitialized = "classifier.reinitialized"
)

// LifecycleEvent records a session classifier being provisioned, revoked
// or re-initialised after an inventory change.
type LifecycleEvent struct {
	Type         string    `json:"event_type"`
	SessionID    string    `json:"session_id"`
	ClassifierID string    `json:"classifier_id"`
	At           time.Time `json:"at"`
	// InventoryHash is the tool inventory the classifier works from;
	// PreviousInventoryHash is set on re-initialisation.
	InventoryHash         string `json:"tool_inventory_hash,omitempty"`
	PreviousInventoryHash string `json:"previous_inventory_hash,omitempty"`
	// Classified and Mismatches count the session's calls (§9.1); set on
	// revocation.
	Classified int64 `json:"classified,omitempty"`
	Mismatches int64 `json:"mismatches,omitempty"`
}

// Lifecycle gives each agent session its own classifier identity: a URN
// urn:sluice:classifier:<session>:<random> issued at session start and
// revoked at session end (RFC-010 §7.2–§7.3, with Sluice's own URN scheme
// in place of did:capiscio). The zero value is ready to use; set the
// fields before first use. It is safe for concurrent use.
type Lifecycle struct {
	// OnEvent, if not nil, receives every event as it happens. It must not
	// block and must not call back into the Lifecycle.
	OnEvent func(LifecycleEvent)
	// Now is the clock. Nil: time.Now.
	Now func() time.Time

	mu       sync.Mutex // guards the fields below
	sessions map[string]*classifierSession
}

type classifierSession struct {
	id         string
	inventory  string
	classified int64
	mismatches int64
}

const urnPrefix = "urn:sluice:classifier:"

// Provision issues the session's classifier id and records the event. A
// session already provisioned keeps its id; the returned event is then a
// fresh copy of its provisioning record and nothing is emitted again.
func (l *Lifecycle) Provision(session string) (string, LifecycleEvent) {
	l.mu.Lock()
	s, ok := l.sessions[session]
	if !ok {
		if l.sessions == nil {
			l.sessions = make(map[string]*classifierSession)
		}
		s = &classifierSession{id: newClassifierURN(session)}
		l.sessions[session] = s
	}
	ev := LifecycleEvent{Type: EventClassifierProvisioned, SessionID: session, ClassifierID: s.id, At: l.now(), InventoryHash: s.inventory}
	l.mu.Unlock()
	if !ok {
		l.emit(ev)
	}
	return s.id, ev
}

// Revoke ends the session's classifier identity. It reports false, and
// emits nothing, for a session that was not provisioned.
func (l *Lifecycle) Revoke(session string) (LifecycleEvent, bool) {
	l.mu.Lock()
	s, ok := l.sessions[session]
	if ok {
		delete(l.sessions, session)
	}
	l.mu.Unlock()
	if !ok {
		return LifecycleEvent{}, false
	}
	ev := LifecycleEvent{Type: EventClassifierRevoked, SessionID: session, ClassifierID: s.id, At: l.now(),
		InventoryHash: s.inventory, Classified: s.classified, Mismatches: s.mismatches}
	l.emit(ev)
	return ev, true
}

// ID returns the session's classifier id, if provisioned.
func (l *Lifecycle) ID(session string) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.sessions[session]
	if !ok {
		return "", false
	}
	return s.id, true
}

// Active returns the number of provisioned sessions.
func (l *Lifecycle) Active() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.sessions)
}

// ObserveInventory records the tool inventory a session's classifier works
// from. A change from a known, different inventory re-initialises the
// classifier (§7.6) and emits the event; the first inventory is recorded
// silently. It reports whether it re-initialised.
func (l *Lifecycle) ObserveInventory(session, hash string) (LifecycleEvent, bool) {
	if hash == "" {
		return LifecycleEvent{}, false
	}
	l.mu.Lock()
	s, ok := l.sessions[session]
	if !ok || s.inventory == hash {
		l.mu.Unlock()
		return LifecycleEvent{}, false
	}
	prev := s.inventory
	s.inventory = hash
	l.mu.Unlock()
	if prev == "" {
		return LifecycleEvent{}, false
	}
	ev := LifecycleEvent{Type: EventClassifierReinitialized, SessionID: session, ClassifierID: s.id, At: l.now(),
		InventoryHash: hash, PreviousInventoryHash: prev}
	l.emit(ev)
	return ev, true
}

// steady returns the classifier id of session when it is provisioned and
// its inventory is hash (or hash is ""): when Provision and
// ObserveInventory would do nothing, found under one lock and without
// reading the clock for an event nobody gets.
func (l *Lifecycle) steady(session, hash string) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.sessions[session]
	if !ok || hash != "" && s.inventory != hash {
		return "", false
	}
	return s.id, true
}

// Wrap returns a classifier that stamps every verdict of c with the
// session's classifier id, provisioning sessions it has not seen (so no
// verdict goes out without an identity) and re-initialising on inventory
// changes. The descriptor's SessionID names the session.
func (l *Lifecycle) Wrap(c Classifier) Classifier {
	return &sessionClassifier{l: l, c: c}
}

type sessionClassifier struct {
	l *Lifecycle
	c Classifier
}

func (s *sessionClassifier) immediate() bool { return Immediate(s.c) }

func (s *sessionClassifier) Classify(ctx context.Context, d *intercept.ActionDescriptor) (Verdict, error) {
	id, ok := s.l.steady(d.SessionID, d.ToolInventoryHash)
	if !ok {
		id, _ = s.l.Provision(d.SessionID)
		s.l.ObserveInventory(d.SessionID, d.ToolInventoryHash)
	}
	v, err := s.c.Classify(ctx, d)
	v.ClassifierID = id
	s.l.mu.Lock()
	if cs, ok := s.l.sessions[d.SessionID]; ok {
		cs.classified++
		if !v.ConsistentWithDeclaration {
			cs.mismatches++
		}
	}
	s.l.mu.Unlock()
	return v, err
}

func (l *Lifecycle) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

func (l *Lifecycle) emit(ev LifecycleEvent) {
	if l.OnEvent != nil {
		l.OnEvent(ev)
	}
}

// newClassifierURN returns urn:sluice:classifier:<session>:<16 hex>, with
// the session percent-encoded where it holds characters a URN's name part
// may not, and "-" for an empty session.
func newClassifierURN(session string) string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+).
	return urnPrefix + urnSegment(session) + ":" + hex.EncodeToString(b[:])
}

func urnSegment(s string) string {
	if s == "" {
		return "-"
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || strings.IndexByte("-._~", ch) >= 0 {
			b.WriteByte(ch)
			continue
		}
		b.WriteByte('%')
		b.WriteString(strings.ToUpper(hex.EncodeToString([]byte{ch})))
	}
	return b.String()
}
