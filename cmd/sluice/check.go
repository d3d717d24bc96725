package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/auth"
	"github.com/sluicehq/sluice/classifier"
	"github.com/sluicehq/sluice/gateway"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/inventory"
	"github.com/sluicehq/sluice/policy"
)

// checked is what preflight learnt about a config.
type checked struct {
	// Policy is the compiled policy; nil without one.
	Policy *policy.Policy
	// Warnings are what will start but probably not as meant.
	Warnings []string
}

// preflight runs every check serve makes of cfg before it binds a port
// or opens a store, without binding, writing or reaching the network:
// addresses, identity, upstreams (and that stdio commands exist), the
// policy, the classifier, auth, TLS, telemetry, route memory's URL, the
// data directory and the inventory key. `sluice config validate`,
// `serve --check` and serve itself run it; a config it passes fails
// later only for what is outside it (a port in use, Redis or an LLM
// provider down, a full disk).
func (c *config) preflight() (*checked, error) {
	ck := &checked{}
	for _, a := range []struct{ key, v string }{{"listen", c.listenAddr()}, {"admin_listen", c.AdminListen}} {
		if a.v == "" {
			continue
		}
		_, port, err := net.SplitHostPort(a.v)
		if err != nil && a.key == "admin_listen" && a.v == "off" {
			return nil, fmt.Errorf("%s: admin_listen: %q is not host:port; leave admin_listen out for no admin API (off is sluice wrap's --admin-listen value)", c.path, a.v)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %q is not host:port; give an address such as 127.0.0.1:8080", c.path, a.key, a.v)
		}
		// A port out of range (or a service name not in /etc/services)
		// passed here and failed only at bind ("invalid port").
		if _, err := net.LookupPort("tcp", port); err != nil {
			return nil, fmt.Errorf("%s: %s: %q: port %q is not a port (0 to 65535; 0 takes a free one); give an address such as 127.0.0.1:8080", c.path, a.key, a.v, port)
		}
	}
	if err := identityError(c); err != nil {
		return nil, fmt.Errorf("%s: %w", c.path, err)
	}
	g, err := gateway.New(c.options(), &intercept.Interceptor{}, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.path, err)
	}
	g.Close()
	if len(c.Upstreams) == 0 && len(c.Agents) == 0 { // A2A agents are routes too
		ck.warn("no upstreams: the gateway has nothing to route to; add upstreams: with a url or a command (fine for a config only sluice wrap uses: it names its upstream itself)")
	}
	for i, u := range c.Upstreams {
		if u.Command == "" {
			continue
		}
		if _, err := exec.LookPath(u.Command); err != nil {
			ck.warn("upstreams[%d] (%s): command %q not found (%v): every session to it will fail; install it or give its absolute path", i, u.Name, u.Command, err)
		}
	}
	switch {
	case c.PolicyFile != "":
		src, err := os.ReadFile(c.PolicyFile)
		if err != nil {
			return nil, fmt.Errorf("%s: policy_file: %w", c.path, err)
		}
		if ck.Policy, err = policy.Compile(src, c.PolicyFile, policy.Options{}); err != nil {
			return nil, err
		}
	case !c.Policy.IsZero():
		if ck.Policy, err = policy.Compile(c.src, c.path, policy.Options{}); err != nil {
			return nil, err
		}
	default:
		ck.warn("no policy: every tools/call is denied (policy_not_configured); add a policy: section or policy_file")
	}
	// The policy's lints, as policy validate gives them: serve logs them
	// at start.
	if ck.Policy != nil {
		for _, w := range ck.Policy.Validate() {
			ck.warn("%s", strings.Replace(w.String(), ": warning: ", ": ", 1))
		}
	}
	c.checkPolicyUpstreams(ck)
	if err := c.Classifier.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", c.path, err)
	}
	c.checkAnswerable(ck)
	if agents := ck.Policy.CappedAgents(); len(agents) > 0 && c.declared() == nil {
		ck.warn("policy.manifests: %s set boundary_ceiling, but nothing declares a boundary (classifier.tools.NAME.boundary, classifier.upstreams.NAME.zone): "+
			"every call of theirs is denied (manifest_boundary_exceeded)", strings.Join(agents, ", "))
	}
	switch c.Classifier.Provider {
	case "openai", "anthropic", "gemini":
		if _, err := classifier.LoadKey(c.Classifier.APIKeyEnv, c.Classifier.APIKeyFile); err != nil {
			return nil, fmt.Errorf("%s: %w", c.path, err)
		}
		if c.Classifier.APIKeyEnv == "" && c.Classifier.APIKeyFile == "" && c.Classifier.BaseURL == "" {
			ck.warn("classifier.provider: %s with no api_key_env or api_key_file: its hosted API refuses requests without a key, "+
				"and every call is then classified at low confidence (give the key, or base_url for a local server that needs none)", c.Classifier.Provider)
		}
	}
	if len(c.Agents) > 0 {
		relay, err := c.pushRelay()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.path, err)
		}
		if c.Auth != nil && !relay && c.PushRelay.Enabled == nil {
			ck.warn("A2A push notification configs are refused for authenticated callers: set public_url (the URL agents reach the gateway at) to relay them through the gateway (push_relay)")
		}
	}
	if err := c.Telemetry.Validate(); err != nil {
		return nil, fmt.Errorf("%s: telemetry: %w", c.path, err)
	}
	if u := c.RouteMemory.RedisURL; u != "" {
		if _, err := redis.ParseURL(u); err != nil {
			return nil, fmt.Errorf("%s: route_memory.redis_url: %w; give redis://host:6379/0 or rediss:// for TLS", c.path, err)
		}
	}
	if c.Auth != nil {
		d := auth.Deps{}
		if c.Auth.Mode.Has(auth.ModeAPIKey) {
			if d.KeyFile, err = c.keyFile(); err != nil {
				return nil, fmt.Errorf("%s: %w", c.path, err)
			}
		}
		if _, err := auth.New(*c.Auth, d); err != nil {
			return nil, fmt.Errorf("%s: %w", c.path, err)
		}
	}
	if _, err := c.serverTLS(); err != nil {
		return nil, fmt.Errorf("%s: %w", c.path, err)
	}
	dir, err := c.dataDirPath()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.path, err)
	}
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return nil, fmt.Errorf("%s: data_dir: %s is not a directory; name a directory (it is created if missing)", c.path, dir)
	}
	if c.Inventory.KeyFile != "" {
		if _, err := inventory.LoadKey(c.Inventory.KeyFile); err != nil {
			return nil, fmt.Errorf("%s: inventory.key_file: %w", c.path, err)
		}
	}
	return ck, nil
}

func (ck *checked) warn(format string, args ...any) {
	ck.Warnings = append(ck.Warnings, fmt.Sprintf(format, args...))
}

// listenAddr is the agents' listen address, with its default.
func (c *config) listenAddr() string {
	if c.Listen == "" {
		return "127.0.0.1:8080"
	}
	return c.Listen
}

// runConfig is `sluice config validate FILE`.
func runConfig(_ context.Context, args []string, out io.Writer) error {
	if len(args) == 0 || args[0] != "validate" {
		if len(args) > 0 && isHelp(args[0]) {
			return errHelp
		}
		return usageErrorf("config: want validate FILE")
	}
	fs := newFlagSet("config validate")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageErrorf("config validate: want one FILE, the gateway's config (sluice.yaml)")
	}
	return validateConfig(fs.Arg(0), nil, out)
}

// validateConfig loads the config at path, applies override (if not nil)
// and runs preflight, printing the warnings and an ok line to out.
func validateConfig(path string, override func(*config), out io.Writer) error {
	cfg, err := loadConfig(path)
	if err != nil {
		return err
	}
	if override != nil {
		override(cfg)
	}
	ck, err := cfg.preflight()
	if err != nil {
		return err
	}
	for _, w := range ck.Warnings {
		fmt.Fprintln(out, "warning:", w)
	}
	version := "none"
	if ck.Policy != nil {
		version = ck.Policy.Version()
	}
	fmt.Fprintf(out, "%s: ok (%s, policy version %s, %s)\n", path, count(len(cfg.Upstreams), "upstream"), version, count(len(ck.Warnings), "warning"))
	return nil
}

// count is n and noun, in the plural unless n is one: "1 upstream", "0 warnings".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// checkPolicyUpstreams warns about each upstream the policy names (in a
// rule's upstream, a pinned tool or a tool_classes key) that the config
// has not, as an upstream or an A2A agent (a2a:NAME): what names it never
// applies, and a deny pinned to a misspelt upstream denies nothing. A
// config without routes, or sluice wrap's, is not checked.
func (c *config) checkPolicyUpstreams(ck *checked) {
	if ck.Policy == nil || c.wrapped || len(c.Upstreams)+len(c.Agents) == 0 {
		return
	}
	have := map[string]bool{}
	for _, u := range c.Upstreams {
		have[u.Name] = true
	}
	for _, a := range c.Agents {
		have["a2a:"+a.Name] = true
	}
	for _, u := range ck.Policy.Upstreams() {
		if !have[u] {
			ck.warn("the policy names upstream %q, which sluice.yaml does not have: what names it never applies (write an upstream's name as upstreams: gives it, or a2a:NAME for an agent)", u)
		}
	}
}
