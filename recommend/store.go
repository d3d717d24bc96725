package recommend

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// Status of a stored recommendation.
const (
	StatusPending  = "pending"
	StatusApproved = "approved"
	StatusDeclined = "declined"
)

// ReasonCodes are the reasons a decline must give (RFC-010 §10.6).
var ReasonCodes = []string{"NOT_NEEDED", "SECURITY_CONCERN", "INCORRECT_EVIDENCE", "DEFERRED"}

// Suppression is how long a declined recommendation is not proposed again.
const Suppression = 30 * 24 * time.Hour

// Record is a recommendation as the store keeps it.
type Record struct {
	Recommendation
	Status   string    `json:"status"`
	Decision *Decision `json:"decision,omitempty"`
}

// Decision is RFC-010 §10.6's audit record of a decision.
type Decision struct {
	Decision               string    `json:"decision"` // APPROVE or DECLINE
	DecidedBy              string    `json:"decided_by"`
	DecidedAt              time.Time `json:"decided_at"`
	ReasonCode             string    `json:"reason_code,omitempty"`
	ResultingPolicyVersion string    `json:"resulting_policy_version,omitempty"`
	SuppressedUntil        time.Time `json:"suppressed_until,omitzero"`
}

// Store keeps recommendations and their decisions in a JSON file.
type Store struct {
	path string
	mu   sync.Mutex
}

// OpenStore returns the store in path (created on first write).
func OpenStore(path string) *Store { return &Store{path: path} }

func (s *Store) load() (map[string]*Record, error) {
	b, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]*Record{}, nil
	}
	if err != nil {
		return nil, err
	}
	var recs []*Record
	if err := json.Unmarshal(b, &recs); err != nil {
		return nil, fmt.Errorf("%s: %w", s.path, err)
	}
	m := make(map[string]*Record, len(recs))
	for _, r := range recs {
		m[r.ID] = r
	}
	return m, nil
}

func (s *Store) save(m map[string]*Record) error {
	recs := make([]*Record, 0, len(m))
	for _, r := range m {
		recs = append(recs, r)
	}
	slices.SortFunc(recs, func(a, b *Record) int { return cmp.Or(a.GeneratedAt.Compare(b.GeneratedAt), cmp.Compare(a.ID, b.ID)) })
	b, err := json.MarshalIndent(recs, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
		return err
	}
	tmp := s.path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, s.path)
}

// Merge adds what the engine proposed: a new finding is pending; a pending
// one gets the fresh evidence; an approved one is not proposed again; a
// declined one is not proposed again until its suppression ends, then it
// is pending anew. A pending one the engine no longer proposes (its
// evidence out of the window, or its agent a name made up for a while) is
// dropped, so the store holds one run's proposals and the decisions made.
// It returns the findings that are pending now.
func (s *Store) Merge(recs []Recommendation, now time.Time) ([]Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, err := s.load()
	if err != nil {
		return nil, err
	}
	maps.DeleteFunc(m, func(_ string, r *Record) bool { return r.Status == StatusPending })
	pending := []Record{}
	for _, r := range recs {
		old := m[r.ID]
		switch {
		case old == nil, old.Status == StatusPending,
			old.Status == StatusDeclined && old.Decision != nil && !now.Before(old.Decision.SuppressedUntil):
			m[r.ID] = &Record{Recommendation: r, Status: StatusPending}
			pending = append(pending, *m[r.ID])
		}
	}
	return pending, s.save(m)
}

// List returns every stored recommendation, newest first.
func (s *Store) List() ([]Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, err := s.load()
	if err != nil {
		return nil, err
	}
	out := make([]Record, 0, len(m))
	for _, r := range m {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b Record) int { return cmp.Or(b.GeneratedAt.Compare(a.GeneratedAt), cmp.Compare(a.ID, b.ID)) })
	return out, nil
}

// Get returns one recommendation.
func (s *Store) Get(id string) (Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, r, err := s.loadOne(id)
	if err != nil {
		return Record{}, err
	}
	return *r, nil
}

// loadOne reads the store and finds id in it; s.mu is held.
func (s *Store) loadOne(id string) (map[string]*Record, *Record, error) {
	m, err := s.load()
	if err != nil {
		return nil, nil, err
	}
	r := m[id]
	if r == nil {
		return nil, nil, fmt.Errorf("no recommendation %q", id)
	}
	return m, r, nil
}

// ErrDecided is returned for a recommendation that is not pending.
var ErrDecided = errors.New("the recommendation is not pending")

// ErrSelfDecision refuses a decision whose decider is the agent the
// recommendation is about: an agent never widens (or keeps wide) its own
// policy, as it never answers its own approval.
var ErrSelfDecision = errors.New("the agent a recommendation is about cannot decide it; another operator must")

// Decline archives a pending recommendation with who declined it and why;
// it is not proposed again for [Suppression].
func (s *Store) Decline(id, by, reason string, now time.Time) (Record, error) {
	if !slices.Contains(ReasonCodes, reason) {
		return Record{}, fmt.Errorf("reason code %q: want one of %v", reason, ReasonCodes)
	}
	if by == "" {
		return Record{}, errors.New("a decision names who made it")
	}
	return s.decide(id, Decision{Decision: "DECLINE", DecidedBy: by, DecidedAt: now, ReasonCode: reason, SuppressedUntil: now.Add(Suppression)}, StatusDeclined, nil)
}

// Approved records that a pending recommendation was approved and applied,
// giving the policy version it produced.
func (s *Store) Approved(id, by, version string, now time.Time) (Record, error) {
	return s.approved(id, by, version, now, nil)
}

// Applied is Approved for rec, read pending before its change was
// applied: if a Merge has dropped it since (a run no longer proposing
// it), it is stored approved all the same, for the policy holds its
// change.
func (s *Store) Applied(rec Recommendation, by, version string, now time.Time) (Record, error) {
	return s.approved(rec.ID, by, version, now, func(m map[string]*Record) {
		if m[rec.ID] == nil {
			m[rec.ID] = &Record{Recommendation: rec, Status: StatusPending}
		}
	})
}

func (s *Store) approved(id, by, version string, now time.Time, restore func(map[string]*Record)) (Record, error) {
	if by == "" {
		return Record{}, errors.New("a decision names who made it")
	}
	return s.decide(id, Decision{Decision: "APPROVE", DecidedBy: by, DecidedAt: now, ResultingPolicyVersion: version}, StatusApproved, restore)
}

// decide sets the status of pending recommendation id, after restore
// (if any) has had its say on the store as read.
func (s *Store) decide(id string, d Decision, status string, restore func(map[string]*Record)) (Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, err := s.load()
	if err != nil {
		return Record{}, err
	}
	if restore != nil {
		restore(m)
	}
	r := m[id]
	if r == nil {
		return Record{}, fmt.Errorf("no recommendation %q", id)
	}
	if r.Status != StatusPending {
		return *r, fmt.Errorf("%s is %s: %w", id, r.Status, ErrDecided)
	}
	r.Status, r.Decision = status, &d
	return *r, s.save(m)
}
