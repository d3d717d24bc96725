package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHealthTLSServerName: a gateway's certificate names its host
// (gw.example.test), not 127.0.0.1, where the image's HEALTHCHECK and
// the README's `sluice health --url https://127.0.0.1:8080/healthz --ca
// ca.pem` reach it: the check failed on the name whatever --ca said.
// --server-name gives the name the certificate is checked for.
func TestHealthTLSServerName(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gw.example.test"}, DNSNames: []string{"gw.example.test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok\n")) }))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	srv.StartTLS()
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	url := srv.URL + "/healthz" // https://127.0.0.1:port
	var stdout, stderr bytes.Buffer
	if rc := run(context.Background(), []string{"health", "--url", url, "--ca", ca}, &stdout, &stderr); rc == 0 || !strings.Contains(stderr.String(), "gw.example.test") {
		t.Errorf("health at 127.0.0.1 of a certificate for gw.example.test without --server-name: exit %d (%s), want a failure naming the name", rc, &stderr)
	}
	stderr.Reset()
	if rc := run(context.Background(), []string{"health", "--url", url, "--ca", ca, "--server-name", "gw.example.test"}, &stdout, &stderr); rc != 0 {
		t.Errorf("health --server-name gw.example.test: exit %d (%s), want 0", rc, &stderr)
	}
	stderr.Reset()
	if rc := run(context.Background(), []string{"health", "--url", url, "--ca", ca, "--server-name", "other.example.test"}, &stdout, &stderr); rc == 0 {
		t.Errorf("health --server-name of a name the certificate does not hold: exit 0, want a failure")
	}
}
