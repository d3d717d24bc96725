package main

import (
	"bytes"
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHealthTLSCA: a gateway serving TLS under a certificate of its own
// CA (or self-signed) could not be checked by `sluice health`: the
// system's roots refused it, and there was no way to name the CA, so
// the image's HEALTHCHECK failed on every such gateway. --ca names it.
func TestHealthTLSCA(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			w.Write([]byte("ok\n"))
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if rc := run(context.Background(), []string{"health", "--url", srv.URL + "/healthz"}, &stdout, &stderr); rc == 0 {
		t.Errorf("health of a TLS gateway under an unknown CA without --ca: exit 0, want a failure")
	}
	stderr.Reset()
	if rc := run(context.Background(), []string{"health", "--url", srv.URL + "/healthz", "--ca", ca}, &stdout, &stderr); rc != 0 {
		t.Errorf("health --ca: exit %d (%s), want 0", rc, &stderr)
	}
	stderr.Reset()
	if rc := run(context.Background(), []string{"health", "--url", srv.URL + "/healthz", "--ca", filepath.Join(t.TempDir(), "none.pem")}, &stdout, &stderr); rc == 0 || !strings.Contains(stderr.String(), "none.pem") {
		t.Errorf("health --ca of a missing file: exit %d (%s), want a failure naming it", rc, &stderr)
	}
}
