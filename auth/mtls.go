package auth

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/asn1"
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
		if raw := rawURIs(leaf); len(raw) == 0 || raw[0] != id {
			// Parsed, a URI SAN may read as another: the scheme is
			// lowercased, so "SPIFFE://corp/alice", which a CA reserving
			// spiffe:// by prefix signs for anyone, was spiffe://corp/alice.
			return nil, &Failure{Status: http.StatusUnauthorized, Code: CodeInvalidToken, Method: ModeMTLS,
				Desc: "the client certificate's URI SAN is not written as the agent name it reads as (" + id + "); the CA must write it so"}
		}
	}
	if id == "" && identity != "uri" {
		if commonNames(leaf) > 1 {
			// Go keeps the last; a CA checking the requester's name most
			// likely read the first (CN=mallory, CN=alice was alice).
			return nil, &Failure{Status: http.StatusUnauthorized, Code: CodeInvalidToken, Method: ModeMTLS,
				Desc: "the client certificate's subject has more than one common name, so which names the agent is ambiguous"}
		}
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

// oidSubjectAltName is the subject alternative name extension's.
var oidSubjectAltName = asn1.ObjectIdentifier{2, 5, 29, 17}

// rawURIs returns the URI SANs of c as the certificate writes them, in
// order; c.URIs are those parsed. Nil if the extension cannot be read
// (x509 parsed it, so it can).
func rawURIs(c *x509.Certificate) []string {
	for _, ext := range c.Extensions {
		if !ext.Id.Equal(oidSubjectAltName) {
			continue
		}
		var seq asn1.RawValue
		if rest, err := asn1.Unmarshal(ext.Value, &seq); err != nil || len(rest) > 0 {
			return nil
		}
		var out []string
		for rest := seq.Bytes; len(rest) > 0; {
			var v asn1.RawValue
			var err error
			if rest, err = asn1.Unmarshal(rest, &v); err != nil {
				return nil
			}
			if v.Class == asn1.ClassContextSpecific && v.Tag == 6 { // uniformResourceIdentifier
				out = append(out, string(v.Bytes))
			}
		}
		return out
	}
	return nil
}

// oidCommonName is the common name attribute's.
var oidCommonName = asn1.ObjectIdentifier{2, 5, 4, 3}

// commonNames is how many common name attributes c's subject holds.
func commonNames(c *x509.Certificate) int {
	n := 0
	for _, a := range c.Subject.Names {
		if a.Type.Equal(oidCommonName) {
			n++
		}
	}
	return n
}
