package main

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"github.com/sluicehq/sluice/a2a"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sluicehq/sluice/auth"
	"github.com/sluicehq/sluice/policy"
	"github.com/sluicehq/sluice/telemetry"

	"github.com/sluicehq/sluice/gateway"
	"github.com/sluicehq/sluice/intercept"
)

// config is sluice.yaml.
type config struct {
	// Listen is the address of the gateway's HTTP listener.
	Listen string `yaml:"listen"`
	// Upstreams are the MCP servers behind the gateway.
	Upstreams []gateway.Upstream `yaml:"upstreams"`
	// VirtualServers merge upstreams behind one endpoint: /mcp for the
	// one without a name, /mcp/{name} for the others (README, Virtual
	// servers).
	VirtualServers []gateway.VirtualServer `yaml:"virtual_servers"`
	// Agents are A2A agents served at /a2a/{name} (see README, A2A).
	Agents []a2a.Agent `yaml:"agents"`
	// AgentTasks says where A2A task owners live (agent_tasks:).
	AgentTasks agentTasksConfig `yaml:"agent_tasks"`
	// TrustedProxies are the addresses or CIDR prefixes of reverse proxies
	// in front of the gateway: their X-Forwarded-For names the client
	// every per-client bound counts (gateway.Options.TrustedProxies), and
	// their X-Forwarded-Proto and X-Forwarded-Host the gateway believes
	// when it writes its own URL into A2A agent cards; from anyone else
	// those headers are ignored.
	TrustedProxies []string `yaml:"trusted_proxies"`
	trustedProxies []netip.Prefix
	// PublicURL is the URL agents reach the gateway at
	// (https://gw.example.com); A2A cards name it whatever Host a request
	// says. Empty: the request's Host (checked by allowed_hosts).
	PublicURL string `yaml:"public_url"`
	// PushRelay relays A2A push notifications through the gateway
	// (push_relay:).
	PushRelay pushRelayConfig `yaml:"push_relay"`
	// Policy is the inline policy (see package policy for its schema).
	Policy yaml.Node `yaml:"policy"`
	// PolicyFile names a policy file instead; it is hot-reloaded when it
	// changes.
	PolicyFile string `yaml:"policy_file"`

	path string // where the config was read from
	src  []byte // the config's bytes, for the policy compiler
	// listener, if set, is the agents' listener, already bound to Listen
	// (tests that must know the address before the config is written).
	listener net.Listener
	// MaxBodyBytes limits request bodies and every message from a
	// client: a /ws message, an /sse POST, a line `sluice wrap` reads
	// from its client (default 4 MiB).
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// MaxAnswerBytes bounds every message from an upstream, which is read
	// whole to be screened: an HTTP JSON answer, an event's data, a stdio
	// line, a WebSocket message; a longer one is refused (default 32 MiB).
	MaxAnswerBytes int64 `yaml:"max_answer_bytes"`
	// GCHeapFloorBytes is the heap the garbage collector lets grow before
	// collecting (internal/gcfloor; default 64 MiB); GOGC in the
	// environment leaves Go's own setting alone instead.
	GCHeapFloorBytes int64 `yaml:"gc_heap_floor_bytes"`
	// AllowedHosts and AllowedOrigins extend the loopback defaults of the
	// DNS-rebinding protection.
	AllowedHosts   []string `yaml:"allowed_hosts"`
	AllowedOrigins []string `yaml:"allowed_origins"`
	// HideDeniedTools removes from tools/list answers the tools the policy
	// denies this agent whatever the arguments (default true).
	HideDeniedTools *bool `yaml:"hide_denied_tools"`
	// AgentHeader names a request header that identifies the agent on
	// every transport, over the client's own name (gateway.Options).
	AgentHeader string `yaml:"agent_header"`
	// AgentHeaderRequired refuses requests without AgentHeader (400);
	// it needs agent_header, and `sluice wrap` (stdio, no headers)
	// refuses to start with it. Default false.
	AgentHeaderRequired bool `yaml:"agent_header_required"`
	// ShutdownTimeout bounds how long in-flight calls may drain on SIGTERM
	// (default 15s).
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout"`
	// DataDir holds the gateway's durable state: signing key, pinned
	// inventories, audit events. Default $XDG_STATE_HOME/sluice (or
	// ~/.local/state/sluice).
	DataDir string `yaml:"data_dir"`
	// Classifier configures the five-axis classifier beside the policy.
	Classifier classifierConfig `yaml:"classifier"`
	// Telemetry configures OpenTelemetry traces and metrics and the
	// Prometheus /metrics endpoint (on admin_listen).
	Telemetry telemetry.Config `yaml:"telemetry"`
	// Audit configures what events keep of arguments: by default a
	// canonical hash, secrets redacted; keep_arguments keeps them (still
	// redacted) for replay.
	Audit auditConfig `yaml:"audit"`
	// RouteMemory says where route rules' memory lives: in the process
	// (default) or in Redis, shared by every replica.
	RouteMemory routeMemoryConfig `yaml:"route_memory"`
	// Recommend configures the policy recommendation engine.
	Recommend recommendConfig `yaml:"recommend"`
	// Inventory configures pinning and drift handling.
	Inventory inventoryConfig `yaml:"inventory"`
	// AdminListen is the admin API's address (approvals). Empty disables
	// it. Keep it where agents cannot reach it.
	AdminListen string `yaml:"admin_listen"`
	// AdminToken is the bearer token the admin API requires; ${VAR} is
	// expanded. Empty: a random token is generated at first start, stored
	// in the data directory (admin.token, mode 0600) and printed once in
	// the log; the CLI reads it from there (--config).
	AdminToken string `yaml:"admin_token"`
	// adminTokenRandom: AdminToken was made at random for this run (the
	// demo's), as good as a generated one.
	adminTokenRandom bool
	// AdminJWT, if set, also admits to the admin API a JWT from this
	// issuer that carries an admin role: required_claims (such as
	// {roles: sluice-admin}) or required_scopes must say which, and its
	// audience must not be an agent audience (auth.jwt.audience), so no
	// agent's token administers. admin_token keeps working beside it.
	AdminJWT *auth.JWTConfig `yaml:"admin_jwt"`
	// AdminAllowedHosts and AdminAllowedOrigins extend the loopback
	// defaults of the admin listener's DNS-rebinding protection, as
	// allowed_hosts and allowed_origins do for the agents' port; "*"
	// accepts any.
	AdminAllowedHosts   []string `yaml:"admin_allowed_hosts"`
	AdminAllowedOrigins []string `yaml:"admin_allowed_origins"`
	// Approvals configures held calls (require_approval).
	Approvals approvalsConfig `yaml:"approvals"`
	// RateLimits are token buckets per principal, upstream, tool or for
	// everything, in this process or shared through Redis.
	RateLimits rateLimitsConfig `yaml:"rate_limits"`
	// ApprovalTimeout is the old name of approvals.timeout, still
	// accepted.
	ApprovalTimeout time.Duration `yaml:"approval_timeout"`
	// SessionIdleTimeout ends idle sessions (default 30m).
	SessionIdleTimeout time.Duration `yaml:"session_idle_timeout"`
	// WriteStallTimeout ends a response whose write to the client has
	// made no progress for this long (default 30s): a client that keeps
	// its socket open without reading otherwise keeps its request in
	// flight, and its session, for ever. An idle stream is not cut.
	WriteStallTimeout time.Duration `yaml:"write_stall_timeout"`
	// SessionKeys seal 2025-era session ids so that every replica with
	// the same keys serves every session on an HTTP upstream: base64 of 32
	// random bytes each (`openssl rand -base64 32`), ${VAR} and ${file:PATH}
	// expanded; the first seals, all open (rotate by prepending a new key).
	SessionKeys []string `yaml:"session_keys"`
	sessionKeys [][]byte
	// SessionMaxAge bounds how long after initialize a sealed session id
	// (session_keys) is served, on every replica, however much it is used
	// (default 24h; negative: until its key is rotated out).
	SessionMaxAge time.Duration `yaml:"session_max_age"`
	// routeMemoryFile keeps route memory in data_dir (route-memory.db)
	// when no redis_url is set: `sluice wrap`, where each wrapped server is
	// a process of its own and a desktop client runs several.
	routeMemoryFile bool
	// wrapped: the config is sluice wrap's, whose one upstream is the
	// server it wraps; the policy may name the others its config's
	// wraps run.
	wrapped bool
	// ownEnv names the environment variables the config's ${VAR}s
	// outside upstreams read, upstreamEnv those the upstreams' read: no
	// stdio upstream's inherit_env pattern passes them (withheldEnv).
	ownEnv, upstreamEnv []string
	// MaxSessions bounds the open sessions, /ws and /sse connections
	// included (default 10000).
	MaxSessions int `yaml:"max_sessions"`
	// MaxSessionsPerAgent and MaxSessionsPerClient bound the sessions of
	// one agent and of one client address (default a tenth of
	// max_sessions each).
	MaxSessionsPerAgent  int `yaml:"max_sessions_per_agent"`
	MaxSessionsPerClient int `yaml:"max_sessions_per_client"`
	// MaxInflightBodyBytes bounds the request body bytes held at once
	// across all clients (default 16 × max_body_bytes).
	MaxInflightBodyBytes int64 `yaml:"max_inflight_body_bytes"`
	// Auth authenticates every request on the agents' listener (see
	// package auth). Absent: the agent is whoever the client says it is,
	// which serve allows on a loopback listen address only; mode none
	// says so explicitly for any address.
	Auth *auth.Config `yaml:"auth"`
	// TLS serves the agents' listener over HTTPS; client_ca_file also
	// asks for client certificates (needed by auth mode mtls).
	TLS *tlsConfig `yaml:"tls"`
}

// tlsConfig is the `tls:` section of the agents' listener.
type tlsConfig struct {
	// CertFile and KeyFile are the server's certificate chain and key
	// (PEM), both required.
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// ClientCAFile, if set, is a PEM bundle of the CAs client
	// certificates are verified against. A certificate is then required
	// when mtls is the only auth mode, and verified when given otherwise.
	ClientCAFile string `yaml:"client_ca_file"`
}

// checkAuth validates the auth: and tls: sections.
func (c *config) checkAuth() error {
	if c.Auth != nil {
		if err := c.Auth.Validate(); err != nil {
			return err
		}
		if c.Auth.Mode.Has(auth.ModeMTLS) && (c.TLS == nil || c.TLS.ClientCAFile == "") {
			return errors.New("auth.mode: mtls needs client certificates; set tls: {cert_file, key_file, client_ca_file}")
		}
	}
	if t := c.TLS; t != nil {
		if t.CertFile == "" || t.KeyFile == "" {
			return errors.New("tls: set both cert_file and key_file (PEM), or remove tls:")
		}
		if _, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile); err != nil {
			return fmt.Errorf("tls.cert_file/key_file: %w", err)
		}
		if t.ClientCAFile != "" {
			if _, err := t.clientCAs(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (t *tlsConfig) clientCAs() (*x509.CertPool, error) {
	b, err := os.ReadFile(t.ClientCAFile)
	if err != nil {
		return nil, fmt.Errorf("tls.client_ca_file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("tls.client_ca_file: %s holds no PEM certificate; give the CA bundle client certificates are issued by", t.ClientCAFile)
	}
	return pool, nil
}

// serverTLS is the listener's TLS configuration, nil without tls:.
func (c *config) serverTLS() (*tls.Config, error) {
	t := c.TLS
	if t == nil {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("tls.cert_file/key_file: %w", err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if t.ClientCAFile != "" {
		if tc.ClientCAs, err = t.clientCAs(); err != nil {
			return nil, err
		}
		tc.ClientAuth = tls.VerifyClientCertIfGiven
		if c.Auth != nil && len(c.Auth.Mode) == 1 && c.Auth.Mode.Has(auth.ModeMTLS) {
			tc.ClientAuth = tls.RequireAndVerifyClientCert
		}
	}
	return tc, nil
}

// keyFile is the API key file: auth.api_keys.file, or agent_keys.json in
// the data directory.
func (c *config) keyFile() (string, error) {
	if c.Auth != nil && c.Auth.APIKeys.File != "" {
		return c.Auth.APIKeys.File, nil
	}
	dir, err := c.dataDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "agent_keys.json"), nil
}

// checkLimits reports the first resource limit that cannot work, naming
// its key and the fix.
func (c *config) checkLimits() error {
	for _, l := range []struct {
		key string
		v   int64
	}{
		{"max_body_bytes", c.MaxBodyBytes},
		{"max_answer_bytes", c.MaxAnswerBytes},
		{"max_sessions", int64(c.MaxSessions)},
		{"max_sessions_per_agent", int64(c.MaxSessionsPerAgent)},
		{"max_sessions_per_client", int64(c.MaxSessionsPerClient)},
		{"max_inflight_body_bytes", c.MaxInflightBodyBytes},
		{"gc_heap_floor_bytes", c.GCHeapFloorBytes},
	} {
		if l.v < 0 {
			return fmt.Errorf("%s: %d is negative; give a positive limit, or 0 for the default", l.key, l.v)
		}
	}
	if c.WriteStallTimeout < 0 {
		return fmt.Errorf("write_stall_timeout: %v is negative; give how long a write to a client may make no progress, such as 30s, or 0 for the default", c.WriteStallTimeout)
	}
	maxBody := cmp.Or(c.MaxBodyBytes, gateway.DefaultMaxBodyBytes)
	if c.MaxInflightBodyBytes != 0 && c.MaxInflightBodyBytes < maxBody {
		return fmt.Errorf("max_inflight_body_bytes: %d is less than max_body_bytes (%d), so a body of the largest allowed size could never be read; raise it, or 0 for 16 × max_body_bytes", c.MaxInflightBodyBytes, maxBody)
	}
	for i, u := range c.Upstreams {
		switch {
		case u.MaxChildren < 0:
			return fmt.Errorf("upstreams[%d] (%s): max_children: %d is negative; give a positive number, or 0 for 16", i, u.Name, u.MaxChildren)
		case u.MaxChildren > 0 && u.Command == "":
			return fmt.Errorf("upstreams[%d] (%s): max_children applies only to stdio upstreams (command:); remove it", i, u.Name)
		}
		if err := u.CheckPassHeaders(); err != nil {
			return fmt.Errorf("upstreams[%d] (%s): %w", i, u.Name, err)
		}
		if err := u.CheckInheritEnv(); err != nil {
			return fmt.Errorf("upstreams[%d] (%s): %w", i, u.Name, err)
		}
	}
	return nil
}

// withheldEnv names the variables of the gateway's environment that are
// its own, so that no stdio upstream's inherit_env pattern passes them:
// what its config's ${VAR}s outside upstreams and its api_key_env read,
// and the OTLP exporter's settings while it exports over OTLP (the
// OpenTelemetry SDK reads OTEL_EXPORTER_OTLP_HEADERS, often an API key).
func (c *config) withheldEnv() []string {
	names := slices.Clone(c.ownEnv)
	if c.Classifier.APIKeyEnv != "" {
		names = append(names, c.Classifier.APIKeyEnv)
	}
	if otlp := func(e telemetry.Exporter) bool {
		return e == telemetry.ExporterOTLPHTTP || e == telemetry.ExporterOTLPGRPC
	}; otlp(c.Telemetry.Traces) || otlp(c.Telemetry.Metrics) {
		for _, kv := range os.Environ() {
			if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "OTEL_") {
				names = append(names, k)
			}
		}
	}
	return names
}

// decider compiles the config's policy: the file named by policy_file
// (watched and hot-reloaded by run), or the inline policy: section, with
// mem as its route memory. With neither, every call is denied with
// policy_not_configured.
func (c *config) decider(logger *slog.Logger, mem policy.Store) (d intercept.Decider, run func(context.Context), err error) {
	// Whoever authenticates has a route memory of their own; whoever
	// does not is one agent to it, whatever name they give (README,
	// Identity): serve and wrap alike.
	opts := policy.Options{Logger: logger, Store: mem, OneUnauthenticatedAgent: true}
	switch {
	case c.PolicyFile != "":
		// The watcher logs reloads and rejections itself, once.
		w, err := policy.NewWatcher(c.PolicyFile, policy.WatchOptions{Options: opts})
		if err != nil {
			return nil, nil, err
		}
		return w, func(ctx context.Context) { _ = w.Run(ctx) }, nil
	case !c.Policy.IsZero():
		p, err := policy.Compile(c.src, c.path, opts)
		if err != nil {
			return nil, nil, err
		}
		return p, func(context.Context) {}, nil
	}
	return nil, func(context.Context) {}, nil
}

// routeMemoryConfig is the `route_memory:` section. TTL keeps a memory in
// Redis this long after its last write (zero: 30 days); route rules'
// windows may be at most this long, or the policy is rejected.
type routeMemoryConfig struct {
	// RedisURL (redis:// or rediss://, ${VAR} expanded) keeps route
	// memory in Redis; empty keeps it in memory.
	RedisURL  string        `yaml:"redis_url"`
	KeyPrefix string        `yaml:"key_prefix"`
	TTL       time.Duration `yaml:"ttl"`
	Timeout   time.Duration `yaml:"timeout"`
}

// approvalsConfig is the `approvals:` section.
type approvalsConfig struct {
	// ClientMayAnswer lets the client answer the gateway's approval
	// question itself: an elicitation/create form in 2025-era sessions,
	// an input_required result with a sealed requestState in 2026-07-28.
	// Where the client is the agent, that is the agent approving its own
	// calls; so the default, false, leaves every held call to an operator
	// (`sluice approvals`).
	ClientMayAnswer bool `yaml:"client_may_answer"`
	// Timeout is how long a held call waits for an answer, and how long
	// an approval stays usable (default 15m).
	Timeout time.Duration `yaml:"timeout"`
	// RedisURL (redis://, rediss:// or unix://, ${VAR} expanded) keeps
	// held calls and their answers in Redis, shared by every replica: a
	// call held on one is approved through any other's admin API. Empty
	// keeps them in data_dir/approvals.db (shared by processes on that
	// directory, and surviving a restart).
	RedisURL string `yaml:"redis_url"`
	// KeyPrefix of the approvals' Redis keys (default "{sluice:approvals}:").
	KeyPrefix string `yaml:"key_prefix"`
}

// auditConfig is the `audit:` section.
type auditConfig struct {
	// Off disables the local audit store (events still reach OTel
	// metrics); for gateways that ship events elsewhere, and for
	// measuring what the store costs.
	Off bool `yaml:"off"`
	// Retention deletes events older than this (checked hourly); zero
	// keeps them all.
	Retention time.Duration `yaml:"retention"`
	// OnFailure is what happens to calls while events cannot be written
	// (disk full, data_dir removed): "warn" (the default) forwards them,
	// with an ERROR log and the lost events counted in
	// sluice_audit_events_lost_total; "deny" refuses them with
	// audit_unavailable until a write succeeds again.
	OnFailure string `yaml:"on_failure"`
	// Sync is when an event counts as written. "linger" (the default):
	// once queued; the queue is committed at least every 50 ms, so a
	// crash loses what is queued. "commit": every event is committed and
	// fsynced before the gateway goes on, and an allowed call's
	// policy_enforced event before the call is forwarded.
	Sync               string `yaml:"sync"`
	telemetry.Redactor `yaml:",inline"`
}

// Values of audit.on_failure and audit.sync.
const (
	auditWarn   = "warn"
	auditDeny   = "deny"
	auditLinger = "linger"
	auditCommit = "commit"
)

// check validates the audit section; path names the config file.
func (a *auditConfig) check(path string) error {
	if a.Retention < 0 {
		return fmt.Errorf("%s: audit.retention: %v is negative; give how long events are kept, such as 720h, or 0 to keep them all", path, a.Retention)
	}
	switch a.OnFailure {
	case "", auditWarn, auditDeny:
	default:
		return fmt.Errorf("%s: audit.on_failure: %q is not a choice; use warn (calls go on, losses are logged and counted) or deny (calls are refused while events cannot be written)", path, a.OnFailure)
	}
	switch a.Sync {
	case "", auditLinger, auditCommit:
	default:
		return fmt.Errorf("%s: audit.sync: %q is not a choice; use linger (events committed within 50 ms) or commit (each event fsynced before the call goes on)", path, a.Sync)
	}
	if a.Off && (a.OnFailure == auditDeny || a.Sync == auditCommit) {
		return fmt.Errorf("%s: audit.off: true leaves no store for on_failure: deny or sync: commit; remove one or the other", path)
	}
	return nil
}

// dataDir returns the data directory, creating it.
func (c *config) dataDir() (string, error) {
	dir, err := c.dataDirPath()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("data_dir: %w", err)
	}
	return dir, nil
}

// dataDirPath returns the data directory's path.
func (c *config) dataDirPath() (string, error) {
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
	return dir, nil
}

// upstreams are c's upstreams, whose inherit_env patterns pass neither
// the gateway's own environment nor what the upstreams' ${VAR}s read
// (one upstream's credential is not another's).
func (c *config) upstreams() []gateway.Upstream {
	ups := slices.Clone(c.Upstreams)
	withheld := append(c.withheldEnv(), c.upstreamEnv...)
	for i := range ups {
		ups[i].WithholdEnv = withheld
	}
	return ups
}

func (c *config) options() gateway.Options {
	return gateway.Options{
		Upstreams:           c.upstreams(),
		VirtualServers:      c.VirtualServers,
		MaxBodyBytes:        c.MaxBodyBytes,
		MaxAnswerBytes:      c.MaxAnswerBytes,
		AllowedHosts:        c.AllowedHosts,
		AllowedOrigins:      c.AllowedOrigins,
		AgentHeader:         c.AgentHeader,
		AgentHeaderRequired: c.AgentHeaderRequired,
		TrustedProxies:      c.trustedProxies,
		SessionIdleTimeout:  c.SessionIdleTimeout,
		WriteStallTimeout:   c.WriteStallTimeout,
		SessionKeys:         c.sessionKeys,
		SessionMaxAge:       c.SessionMaxAge,

		MaxSessions:          c.MaxSessions,
		MaxSessionsPerAgent:  c.MaxSessionsPerAgent,
		MaxSessionsPerClient: c.MaxSessionsPerClient,
		MaxInflightBodyBytes: c.MaxInflightBodyBytes,
	}
}

// loadConfig reads and checks a config file. Unknown keys are errors;
// ${VAR} in upstream URLs, commands, arguments, env, headers and oauth
// is replaced from the environment, ${file:PATH} by the file's contents.
func loadConfig(path string) (*config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseConfig(path, b)
}

func parseConfig(path string, b []byte) (*config, error) {
	c := config{path: path, src: b}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := checkAliases(path, &doc); err != nil {
		return nil, err
	}
	if err := unknownKeys(path, &doc, reflect.TypeFor[config]()); err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		if te := (*yaml.TypeError)(nil); errors.As(err, &te) {
			if verr := valueErrors(path, &doc, reflect.TypeFor[config]()); verr != nil {
				return nil, verr
			}
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if c.AgentHeader != "" && !headerName.MatchString(c.AgentHeader) {
		return nil, fmt.Errorf("%s: agent_header: %q is not a valid HTTP header name; use letters, digits and '-', such as X-Agent-Id", path, c.AgentHeader)
	}
	if c.AgentHeaderRequired && c.AgentHeader == "" {
		return nil, fmt.Errorf("%s: agent_header_required: true needs agent_header, the header that names the agent; set agent_header: X-Agent-Id (or your header)", path)
	}
	if err := c.Audit.check(path); err != nil {
		return nil, err
	}
	if err := c.Approvals.merge(c.ApprovalTimeout); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var missing []string
	var fileErr error
	refs := &c.ownEnv
	expand := func(s string) string {
		return varRef.ReplaceAllStringFunc(s, func(ref string) string {
			name := ref[2 : len(ref)-1]
			if file, ok := strings.CutPrefix(name, "file:"); ok {
				v, err := readSecretFile(file)
				if err != nil && fileErr == nil {
					fileErr = err
				}
				return v
			}
			*refs = append(*refs, name)
			v, ok := os.LookupEnv(name)
			if !ok {
				missing = append(missing, name)
			}
			return v
		})
	}
	// expanded reports a variable or file that could not be expanded: it
	// goes before a check of an expanded value, which would otherwise
	// call a ${VAR} left unset "missing" or a URL "".
	expanded := func() error {
		if len(missing) > 0 {
			return fmt.Errorf("%s: environment variables %v are referenced but not set", path, missing)
		}
		if fileErr != nil {
			return fmt.Errorf("%s: %w", path, fileErr)
		}
		return nil
	}
	c.RouteMemory.RedisURL = expand(c.RouteMemory.RedisURL)
	c.RateLimits.RedisURL = expand(c.RateLimits.RedisURL)
	c.Approvals.RedisURL = expand(c.Approvals.RedisURL)
	c.Inventory.RedisURL = expand(c.Inventory.RedisURL)
	c.AgentTasks.RedisURL = expand(c.AgentTasks.RedisURL)
	if err := expanded(); err != nil {
		return nil, err
	}
	if err := c.Inventory.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for i, k := range c.SessionKeys {
		k = expand(k)
		if err := expanded(); err != nil {
			return nil, err
		}
		raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(k))
		if err != nil || len(raw) != 32 {
			return nil, fmt.Errorf("%s: session_keys[%d]: want the base64 of 32 random bytes (openssl rand -base64 32)", path, i)
		}
		c.sessionKeys = append(c.sessionKeys, raw)
	}
	for i, p := range c.TrustedProxies {
		pfx, err := netip.ParsePrefix(p)
		if err != nil {
			a, aerr := netip.ParseAddr(p)
			if aerr != nil {
				return nil, fmt.Errorf("%s: trusted_proxies[%d]: %q is neither an address nor a CIDR prefix (10.0.0.0/8, ::1)", path, i, p)
			}
			pfx = netip.PrefixFrom(a, a.BitLen())
		}
		if pfx.Addr().Is4In6() && pfx.Bits() >= 96 {
			// As the peer's address is compared: IPv4-mapped as IPv4.
			pfx = netip.PrefixFrom(pfx.Addr().Unmap(), pfx.Bits()-96)
		}
		if pfx.Bits() == 0 {
			// Every address a proxy: the first X-Forwarded-For entry,
			// which the client writes, would name it.
			return nil, fmt.Errorf("%s: trusted_proxies[%d]: %q trusts every address, so any client could name itself in X-Forwarded-For; list your proxies' addresses or networks", path, i, p)
		}
		c.trustedProxies = append(c.trustedProxies, pfx.Masked())
	}
	seenVirtual := map[string]bool{}
	for i := range c.VirtualServers {
		v := &c.VirtualServers[i]
		if err := v.Check(c.Upstreams); err != nil {
			return nil, fmt.Errorf("%s: virtual_servers[%d]: %w", path, i, err)
		}
		if seenVirtual[v.Name] {
			return nil, fmt.Errorf("%s: virtual_servers[%d]: a second virtual server named %q", path, i, v.Name)
		}
		seenVirtual[v.Name] = true
	}
	seenAgents := map[string]bool{}
	for i := range c.Agents {
		a := &c.Agents[i]
		a.URL = expand(a.URL)
		for k, v := range a.Headers {
			a.Headers[k] = expand(v)
		}
		if err := expanded(); err != nil {
			return nil, err
		}
		if err := a2a.ValidateAgent(*a); err != nil {
			return nil, fmt.Errorf("%s: agents[%d]: %w", path, i, err)
		}
		if seenAgents[a.Name] {
			return nil, fmt.Errorf("%s: agents[%d]: a second agent named %q; names are routes (/a2a/{name}) and must differ", path, i, a.Name)
		}
		seenAgents[a.Name] = true
	}
	refs = &c.upstreamEnv
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
		if o := u.OAuth; o != nil {
			o.TokenURL, o.ClientID, o.ClientSecret = expand(o.TokenURL), expand(o.ClientID), expand(o.ClientSecret)
			if err := expanded(); err != nil {
				return nil, err
			}
			if err := o.Validate(fmt.Sprintf("upstreams[%d].oauth", i)); err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			for k := range u.Headers {
				if strings.EqualFold(k, "Authorization") {
					return nil, fmt.Errorf("%s: upstreams[%d].headers: Authorization is set by upstreams[%d].oauth; remove one of them", path, i, i)
				}
			}
		}
		if u.URL == "" && u.Command == "" {
			return nil, fmt.Errorf("%s: upstreams[%d] (%s): set url (for an HTTP, SSE or WebSocket server) or command (for a stdio server)", path, i, u.Name)
		}
	}
	refs = &c.ownEnv
	c.AdminToken = expand(c.AdminToken)
	if c.AdminJWT != nil {
		c.AdminJWT.JWKSURL = expand(c.AdminJWT.JWKSURL)
	}
	if c.Auth != nil {
		c.Auth.APIKeys.File = expand(c.Auth.APIKeys.File)
		c.Auth.JWT.JWKSURL = expand(c.Auth.JWT.JWKSURL)
	}
	for k, v := range c.Telemetry.Headers {
		c.Telemetry.Headers[k] = expand(v) // the collector's API key
	}
	c.DataDir = expand(c.DataDir)
	if err := expanded(); err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	c.resolvePaths(dir)
	if err := c.checkLimits(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if _, err := c.RateLimits.rules(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := c.checkAuth(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := c.checkAdminJWT(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if c.PolicyFile != "" && !c.Policy.IsZero() {
		return nil, fmt.Errorf("%s: set policy or policy_file, not both", path)
	}
	if !c.Policy.IsZero() {
		if _, err := policy.Compile(b, path, policy.Options{}); err != nil {
			return nil, err
		}
	}
	return &c, nil
}

var varRef = regexp.MustCompile(`\$\{(?:[A-Za-z_][A-Za-z0-9_]*|file:[^}]+)\}`)

// maxSecretFile bounds a file read by ${file:PATH}.
const maxSecretFile = 64 << 10

// readSecretFile is the value of ${file:PATH}: the file's contents
// without a trailing newline, read once when the config is loaded (as
// ${VAR}), so a rotated file takes effect at the next start.
func readSecretFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("${file:%s}: %w; give a readable file holding the value", path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSecretFile+1))
	if err != nil {
		return "", fmt.Errorf("${file:%s}: %w", path, err)
	}
	if len(b) > maxSecretFile {
		return "", fmt.Errorf("${file:%s}: larger than %d bytes; a secret file holds one value", path, maxSecretFile)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

// headerName is an HTTP field name (RFC 9110 token).
var headerName = regexp.MustCompile("^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")

// merge validates the section and takes the old approval_timeout key.
func (a *approvalsConfig) merge(old time.Duration) error {
	switch {
	case old < 0 || a.Timeout < 0:
		return fmt.Errorf("approvals.timeout: negative; give how long a held call waits, such as 15m")
	case old != 0 && a.Timeout != 0 && old != a.Timeout:
		return fmt.Errorf("approval_timeout (%v) and approvals.timeout (%v) disagree; approval_timeout is the old name: keep only approvals.timeout", old, a.Timeout)
	case a.Timeout == 0:
		a.Timeout = old
	}
	return nil
}

// checkAdminJWT validates admin_jwt: a JWT section that names an admin
// role and an audience of its own.
func (c *config) checkAdminJWT() error {
	j := c.AdminJWT
	if j == nil {
		return nil
	}
	if err := j.ValidateAs("admin_jwt"); err != nil {
		return err
	}
	if len(j.RequiredClaims) == 0 && len(j.RequiredScopes) == 0 {
		return errors.New("admin_jwt: names no admin role, so any token of the issuer would administer; set required_claims (such as {roles: sluice-admin}) or required_scopes")
	}
	if c.Auth != nil {
		for _, a := range j.Audience {
			if slices.Contains(c.Auth.JWT.Audience, a) {
				return fmt.Errorf("admin_jwt.audience: %q is also an agent audience (auth.jwt.audience); give the admin API an audience of its own", a)
			}
		}
	}
	return nil
}

// resolvePaths makes the config's relative file paths absolute, relative
// to dir, the config file's (absolute) directory, rather than to wherever the process was
// started (a desktop client starts `sluice wrap` in a directory of its
// own). A stdio command is resolved only when it names a path (has a
// slash); a bare name is looked up in $PATH.
func (c *config) resolvePaths(dir string) {
	abs := func(p *string) {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
	abs(&c.PolicyFile)
	abs(&c.DataDir)
	abs(&c.Inventory.KeyFile)
	abs(&c.Classifier.APIKeyFile)
	if c.TLS != nil {
		abs(&c.TLS.CertFile)
		abs(&c.TLS.KeyFile)
		abs(&c.TLS.ClientCAFile)
	}
	if c.Auth != nil {
		abs(&c.Auth.APIKeys.File)
	}
	for i := range c.Upstreams {
		if u := &c.Upstreams[i]; strings.Contains(u.Command, "/") {
			abs(&u.Command)
		}
	}
}
