package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestTelemetryHeadersExpanded: telemetry.headers carry the OTLP
// collector's API key, which belongs in the environment or a mounted
// file, as every other credential of the config does. ${VAR} and
// ${file:…} there were sent to the collector as written, the literal
// "${HONEYCOMB_KEY}" for a key, with no word at start.
func TestTelemetryHeadersExpanded(t *testing.T) {
	t.Setenv("TRIAL_OTLP_KEY", "k1")
	f := filepath.Join(t.TempDir(), "key")
	os.WriteFile(f, []byte("k2\n"), 0o600)
	cfg, err := parseConfig("c.yaml", []byte("telemetry: {headers: {x-api-key: '${TRIAL_OTLP_KEY}', x-other: 'Bearer ${file:"+f+"}'}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Telemetry.Headers["x-api-key"]; got != "k1" {
		t.Errorf("telemetry.headers with ${VAR}: got %q, want k1", got)
	}
	if got := cfg.Telemetry.Headers["x-other"]; got != "Bearer k2" {
		t.Errorf("telemetry.headers with ${file:}: got %q, want %q", got, "Bearer k2")
	}
	// The variable is Sluice's own: no stdio server's inherit_env passes it.
	if !slices.Contains(cfg.withheldEnv(), "TRIAL_OTLP_KEY") {
		t.Errorf("withheld from stdio servers: %v, want TRIAL_OTLP_KEY among them", cfg.withheldEnv())
	}
	if _, err := parseConfig("c.yaml", []byte("telemetry: {headers: {x-api-key: '${TRIAL_OTLP_UNSET}'}}\n")); err == nil {
		t.Error("telemetry.headers naming an unset variable: loaded, want the load error every ${VAR} gets")
	}
}
