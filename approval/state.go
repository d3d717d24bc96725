package approval

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// State is what a sealed requestState says: the approval question of
// request ApprovalID, asked about one call (CallHash, under PolicyVersion)
// of one agent, answerable until Expires.
//
// MCP 2026-07-28 has the client send requestState back with its answer
// (multi round-trip requests); the specification asks servers to protect
// state that affects authorization against forgery and replay by other
// principals. So the state is sealed (AES-256-GCM) with the Store's key
// and bound to everything the answer may decide about.
type State struct {
	ApprovalID    string    `json:"id"`
	Agent         string    `json:"agent"`
	CallHash      string    `json:"call"`
	PolicyVersion string    `json:"policy"`
	Expires       time.Time `json:"exp"`
	// Carry holds what of the held call the client's answer does not
	// send again: the call's own round trip with its upstream
	// (inputResponses to the upstream's question, the upstream's
	// requestState), as params members, for the answering retry to carry
	// on to the upstream. Nil when the call had none.
	Carry jsontext.Value `json:"carry,omitempty"`
}

// ErrBadState is the error of OpenState and State.Check: the requestState
// was not sealed by this gateway, was altered, has expired, or belongs to
// another agent or call. Errors wrapping it say which.
var ErrBadState = errors.New("requestState refused")

const (
	statePrefix = "sluice-approval.v1."
	// stateAD binds the sealed bytes to their purpose.
	stateAD = "sluice approval requestState v1"
)

func newStateAEAD(key []byte) cipher.AEAD {
	if key == nil {
		key = make([]byte, 32)
		_, _ = rand.Read(key) // never fails (crypto/rand)
	}
	if len(key) != 32 {
		panic(fmt.Sprintf("approval: StateKey is %d bytes, want 32", len(key)))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		panic(err) // unreachable: the key length is checked
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic(err) // unreachable: AES has a 16-byte block
	}
	return aead
}

// SealState returns the requestState of the approval question about
// pending request id: sealed, bound to the request's agent, call and
// policy version, and good until the request expires; carry is
// State.Carry.
func (s *Store) SealState(id string, carry jsontext.Value) (string, error) {
	err := s.lock()
	r, ok := s.byID[id]
	var st State
	if ok {
		st = State{ApprovalID: r.ID, Agent: r.Agent, CallHash: r.CallHash, PolicyVersion: r.PolicyVersion, Expires: r.Expires, Carry: carry}
		ok = r.Status == Pending
	}
	if err := s.unlock(err); err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("approval %s: %w", id, ErrNotPending)
	}
	plain, err := json.Marshal(st)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, s.state.NonceSize(), s.state.NonceSize()+len(plain)+s.state.Overhead())
	_, _ = rand.Read(nonce)
	sealed := s.state.Seal(nonce, nonce, plain, []byte(stateAD))
	return statePrefix + base64.RawURLEncoding.EncodeToString(sealed), nil
}

// OpenState unseals a requestState the client sent back. It fails with an
// error wrapping ErrBadState for a state this Store did not seal, one that
// was altered, and one past its expiry.
func (s *Store) OpenState(state string) (State, error) {
	b64, ok := strings.CutPrefix(state, statePrefix)
	if !ok {
		return State{}, fmt.Errorf("%w: it is not a state this gateway issued", ErrBadState)
	}
	sealed, err := base64.RawURLEncoding.DecodeString(b64)
	if err != nil || len(sealed) < s.state.NonceSize() {
		return State{}, fmt.Errorf("%w: it is not a state this gateway issued", ErrBadState)
	}
	n := s.state.NonceSize()
	plain, err := s.state.Open(nil, sealed[:n], sealed[n:], []byte(stateAD))
	if err != nil {
		return State{}, fmt.Errorf("%w: it was not sealed by this gateway (or by another process on its data directory), or it was altered", ErrBadState)
	}
	var st State
	if err := json.Unmarshal(plain, &st); err != nil {
		return State{}, fmt.Errorf("%w: %v", ErrBadState, err)
	}
	if !s.now().Before(st.Expires) {
		return State{}, fmt.Errorf("%w: it expired at %s", ErrBadState, st.Expires.UTC().Format(time.RFC3339))
	}
	return st, nil
}

// Check reports whether the state was issued about call d (the same
// upstream, tool and arguments) of d's agent; if not, the error wraps
// ErrBadState.
func (st State) Check(d *intercept.ActionDescriptor) error {
	if st.Agent != d.Agent {
		return fmt.Errorf("%w: it was issued to another agent", ErrBadState)
	}
	if CallHash(d, st.PolicyVersion) != st.CallHash {
		return fmt.Errorf("%w: it was issued for another call (tool or arguments differ)", ErrBadState)
	}
	return nil
}
