package auth

import (
	"errors"
	"fmt"
	"strings"
)

// Codes of a [Failure], as RFC 6750 §3.1 names them.
const (
	CodeInvalidRequest    = "invalid_request"    // missing piece, malformed or duplicate header, oversized token
	CodeInvalidToken      = "invalid_token"      // expired, revoked, wrong issuer or audience, bad signature
	CodeInsufficientScope = "insufficient_scope" // authenticated, but a required scope or claim is missing
)

// ErrNoCredentials is the cause of a request that carries no credential
// at all: the client should start the authorization flow (RFC 9728).
var ErrNoCredentials = errors.New("no credentials: send Authorization: Bearer <token>")

// A Failure is why a request was not authenticated. Status is the HTTP
// status to answer with: 401, or 403 for insufficient_scope.
type Failure struct {
	Status int
	Code   string // "" for a request with no credentials at all (RFC 6750 §3.1)
	Method string // the method that refused it: api_key, jwt or mtls; "" before one is chosen
	Desc   string // for the client and the event; never holds the credential
	Scope  string // the scopes required, for insufficient_scope
	Err    error  // the underlying cause, for logs
}

func (f *Failure) Error() string {
	var b strings.Builder
	b.WriteString("authentication failed")
	if f.Method != "" {
		fmt.Fprintf(&b, " (%s)", f.Method)
	}
	if f.Code != "" {
		fmt.Fprintf(&b, ": %s", f.Code)
	}
	if f.Desc != "" {
		fmt.Fprintf(&b, ": %s", f.Desc)
	}
	return b.String()
}

func (f *Failure) Unwrap() error { return f.Err }

func invalidRequest(desc string) *Failure {
	return &Failure{Status: 401, Code: CodeInvalidRequest, Desc: desc}
}

func invalidToken(method, desc string, err error) *Failure {
	return &Failure{Status: 401, Code: CodeInvalidToken, Method: method, Desc: desc, Err: err}
}
