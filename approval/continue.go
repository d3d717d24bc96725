package approval

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// MCP 2026-07-28: an upstream that needs input answers a call with
// input_required and a requestState, and the client sends the call again
// with its answers (inputResponses) and the state. When an approval
// allowed the call, that retry is the approved call going on, not a new
// call: asking the user to approve it again would hold it under a new
// request whose answer, sent with the gateway's own state, no longer
// carries the upstream's, and the call would never complete. So the
// upstream's state is noted on the approval (UpstreamAsked), and the one
// retry carrying it — checked by the interceptor as issued by that
// upstream to this agent for this very call — is allowed under the same
// approval (ReasonContinued), as long as the approval has not expired and
// nothing of the call but the answers differs. The answers are the
// client's, to the upstream's question: the approval does not cover what
// they say, as it does not cover what a 2025-era client answers to an
// upstream's elicitation during the approved call.

// maxAsked bounds the states an approval keeps waiting for a retry.
const maxAsked = 16

var _ intercept.RoundTripObserver = (*Gate)(nil)

// UpstreamAsked notes that the upstream answered the call approval id
// allowed with input_required and state: the retry carrying state goes
// on under the approval (Decide). A failure to note it only means the
// retry is held and asked about again.
func (g *Gate) UpstreamAsked(ctx context.Context, id, state string) {
	if ro, ok := g.Next.(intercept.RoundTripObserver); ok {
		ro.UpstreamAsked(ctx, id, state)
	}
	s := g.Store
	if err := s.lock(); err != nil {
		_ = s.unlock(err)
		return
	}
	if r, ok := s.byID[id]; ok && r.Status == Used && s.now().Before(r.Expires) && len(r.Asked) < maxAsked {
		r.Asked = append(r.Asked, stateHash(state))
	}
	// Nobody is told (notify): the request's status is what it was, and
	// OnChange would record the approval as used again.
	_ = s.unlock(nil)
}

// goesOn returns the approval that call d, a retry carrying its upstream's
// requestState, goes on under, having taken the state from it; nil if
// none. Callers hold s.mu.
func (s *Store) goesOn(d *intercept.ActionDescriptor, policyVersion string) *Request {
	sh := stateHash(d.UpstreamState)
	var base string
	now := s.now()
	for _, r := range s.byID {
		i := slices.Index(r.Asked, sh)
		if i < 0 || !r.sentBy(d.Agent) || r.Status != Used || !now.Before(r.Expires) {
			continue
		}
		if base == "" {
			base = baseHash(d, policyVersion)
		}
		if cmpHash(r) != base {
			continue
		}
		r.Asked = slices.Delete(r.Asked, i, i+1)
		return r
	}
	return nil
}

// cmpHash is the hash a continuation of r's call is compared with.
func cmpHash(r *Request) string {
	if r.BaseHash != "" {
		return r.BaseHash
	}
	return r.CallHash
}

// hasAnswers reports whether call d carries inputResponses.
func hasAnswers(d *intercept.ActionDescriptor) bool {
	return bytes.Contains(d.CallExtra, []byte(`"params.inputResponses"`))
}

// baseHash is CallHash of d without its inputResponses and its
// upstream's requestState: a continuation carries a state of its own,
// one the approval was told of (goesOn checks it).
func baseHash(d *intercept.ActionDescriptor, policyVersion string) string {
	c := *d
	c.UpstreamState = ""
	if !hasAnswers(d) {
		return CallHash(&c, policyVersion)
	}
	var extra map[string]jsontext.Value
	if err := json.Unmarshal(d.CallExtra, &extra); err != nil {
		return CallHash(&c, policyVersion)
	}
	delete(extra, "params.inputResponses")
	c.CallExtra = nil
	if len(extra) > 0 {
		b, err := json.Marshal(extra, json.Deterministic(true))
		if err != nil {
			return CallHash(&c, policyVersion)
		}
		c.CallExtra = b
	}
	return CallHash(&c, policyVersion)
}

func stateHash(state string) string {
	sum := sha256.Sum256([]byte(state))
	return hex.EncodeToString(sum[:])
}
