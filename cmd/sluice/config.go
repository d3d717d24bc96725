package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/sluicehq/sluice/gateway"
	"github.com/sluicehq/sluice/intercept"
)

// config is sluice.yaml.
type config struct {
	// Listen is the address of the gateway's HTTP listener.
	Listen string `yaml:"listen"`
	// Upstreams are the MCP servers behind the gateway.
	Upstreams []gateway.Upstream `yaml:"upstreams"`
	// Policy is the static policy used until the policy engine lands.
	Policy *staticPolicy `yaml:"policy"`
	// MaxBodyBytes limits request bodies (default 4 MiB).
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// AllowedHosts and AllowedOrigins extend the loopback defaults of the
	// DNS-rebinding protection.
	AllowedHosts   []string `yaml:"allowed_hosts"`
	AllowedOrigins []string `yaml:"allowed_origins"`
	// AgentHeader names a request header that identifies the agent.
	AgentHeader string `yaml:"agent_header"`
	// ShutdownTimeout bounds how long in-flight calls may drain on SIGTERM
	// (default 15s).
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout"`
	// DataDir holds the gateway's durable state: signing key, pinned
	// inventories, audit events. Default $XDG_STATE_HOME/sluice (or
	// ~/.local/state/sluice).
	DataDir string `yaml:"data_dir"`
	// Inventory configures pinning and drift handling.
	Inventory inventoryConfig `yaml:"inventory"`
	// AdminListen is the admin API's address (approvals). Empty disables
	// it. Keep it where agents cannot reach it.
	AdminListen string `yaml:"admin_listen"`
	// AdminToken, if set, is the bearer token the admin API requires;
	// ${VAR} is expanded.
	AdminToken string `yaml:"admin_token"`
	// ApprovalTimeout is how long a held call waits for a human, and how
	// long an approval stays usable (default 15m).
	ApprovalTimeout time.Duration `yaml:"approval_timeout"`
	// SessionIdleTimeout ends idle sessions (default 30m).
	SessionIdleTimeout time.Duration `yaml:"session_idle_timeout"`
}

// staticPolicy is the tool-name policy of the gateway core.
type staticPolicy struct {
	// Default is allow or deny for tools in no list (default deny).
	Default string `yaml:"default"`
	// ResultMode is tool_result (soft deny) or throw (default).
	ResultMode string   `yaml:"result_mode"`
	Allow      []string `yaml:"allow"`
	Deny       []string `yaml:"deny"`
	Approval   []string `yaml:"require_approval"`
}

func (p *staticPolicy) decider() (intercept.Decider, error) {
	if p == nil {
		return nil, nil // the decision point denies with policy_not_configured
	}
	d := &intercept.StaticDecider{Allow: p.Allow, Deny: p.Deny, Approval: p.Approval, Mode: intercept.ResultMode(p.ResultMode)}
	switch p.Default {
	case "", "deny":
		d.Default = intercept.Deny
	case "allow":
		d.Default = intercept.Allow
	default:
		return nil, fmt.Errorf("policy.default: %q is not allow or deny", p.Default)
	}
	switch d.Mode {
	case "", intercept.ModeThrow, intercept.ModeToolResult:
	default:
		return nil, fmt.Errorf("policy.result_mode: %q is not tool_result or throw", p.ResultMode)
	}
	return d, nil
}

// dataDir returns the data directory, creating it.
func (c *config) dataDir() (string, error) {
	dir := c.DataDir
	if dir == "" {
		base := os.Getenv("XDG_STATE_HOME")
		if base == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return "", fmt.Errorf("data_dir: not set and no home directory: %w", err)
			}
			base = filepath.Join(home, ".local", "state")
		}
		dir = filepath.Join(base, "sluice")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("data_dir: %w", err)
	}
	return dir, nil
}

func (c *config) options() gateway.Options {
	return gateway.Options{
		Upstreams:          c.Upstreams,
		MaxBodyBytes:       c.MaxBodyBytes,
		AllowedHosts:       c.AllowedHosts,
		AllowedOrigins:     c.AllowedOrigins,
		AgentHeader:        c.AgentHeader,
		SessionIdleTimeout: c.SessionIdleTimeout,
	}
}

// loadConfig reads and checks a config file. Unknown keys are errors;
// ${VAR} in upstream URLs, commands, arguments, env and headers is
// replaced from the environment.
func loadConfig(path string) (*config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseConfig(path, b)
}

func parseConfig(path string, b []byte) (*config, error) {
	var c config
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var missing []string
	expand := func(s string) string {
		return varRef.ReplaceAllStringFunc(s, func(ref string) string {
			name := ref[2 : len(ref)-1]
			v, ok := os.LookupEnv(name)
			if !ok {
				missing = append(missing, name)
			}
			return v
		})
	}
	for i := range c.Upstreams {
		u := &c.Upstreams[i]
		u.URL, u.Command = expand(u.URL), expand(u.Command)
		for j := range u.Args {
			u.Args[j] = expand(u.Args[j])
		}
		for k, v := range u.Env {
			u.Env[k] = expand(v)
		}
		for k, v := range u.Headers {
			u.Headers[k] = expand(v)
		}
		if u.URL == "" && u.Command == "" {
			return nil, fmt.Errorf("%s: upstreams[%d] (%s): set url (for an HTTP, SSE or WebSocket server) or command (for a stdio server)", path, i, u.Name)
		}
	}
	c.AdminToken = expand(c.AdminToken)
	c.DataDir = expand(c.DataDir)
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s: environment variables %v are referenced but not set", path, missing)
	}
	if _, err := c.Policy.decider(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &c, nil
}

var varRef = regexp.MustCompile(`\$\{[A-Za-z_][A-Za-z0-9_]*\}`)
