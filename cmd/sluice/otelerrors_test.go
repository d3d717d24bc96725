package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"
)

// TestOTelErrorsLogged: an exporter's failure reaches the gateway's log
// as one of its lines (JSON here), scrubbed, not an unstructured line on
// stderr.
func TestOTelErrorsLogged(t *testing.T) {
	var buf bytes.Buffer
	otelErrors(slog.New(slog.NewJSONHandler(&buf, nil))).Handle(errors.New("traces export: Post \"https://u:hunter2@collector/v1/traces\": context deadline exceeded"))
	var line struct{ Level, Msg, Err string }
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("log: %q is not one JSON line: %v", buf.String(), err)
	}
	if line.Level != "WARN" || line.Msg != "telemetry: export failed" || !bytes.Contains([]byte(line.Err), []byte("context deadline exceeded")) {
		t.Errorf("log line: got %+v, want a WARN saying the export failed and why", line)
	}
	if bytes.Contains(buf.Bytes(), []byte("hunter2")) {
		t.Errorf("log line holds the URL's password: %s", buf.String())
	}
}
