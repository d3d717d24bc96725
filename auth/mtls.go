package auth

import (
	"crypto/tls"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/sluicehq/sluice/intercept"
)

// certPrincipal is the principal of the client certificate the TLS
// handshake verified against client_ca_file; nil when there is none.
// identity is MTLSConfig.Identity.
func certPrincipal(cs *tls.ConnectionState, identity string) (*intercept.Principal, error) {
	if cs == nil || len(cs.VerifiedChains) == 0 || len(cs.VerifiedChains[0]) == 0 {
		return nil, nil
	}
	leaf := cs.VerifiedChains[0][0]
	var id string
	if identity != "cn" && len(leaf.URIs) > 0 {
		id = leaf.URIs[0].String()
	}
	if id == "" && identity != "uri" {
		id = leaf.Subject.CommonName
		if identity != "cn" && strings.ContainsAny(id, ":/") {
			// A requester often writes its CSR's common name; a URI SAN is
			// what a SPIFFE-style CA vouches for. A common name shaped like
			// a URI identity must not pass for one.
			return nil, &Failure{Status: http.StatusUnauthorized, Code: CodeInvalidToken, Method: ModeMTLS,
				Desc: "the client certificate's common name looks like a URI identity but the certificate has no URI SAN; set auth.mtls.identity: cn to accept common names as they are"}
		}
	}
	if id == "" {
		return nil, &Failure{Status: http.StatusUnauthorized, Code: CodeInvalidToken, Method: ModeMTLS,
			Desc: "the client certificate names no agent (no URI SAN or common name, as auth.mtls.identity asks)"}
	}
	if !printableASCII(id) {
		// As for a JWT's agent claim: a common name is what the CSR asked
		// for, and "\u0430lice" (Cyrillic а) or "alice\u200b" could not be
		// told from alice in logs, the console or a manifest.
		return nil, &Failure{Status: http.StatusUnauthorized, Code: CodeInvalidToken, Method: ModeMTLS,
			Desc: "the client certificate's agent name (URI SAN or common name) must be printable ASCII, at most 256 bytes"}
	}
	uris := make([]any, 0, len(leaf.URIs))
	for _, u := range leaf.URIs {
		uris = append(uris, u.String())
	}
	return &intercept.Principal{ID: id, Method: ModeMTLS, Claims: map[string]any{
		"subject": leaf.Subject.String(), "serial": leaf.SerialNumber.String(), "uris": uris,
		"issuer": leaf.Issuer.String(),
	}, Expires: leaf.NotAfter, Check: func() error {
		if time.Now().After(leaf.NotAfter) {
			return errors.New("the client certificate expired")
		}
		return nil
	}}, nil
}
