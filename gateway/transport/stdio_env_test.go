package transport

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// childEnviron starts d's child and returns the environment it sees.
func childEnviron(t *testing.T, d *StdioDialer) map[string]string {
	t.Helper()
	c := mustDial(t, d)
	mustWrite(t, c, `{"jsonrpc":"2.0","id":1,"method":"environ"}`)
	var got struct{ Environ []string }
	if err := json.Unmarshal(decodeResponse(t, mustRead(t, c)).Result, &got); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, kv := range got.Environ {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	return env
}

// A stdio server is a program the gateway runs for agents, perhaps one
// an attacker published: it must not read the gateway's own secrets from
// its environment, only what the SDKs' stdio clients pass and what its
// config gives it.
func TestStdioChildDoesNotInheritGatewaySecrets(t *testing.T) {
	stdioNoLeaks(t)
	t.Setenv("SLUICE_ADMIN_TOKEN", "admin-secret")
	t.Setenv("REDIS_PASSWORD", "redis-secret")
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer otlp-secret")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "cloud-secret")
	t.Setenv("HOME", "/home/gateway")
	t.Setenv("PATH", "/usr/bin:/bin")
	t.Setenv("SHELL", "() { :; }; echo pwned") // an exported bash function, not a setting

	env := childEnviron(t, stdioHelperDialer(t, "echo", "CONFIGURED=yes"))
	for _, k := range []string{"SLUICE_ADMIN_TOKEN", "REDIS_PASSWORD", "OTEL_EXPORTER_OTLP_HEADERS", "AWS_SECRET_ACCESS_KEY", "SHELL"} {
		if v, ok := env[k]; ok {
			t.Errorf("child got %s=%q, want it not inherited", k, v)
		}
	}
	for k, want := range map[string]string{"HOME": "/home/gateway", "PATH": "/usr/bin:/bin", "CONFIGURED": "yes"} {
		if env[k] != want {
			t.Errorf("child got %s=%q, want %q", k, env[k], want)
		}
	}

	t.Run("InheritEnv", func(t *testing.T) {
		d := stdioHelperDialer(t, "echo", "HOME=/home/configured")
		d.InheritEnv = func(name string) bool { return name == "AWS_SECRET_ACCESS_KEY" || name == "HOME" }
		env := childEnviron(t, d)
		if env["AWS_SECRET_ACCESS_KEY"] != "cloud-secret" {
			t.Errorf("got AWS_SECRET_ACCESS_KEY %q, want the inherited %q", env["AWS_SECRET_ACCESS_KEY"], "cloud-secret")
		}
		if env["HOME"] != "/home/configured" {
			t.Errorf("got HOME %q, want Env's %q over the inherited one", env["HOME"], "/home/configured")
		}
		for _, k := range []string{"SLUICE_ADMIN_TOKEN", "PATH"} {
			if _, ok := env[k]; ok {
				t.Errorf("child got %s, want only what InheritEnv accepts", k)
			}
		}
	})
}

func TestDefaultInheritedEnv(t *testing.T) {
	names := DefaultInheritedEnv()
	if !slices.Contains(names, "PATH") {
		t.Errorf("got %v, want PATH among them", names)
	}
	names[0] = "MUTATED"
	if InheritedByDefault("MUTATED") {
		t.Error("changing DefaultInheritedEnv's answer changed the defaults")
	}
}
