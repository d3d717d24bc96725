package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeConfig writes files (name → content) into a fresh directory and
// returns the path of the first one, sluice.yaml.
func writeConfig(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "conf")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "sluice.yaml")
}

// TestConfigValidate: `sluice config validate FILE` runs serve's checks on
// the whole config and names the key, its line and the fix.
func TestConfigValidate(t *testing.T) {
	// validate must not bind: a config naming a port in use still passes.
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	up := "upstreams: [{name: demo, url: 'http://127.0.0.1:9/mcp'}]\n"
	cases := []struct {
		name     string
		files    map[string]string
		wantErr  []string // substrings of the error; none: it passes
		wantOut  []string // substrings of the output
		dataFile bool     // data_dir names a file
	}{
		{name: "top-level typo", files: map[string]string{"sluice.yaml": up + "polcy: {default: allow}\n"},
			wantErr: []string{`sluice.yaml:2:1: unknown key "polcy"; did you mean "policy"?`}},
		{name: "nested typo", files: map[string]string{"sluice.yaml": up + "policy: {default: allow}\naudit:\n  retension: 1h\n"},
			wantErr: []string{`sluice.yaml:4:3: unknown key "retension" in audit; did you mean "retention"?`}},
		{name: "upstream typo", files: map[string]string{"sluice.yaml": "upstreams:\n  - name: a\n    comand: x\n"},
			wantErr: []string{`sluice.yaml:3:5: unknown key "comand" in upstreams[0]; did you mean "command"?`}},
		{name: "auth typo", files: map[string]string{"sluice.yaml": up + "auth:\n  mode: jwt\n  jwt: {isuer: x}\n"},
			wantErr: []string{`unknown key "isuer" in auth.jwt; did you mean "issuer"?`}},
		// A port out of range passed and serve failed at bind ("invalid port").
		{name: "listen port out of range", files: map[string]string{"sluice.yaml": up + "listen: 127.0.0.1:99999\n"},
			wantErr: []string{`listen: "127.0.0.1:99999": port "99999" is not a port`}},
		// The README's table gives admin_listen's default as "off" and
		// wrap takes --admin-listen off; the config's key is left out.
		{name: "admin_listen off", files: map[string]string{"sluice.yaml": up + "admin_listen: off\n"},
			wantErr: []string{`admin_listen: "off" is not host:port; leave admin_listen out for no admin API`}},
		{name: "admin_listen port out of range", files: map[string]string{"sluice.yaml": up + "admin_listen: 127.0.0.1:-1\n"},
			wantErr: []string{`admin_listen: "127.0.0.1:-1": port "-1" is not a port`}},
		{name: "every typo at once", files: map[string]string{"sluice.yaml": up + "polcy: {}\nlisen: x\n"},
			wantErr: []string{`"polcy"`, `"lisen"; did you mean "listen"?`}},
		// yaml's own "line 2: cannot unmarshal !!str `30d` into time.Duration"
		// named neither the key nor what it takes.
		{name: "a duration in days", files: map[string]string{"sluice.yaml": up + "audit:\n  retention: 30d\n"},
			wantErr: []string{`sluice.yaml:3:14: audit.retention: "30d" is not a duration such as`, "720h"}},
		{name: "a word for a number", files: map[string]string{"sluice.yaml": "upstreams:\n  - name: a\n    url: http://127.0.0.1:9/mcp\n    max_children: many\n"},
			wantErr: []string{`sluice.yaml:4:19: upstreams[0].max_children: "many" is not a whole number`}},
		{name: "a mapping for a list", files: map[string]string{"sluice.yaml": "upstreams: {name: a}\n"},
			wantErr: []string{`sluice.yaml:1:12: upstreams: a mapping is not a list`}},
		{name: "a list for the config", files: map[string]string{"sluice.yaml": "- name: a\n"},
			wantErr: []string{`sluice.yaml:1:1: a list is not a mapping`}},
		{name: "every wrong value at once", files: map[string]string{"sluice.yaml": up + "hide_denied_tools: maybe\nmax_body_bytes: lots\n"},
			wantErr: []string{`sluice.yaml:2:20: hide_denied_tools: "maybe" is not true or false`, `sluice.yaml:3:17: max_body_bytes: "lots" is not a whole number`}},
		// A secret that could not be read was called missing, as if the
		// config did not give it, and an agent's unset URL "".
		{name: "oauth secret from a missing file", files: map[string]string{"sluice.yaml": "upstreams:\n  - name: crm\n    url: https://crm.example/mcp\n    oauth: {token_url: 'https://idp.example/token', client_id: sluice, client_secret: '${file:/no/such/crm_secret}'}\n"},
			wantErr: []string{"/no/such/crm_secret", "no such file"}},
		{name: "oauth secret from an unset variable", files: map[string]string{"sluice.yaml": "upstreams:\n  - name: crm\n    url: https://crm.example/mcp\n    oauth: {token_url: 'https://idp.example/token', client_id: sluice, client_secret: '${SLUICE_TEST_UNSET_SECRET}'}\n"},
			wantErr: []string{"[SLUICE_TEST_UNSET_SECRET] are referenced but not set"}},
		{name: "agent URL from an unset variable", files: map[string]string{"sluice.yaml": "agents: [{name: research, url: '${SLUICE_TEST_UNSET_URL}'}]\n"},
			wantErr: []string{"[SLUICE_TEST_UNSET_URL] are referenced but not set"}},
		{name: "policy_file relative to the config", files: map[string]string{
			"sluice.yaml": up + "listen: " + held.Addr().String() + "\npolicy_file: policy.yaml\n",
			"policy.yaml": "default: allow\n"},
			wantOut: []string{"sluice.yaml: ok (1 upstream, policy version", ", 0 warnings)"}},
		{name: "bad policy in policy_file", files: map[string]string{"sluice.yaml": up + "policy_file: policy.yaml\n", "policy.yaml": "default: maybe\n"},
			wantErr: []string{"policy.yaml:1"}},
		{name: "missing policy_file", files: map[string]string{"sluice.yaml": up + "policy_file: nope.yaml\n"},
			wantErr: []string{"policy_file", "nope.yaml"}},
		{name: "no policy", files: map[string]string{"sluice.yaml": up},
			wantOut: []string{"warning: no policy", "every tools/call is denied"}},
		{name: "no upstreams", files: map[string]string{"sluice.yaml": "policy: {default: allow}\n"},
			wantOut: []string{"warning: no upstreams"}},
		{name: "A2A agents only", files: map[string]string{"sluice.yaml": "policy: {default: allow}\nagents: [{name: research, url: 'https://research.example'}]\n"},
			wantOut: []string{"sluice.yaml: ok", "0 warnings"}},
		{name: "missing stdio command", files: map[string]string{"sluice.yaml": "policy: {default: allow}\nupstreams: [{name: fs, command: ./bin/no-such-server}]\n"},
			wantOut: []string{"warning: upstreams[0] (fs): command", "conf/bin/no-such-server", "not found"}},
		{name: "bad upstream name", files: map[string]string{"sluice.yaml": "upstreams: [{name: 'a b', url: 'http://x/mcp'}]\n"},
			wantErr: []string{`upstreams[0]: name "a b"`}},
		{name: "bad listen", files: map[string]string{"sluice.yaml": up + "listen: localhost\n"},
			wantErr: []string{"listen:", "host:port"}},
		{name: "beyond loopback without auth", files: map[string]string{"sluice.yaml": up + "listen: 0.0.0.0:8080\n"},
			wantErr: []string{"beyond loopback", "auth"}},
		{name: "classifier provider", files: map[string]string{"sluice.yaml": up + "classifier: {provider: opnai}\n"},
			wantErr: []string{"classifier.provider", `"opnai"`}},
		{name: "route memory URL", files: map[string]string{"sluice.yaml": up + "route_memory: {redis_url: 'http://x'}\n"},
			wantErr: []string{"route_memory.redis_url"}},
		// A rule pinned to an upstream the config does not have (a typo,
		// a renamed upstream) never applies: deny: [file/delete] with the
		// upstream named files let every delete through under default:
		// allow, and validate said nothing.
		{name: "policy names an unknown upstream", files: map[string]string{"sluice.yaml": "upstreams: [{name: files, url: 'http://127.0.0.1:9/mcp'}]\nagents: [{name: research, url: 'https://research.example'}]\n" +
			"policy:\n  default: allow\n  deny: [file/delete, files/rm]\n  tool_classes: {fles/read: [source:x], a2a:research/send: [sink:y]}\n  rules:\n    - {id: r, match: {upstream: Files}, decision: deny}\n"},
			wantOut: []string{`warning: the policy names upstream "file", which sluice.yaml does not have`, `"fles"`, `"Files"`, "5 warnings"}}, // and two unclassified_tool
		// The policy's own warnings were only policy validate's: serve
		// started with a deny rule whose type guard skips big integers
		// and said nothing.
		{name: "policy warnings", files: map[string]string{"sluice.yaml": up + "policy:\n  default: allow\n  rules:\n    - {id: big, match: {match_tool: pay}, when: 'type(args.amount) in [int, double] && args.amount > 1000', decision: deny}\n"},
			wantOut: []string{"deny rule big names the number types int, double but not uint", "(number_guard_misses_type)", "1 warning"}},
		{name: "data_dir is a file", files: map[string]string{"sluice.yaml": up + "data_dir: afile\n", "afile": "x"},
			wantErr: []string{"data_dir", "not a directory"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := writeConfig(t, tc.files)
			var out bytes.Buffer
			err := runConfig(context.Background(), []string{"validate", path}, &out)
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("got no error (output %q), want one with %q", &out, tc.wantErr)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("got error %q, want it to contain %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v, want none", err)
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(out.String(), w) {
					t.Errorf("got output %q, want it to contain %q", &out, w)
				}
			}
		})
	}
}

// TestServeCheck: `serve --check` runs the same checks and binds nothing.
func TestServeCheck(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	path := writeConfig(t, map[string]string{
		"sluice.yaml": "listen: " + held.Addr().String() + "\nadmin_listen: " + held.Addr().String() +
			"\npolicy_file: p.yaml\nupstreams: [{name: demo, url: 'http://127.0.0.1:9/mcp'}]\n",
		"p.yaml": "default: allow\n"})
	var out bytes.Buffer
	if err := runServe(context.Background(), []string{"--config", path, "--check"}, &out); err != nil {
		t.Fatalf("serve --check: got %v, want nil (it must not bind the port in use)", err)
	}
	if !strings.Contains(out.String(), "ok") {
		t.Errorf("got %q, want an ok line", &out)
	}
	bad := writeConfig(t, map[string]string{"sluice.yaml": "polcy: {}\n"})
	if err := runServe(context.Background(), []string{"--config", bad, "--check"}, &out); err == nil || !strings.Contains(err.Error(), `did you mean "policy"`) {
		t.Errorf("serve --check of a typo: got %v, want the suggestion", err)
	}
}

// TestServeWithoutConfigSaysHow: `sluice serve` where there is no
// sluice.yaml, the first thing a new user may type, says how to give one
// (or to try the demo), not only "open sluice.yaml: no such file".
func TestServeWithoutConfigSaysHow(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, args := range [][]string{nil, {"--check"}} {
		err := runServe(context.Background(), args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "--config FILE") || !strings.Contains(err.Error(), "sluice demo") {
			t.Errorf("serve %q: %v; want it to name --config FILE and sluice demo", args, err)
		}
	}
	// A --config naming a missing file is that file's error.
	if err := runServe(context.Background(), []string{"--config", "missing.yaml"}, io.Discard); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("serve --config missing.yaml: %v", err)
	}
}

// TestNoDefaultFileSaysHow: `sluice recommend` and `sluice policy
// explain` where their default file (sluice.yaml) is not, say which flag
// names it, not only "open sluice.yaml: no such file or directory".
func TestNoDefaultFileSaysHow(t *testing.T) {
	t.Chdir(t.TempDir())
	ctx := context.Background()
	if err := runRecommend(ctx, nil, io.Discard); err == nil || !strings.Contains(err.Error(), "pass --config FILE") {
		t.Errorf("recommend: %v; want it to name --config FILE", err)
	}
	if err := policyExplain(ctx, []string{"--tool", "echo"}, io.Discard); err == nil || !strings.Contains(err.Error(), "pass --policy FILE") {
		t.Errorf("policy explain: %v; want it to name --policy FILE", err)
	}
	// A file named on the command line is that file's error.
	if err := policyExplain(ctx, []string{"--tool", "echo", "--policy", "missing.yaml"}, io.Discard); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("policy explain --policy missing.yaml: %v", err)
	}
}

// TestServePortInUseSaysHow: `sluice serve` (the Quickstart while the
// demo runs) on a port another program has says to pick another, as the
// demo did; before serve said only "bind: address already in use".
func TestServePortInUseSaysHow(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	for _, tc := range []struct{ yaml, want string }{
		{"listen: " + held.Addr().String() + "\n", "pick another address with --listen or the config's listen"},
		{"listen: 127.0.0.1:0\nadmin_listen: " + held.Addr().String() + "\n", "set another admin_listen"},
	} {
		cfg, err := parseConfig("test", []byte(tc.yaml+"policy: {default: deny}\n"))
		if err != nil {
			t.Fatal(err)
		}
		cfg.DataDir = t.TempDir()
		err = serve(context.Background(), cfg, slog.New(slog.DiscardHandler), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), held.Addr().String()) {
			t.Errorf("serve %q: %v; want it to say %q", tc.yaml, err, tc.want)
		}
	}
}
