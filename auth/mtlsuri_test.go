package auth

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"testing"
)

// TestMTLSURIReadsAsAnother (attacker review): a client certificate's
// URI SAN names the agent as Go parses it, and the parse lowercases the
// scheme, so "SPIFFE://example.org/agent/alice", a string a CA that
// reserves the spiffe:// namespace for its workloads by prefix lets any
// requester put in a CSR, became the agent spiffe://example.org/agent/alice.
// Now a URI SAN that does not read as it is written is refused.
func TestMTLSURIReadsAsAnother(t *testing.T) {
	ca, sign := testCA(t)
	// leaf is a certificate whose SAN extension holds uris as written
	// (x509.CreateCertificate would write a URL's String()).
	leaf := func(uris ...string) *x509.Certificate {
		var names []asn1.RawValue
		for _, u := range uris {
			names = append(names, asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: 6, Bytes: []byte(u)})
		}
		san, err := asn1.Marshal(names)
		if err != nil {
			t.Fatal(err)
		}
		return sign(func(tm *x509.Certificate) {
			tm.ExtraExtensions = []pkix.Extension{{Id: asn1.ObjectIdentifier{2, 5, 29, 17}, Value: san}}
		})
	}
	const alice = "spiffe://example.org/agent/alice"
	for _, identity := range []string{"", "uri"} {
		p, err := certPrincipal(&tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{leaf(alice), ca}}}, identity)
		if err != nil || p.ID != alice {
			t.Fatalf("identity %q: alice's own certificate: got %v, %v", identity, p, err)
		}
		for _, uri := range []string{"SPIFFE://example.org/agent/alice", "Spiffe://example.org/agent/alice"} {
			if p, err := certPrincipal(&tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{leaf(uri), ca}}}, identity); err == nil {
				t.Errorf("identity %q: a certificate with URI SAN %q authenticated as agent %q", identity, uri, p.ID)
			}
		}
	}
	// identity: cn takes the common name; the URI SAN says nothing.
	if p, err := certPrincipal(&tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{leaf("SPIFFE://example.org/agent/alice"), ca}}}, "cn"); err != nil || p.ID != "workload" {
		t.Errorf("identity cn: got %v, %v; want agent workload", p, err)
	}
}

// TestMTLSTwoCommonNames (attacker review): a subject may hold the
// common name attribute twice, and Go's parse keeps the last, where a
// CA or registration authority that checks the requester's name
// (OpenSSL's X509_NAME_get_index_by_NID, most libraries) reads the
// first: a CSR with CN=mallory, CN=alice, checked as mallory's, became
// the agent alice. Now a certificate whose agent is its common name and
// that has more than one is refused.
func TestMTLSTwoCommonNames(t *testing.T) {
	ca, sign := testCA(t)
	leaf := func(cns ...string) *x509.Certificate {
		var subject pkix.Name
		for _, cn := range cns {
			subject.ExtraNames = append(subject.ExtraNames, pkix.AttributeTypeAndValue{Type: asn1.ObjectIdentifier{2, 5, 4, 3}, Value: cn})
		}
		return sign(func(tm *x509.Certificate) { tm.Subject = subject })
	}
	for _, identity := range []string{"", "cn"} {
		if p, err := certPrincipal(&tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{leaf("mallory"), ca}}}, identity); err != nil || p.ID != "mallory" {
			t.Fatalf("identity %q, one CN: got %v, %v; want agent mallory", identity, p, err)
		}
		if p, err := certPrincipal(&tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{leaf("mallory", "alice"), ca}}}, identity); err == nil {
			t.Errorf("identity %q: a certificate with CN=mallory, CN=alice authenticated as agent %q", identity, p.ID)
		}
	}
}
