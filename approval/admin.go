package approval

import (
	"crypto/subtle"
	"errors"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"

	"github.com/go-json-experiment/json"

	"github.com/sluicehq/sluice/intercept"
)

// Handler serves the approval admin API:
//
//	GET  /admin/approvals            every request, newest first
//	GET  /admin/approvals/{id}       one request
//	POST /admin/approvals/{id}       body {"action":"approve"|"decline","by":"alice"}
//
// A request's arguments and what else its call sends are shown with
// their secrets redacted (Shown).
//
// Who decides is proven where it can be: when the request's context
// carries a principal (intercept.WithPrincipal: the caller authenticated
// with an admin JWT), its ID is recorded and "by" is ignored; otherwise
// "by" is recorded as the caller says. Either way a decider that is the
// held call's agent is refused with 403 (ErrSelfApproval).
//
// A POST must say Content-Type: application/json: a browser sends that
// cross-origin only after a CORS preflight, which the handler never
// answers, so a page an operator visits cannot decide for them (CSRF).
// If token is not empty, requests must carry "Authorization: Bearer <token>".
// Serve it on a listener agents cannot reach: an agent that can approve
// its own calls is not governed.
func (s *Store) Handler(token string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /admin/approvals", func(w http.ResponseWriter, r *http.Request) {
		reqs, err := s.Current()
		for i := range reqs {
			reqs[i] = s.Shown(reqs[i])
		}
		if err != nil {
			// Not shown as the list: another replica may have decided
			// or held calls since this process last read the store.
			writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": err.Error(), "last_known": reqs})
			return
		}
		writeJSON(w, http.StatusOK, reqs)
	})
	mux.HandleFunc("GET /admin/approvals/{id}", func(w http.ResponseWriter, r *http.Request) {
		req, err := s.Get(r.PathValue("id"))
		if err != nil {
			writeError(w, errorStatus(err), err)
			return
		}
		writeJSON(w, http.StatusOK, s.Shown(req))
	})
	mux.HandleFunc("POST /admin/approvals/{id}", func(w http.ResponseWriter, r *http.Request) {
		if !IsJSON(r) {
			writeError(w, http.StatusUnsupportedMediaType, errNotJSON)
			return
		}
		var body struct {
			Action string `json:"action"`
			By     string `json:"by"`
		}
		b, err := io.ReadAll(io.LimitReader(r.Body, 1<<16))
		if err == nil && len(strings.TrimSpace(string(b))) > 0 {
			err = json.Unmarshal(b, &body)
		}
		if err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		var approve bool
		switch body.Action {
		case "approve":
			approve = true
		case "decline":
		default:
			writeError(w, http.StatusBadRequest, ErrBadDecision)
			return
		}
		by := body.By
		if p := intercept.PrincipalFrom(r.Context()); p != nil {
			by = p.ID // proven, not claimed
			held, err := s.Get(r.PathValue("id"))
			switch {
			case err == nil && namesAgent(p, held.Agent, s.agentClaims):
				writeError(w, http.StatusForbidden, ErrSelfApproval)
				return
			case err != nil && !errors.Is(err, ErrNotFound):
				// Unchecked is not allowed: the store may answer the
				// decision that follows.
				writeError(w, errorStatus(err), err)
				return
			}
		}
		req, err := s.Decide(r.PathValue("id"), approve, by)
		switch {
		case errors.Is(err, ErrSelfApproval):
			writeError(w, http.StatusForbidden, err)
		case errors.Is(err, ErrNotFound):
			writeError(w, http.StatusNotFound, err)
		case errors.Is(err, ErrNotPending):
			writeJSON(w, http.StatusConflict, map[string]any{"error": err.Error(), "request": s.Shown(req)})
		case err != nil:
			writeError(w, errorStatus(err), err)
		default:
			writeJSON(w, http.StatusOK, s.Shown(req))
		}
	})
	if token == "" {
		return mux
	}
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			writeError(w, http.StatusUnauthorized, errors.New("approval: missing or wrong bearer token"))
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// errorStatus is the HTTP status of err, an error of Get or Decide:
// 503 when the store did not answer (nothing was read or decided; before,
// a decision the store failed to record answered 200 with an empty
// request, and a request it could not read 404).
func errorStatus(err error) int {
	switch {
	case errors.Is(err, ErrUnavailable):
		return http.StatusServiceUnavailable
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound
	}
	return http.StatusInternalServerError
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.MarshalWrite(w, v)
}

func writeError(w http.ResponseWriter, status int, err error) {
	writeJSON(w, status, map[string]string{"error": err.Error()})
}

var errNotJSON = errors.New("approval: the request body must be JSON, sent with Content-Type: application/json")

// IsJSON reports whether r says its body is application/json. Admin
// endpoints that change state require it: a cross-origin page can send
// text/plain, form or multipart bodies without a CORS preflight, but not
// JSON.
func IsJSON(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mt == "application/json"
}

// clientClaims are the claims by which an IdP names the client a token was
// issued to, besides its subject: a held call's agent may be named by one
// of them (auth.jwt.agent_claim) while the admin is named by sub.
var clientClaims = []string{"sub", "azp", "client_id", "appid", "cid"}

// Names returns every name the token behind p gives its holder: its ID,
// the client it was issued to (sub, azp, client_id, appid, cid) and the
// string values of the claims named in also — the claim agents are named
// by (auth.jwt.agent_claim: preferred_username, email, …), so an
// operator's token for the account an agent acts as names that agent
// too — and the same claims of every actor its act claim names (RFC 8693
// delegation: an operator's token exchanged for an agent names the agent
// in act, and an earlier actor in act's own act). An agent never answers
// its own approval, whichever claim names it, nor under another's token
// delegated to it.
func Names(p *intercept.Principal, also ...string) []string {
	if p == nil {
		return nil
	}
	names := []string{p.ID}
	// A chain parsed from a token ends: it is no longer than the token.
	for claims := p.Claims; claims != nil; {
		for _, list := range [...][]string{clientClaims, also} {
			for _, c := range list {
				if v, ok := claims[c].(string); ok && v != "" && !slices.Contains(names, v) {
					names = append(names, v)
				}
			}
		}
		claims, _ = claims["act"].(map[string]any)
	}
	return names
}

// namesAgent reports whether agent is one of the names p's token gives
// (with the claims agents are named by, also).
func namesAgent(p *intercept.Principal, agent string, also []string) bool {
	return agent != "" && slices.ContainsFunc(Names(p, also...), func(n string) bool { return SameAgent(n, agent) })
}
