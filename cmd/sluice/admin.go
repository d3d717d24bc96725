package main

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/approval"
	"github.com/sluicehq/sluice/auth"
	"github.com/sluicehq/sluice/console"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/internal/throttle"
)

// adminTokenFile holds the admin token generated when admin_token is not
// set, in the data directory.
const adminTokenFile = "admin.token"

// adminGuard protects the admin listener. Every request must name an
// allowed Host and, from a browser, an allowed Origin (DNS rebinding);
// must carry the bearer token (except /metrics when the token was
// generated rather than configured, so a scraper set up without one keeps
// working); and a request that changes state must be JSON, which a
// cross-origin page cannot send without a CORS preflight the admin API
// never answers (CSRF).
type adminGuard struct {
	token       string
	jwt         *auth.JWTVerifier // admin_jwt; nil: the token only
	openMetrics bool
	// random: the token was generated (256 random bits), not chosen, so
	// nobody guesses it: an address throttled for wrong tokens may still
	// come in with it (an agent sending wrong tokens from the operator's
	// address, loopback, cannot lock the operator out). A chosen token
	// keeps the lockout, whatever its length: it may be guessable.
	random         bool
	hosts, origins []string
	// proxies are trusted_proxies: wrong tokens through one count
	// against the client it forwards for (throttle.GuesserBehind).
	proxies []netip.Prefix
	console http.Handler // /console/; nil: none
	// agentClaims name the claims agents' JWTs name them by
	// (agentClaims): a console operator whose admin JWT holds one of
	// them naming a held call's agent cannot answer it.
	agentClaims []string

	// Wrong bearer tokens per address in the current minute: the API
	// refuses an address after maxAdminFailures, as the console's sign-in
	// does, so a weak token cannot be guessed at speed through either.
	mu    sync.Mutex
	fails map[string]*adminFails
}

type adminFails struct {
	n     int
	since time.Time
}

const maxAdminFailures = 5

// throttled reports whether client, or the trusted proxy via it came
// through (throttle.Via; "" for none), has used up its wrong tokens, and
// otherwise counts one attempt against both; ok gives it back.
func (a *adminGuard) attempt(client, via string) (throttled bool, ok func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := time.Now()
	if a.fails == nil {
		a.fails = map[string]*adminFails{}
	}
	f := a.fail(client, maxAdminFailures, now)
	if f == nil {
		return true, nil
	}
	var pf *adminFails
	if via != "" {
		if pf = a.fail(via, maxAdminFailures*throttle.ProxyGuessers, now); pf == nil {
			f.n--
			return true, nil
		}
	}
	return false, func() {
		a.mu.Lock()
		f.n--
		if pf != nil {
			pf.n--
		}
		a.mu.Unlock()
	}
}

// fail counts a wrong token of key, a client or a proxy (a.mu held),
// and returns its count; nil, counting nothing, once it has had limit
// this minute.
func (a *adminGuard) fail(key string, limit int, now time.Time) *adminFails {
	key = throttle.Slot(a.fails, key, now, func(f *adminFails) time.Time { return f.since })
	f := a.fails[key]
	if f != nil && now.Sub(f.since) > time.Minute {
		f = nil
	}
	if f != nil && f.n >= limit {
		return nil
	}
	if f == nil {
		f = &adminFails{since: now}
		a.fails[key] = f
	}
	f.n++
	return f
}

// authorized reports whether r carries the admin token or, with
// admin_jwt, a JWT with the admin role; p is then the JWT's principal
// (nil for the admin token, which proves no one in particular).
func (a *adminGuard) authorized(r *http.Request, want []byte) (p *intercept.Principal, ok bool) {
	h := r.Header.Get("Authorization")
	if subtle.ConstantTimeCompare([]byte(h), want) == 1 {
		return nil, true
	}
	if a.jwt == nil || len(r.Header.Values("Authorization")) != 1 {
		return nil, false
	}
	tok, ok := strings.CutPrefix(h, "Bearer ")
	if !ok {
		return nil, false
	}
	return a.check(r.Context(), tok)
}

// check reports whether tok is the admin token or, with admin_jwt, a JWT
// with the admin role, whose principal p then is.
func (a *adminGuard) check(ctx context.Context, tok string) (p *intercept.Principal, ok bool) {
	if tok == "" || len(tok) > 8192 {
		return nil, false
	}
	if subtle.ConstantTimeCompare([]byte(tok), []byte(a.token)) == 1 {
		return nil, true
	}
	if a.jwt == nil {
		return nil, false
	}
	p, err := a.jwt.Authenticate(ctx, tok)
	if err != nil || p == nil {
		return nil, false
	}
	return p, true
}

// signIn checks a console sign-in: the admin token (who signs in is then
// only the name they give) or an admin JWT, whose principal is who signs
// in, whatever name is typed, for no longer than the JWT holds.
func (a *adminGuard) signIn(ctx context.Context, tok string) (console.Credential, bool) {
	p, ok := a.check(ctx, tok)
	if !ok || p == nil {
		return console.Credential{}, ok
	}
	return console.Credential{Subject: p.ID, Names: approval.Names(p, a.agentClaims...), Expires: p.Expires, Check: p.Check}, true
}

func (a *adminGuard) wrap(next http.Handler) http.Handler {
	want := []byte("Bearer " + a.token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case !hostAllowed(a.hosts, r.Host):
			adminError(w, http.StatusForbidden, "host "+r.Host+" is not allowed (see admin_allowed_hosts)")
			return
		case !originAllowed(a.origins, r.Header.Get("Origin")):
			adminError(w, http.StatusForbidden, "origin "+r.Header.Get("Origin")+" is not allowed (see admin_allowed_origins)")
			return
		case a.console != nil && strings.HasPrefix(r.URL.Path, "/console/"):
			// The console signs operators in itself (a session cookie) and
			// checks a CSRF token on every form.
			a.console.ServeHTTP(w, r)
			return
		}
		if !(a.openMetrics && r.URL.Path == "/metrics") {
			p, ok := a.admitted(w, r, want)
			if !ok {
				return
			}
			// An admin JWT's subject is who acts (an approval's decider),
			// whatever a body claims.
			r = r.WithContext(intercept.WithPrincipal(r.Context(), p))
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead && !approval.IsJSON(r) {
			adminError(w, http.StatusUnsupportedMediaType, "send JSON with Content-Type: application/json")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// admitted reports whether r carries the admin credential, answering for
// it when it does not: 401, or 429 once its address has sent too many
// wrong ones this minute. p is an admin JWT's principal (nil for the
// admin token).
func (a *adminGuard) admitted(w http.ResponseWriter, r *http.Request, want []byte) (p *intercept.Principal, admitted bool) {
	if r.Header.Get("Authorization") == "" {
		adminError(w, http.StatusUnauthorized, "missing or wrong bearer token")
		return nil, false // no credential: no guess to count
	}
	throttled, ok := a.attempt(throttle.GuesserBehind(r.RemoteAddr, r.Header.Values("X-Forwarded-For"), a.proxies), throttle.Via(r.RemoteAddr, a.proxies))
	if throttled && !a.random {
		w.Header().Set("Retry-After", "60")
		adminError(w, http.StatusTooManyRequests, "too many wrong bearer tokens from this address: wait a minute")
		return nil, false
	}
	if p, good := a.authorized(r, want); good {
		if ok != nil {
			ok()
		}
		return p, true
	}
	if throttled {
		// A token nobody guesses is still checked (an agent sending wrong
		// ones from the operator's address does not lock the operator
		// out); a wrong one is refused as throttled.
		w.Header().Set("Retry-After", "60")
		adminError(w, http.StatusTooManyRequests, "too many wrong bearer tokens from this address: wait a minute")
		return nil, false
	}
	adminError(w, http.StatusUnauthorized, "missing or wrong bearer token")
	return nil, false
}

func adminError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, "{\"error\":%q}\n", msg)
}

// adminHandler is the admin API of gv behind its guard, with the token
// from the config or, failing that, from (or newly generated into) the
// data directory.
func adminHandler(cfg *config, gv *governance, logger *slog.Logger) (http.Handler, error) {
	a := &adminGuard{token: cfg.AdminToken, hosts: cfg.AdminAllowedHosts, origins: cfg.AdminAllowedOrigins, proxies: cfg.trustedProxies}
	a.random = cfg.adminTokenRandom
	if a.token == "" {
		dir, err := cfg.dataDir()
		if err != nil {
			return nil, err
		}
		if a.token, err = loadOrCreateToken(filepath.Join(dir, adminTokenFile), logger); err != nil {
			return nil, fmt.Errorf("admin_token: %w", err)
		}
		// Random only if it is what loadOrCreateToken generates (32 bytes,
		// base64url): a token an operator wrote into the file is chosen.
		raw, derr := base64.RawURLEncoding.DecodeString(a.token)
		a.openMetrics, a.random = true, derr == nil && len(raw) == 32
	}
	if cfg.AdminJWT != nil {
		a.jwt = auth.NewJWTVerifier(*cfg.AdminJWT, nil, nil)
		a.agentClaims = agentClaims(cfg)
	}
	if host, _, _ := net.SplitHostPort(cfg.AdminListen); !isLoopback(host) && len(a.hosts) == 0 {
		logger.Warn("admin API listening beyond loopback with no admin_allowed_hosts: Host header checks are off (the token is still required)", "admin_listen", cfg.AdminListen)
		a.hosts = []string{"*"}
	}
	cons, err := newConsole(cfg, gv, a)
	if err != nil {
		return nil, err
	}
	a.console = cons
	return a.wrap(gv.admin()), nil
}

// newConsole builds the operator console over gv.
func newConsole(cfg *config, gv *governance, a *adminGuard) (http.Handler, error) {
	dir, err := cfg.dataDir()
	if err != nil {
		return nil, err
	}
	d := console.Deps{
		Approvals: gv.approvals, Inventory: gv.inv,
		SignIn:      a.signIn,
		RandomToken: a.random, TrustedProxies: a.proxies,
		PolicyFile:    cfg.PolicyFile,
		HistoryDir:    filepath.Join(dir, "policy-history"),
		KeepArguments: cfg.Audit.KeepArguments,
		TraceURL:      cfg.Telemetry.TraceURL,
	}
	if gv.rec != nil && gv.rec.store != nil {
		d.Events = gv.rec.store
		d.Record = gv.rec.append
		db := gv.rec.store.Path()
		d.Replay = func(ctx context.Context, draft []byte) (string, error) {
			f, err := os.CreateTemp("", "sluice-draft-*.yaml")
			if err != nil {
				return "", err
			}
			defer os.Remove(f.Name())
			if _, err := f.Write(draft); err != nil {
				f.Close()
				return "", err
			}
			f.Close()
			var out strings.Builder
			err = runReplay(ctx, []string{"--events", db, "--policy", f.Name()}, &out, io.Discard)
			return out.String(), err
		}
	}
	if gv.recommend != nil {
		d.Recs = gv.recommend
	}
	c, err := console.New(d)
	if err != nil {
		return nil, err
	}
	return c.Handler(), nil
}

// loadOrCreateToken reads the admin token from path or, the first time,
// generates one there (mode 0600) and prints it once.
func loadOrCreateToken(path string, logger *slog.Logger) (string, error) {
	if fi, err := os.Stat(path); err == nil && !ownFile(fi) {
		// In a shared data_dir another account could have planted it.
		return "", fmt.Errorf("%s belongs to another user: remove it or set admin_token", path)
	}
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		logger.Info("admin API token read from the data directory", "file", path)
		return strings.TrimSpace(string(b)), nil
	} else if err == nil {
		// Generating one would find the file in place, read it again as
		// empty, and so on without end.
		return "", fmt.Errorf("%s is empty: remove it for a new token, or write the admin token in it", path)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	var b [32]byte
	_, _ = rand.Read(b[:])
	tok := base64.RawURLEncoding.EncodeToString(b[:])
	// Written aside and linked into place: two processes starting on one
	// data directory (two `sluice wrap`s) agree on the first token, and
	// neither reads a half-written one.
	f, err := os.CreateTemp(filepath.Dir(path), adminTokenFile+".*")
	if err != nil {
		return "", err
	}
	defer os.Remove(f.Name())
	if _, err := f.WriteString(tok + "\n"); err != nil {
		f.Close()
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	if err := os.Link(f.Name(), path); errors.Is(err, fs.ErrExist) {
		return loadOrCreateToken(path, logger) // another process was first
	} else if err != nil {
		return "", err
	}
	logger.Warn("admin_token is not set: generated an admin API token, stored in the data directory; "+
		"`sluice approvals` and `sluice inventory` read it with --config (or pass --token / $SLUICE_ADMIN_TOKEN); "+
		"other clients send Authorization: Bearer <token>", "file", path, "token", tok)
	return tok, nil
}

func hostAllowed(allowed []string, hostport string) bool {
	h := hostport
	if hh, _, err := net.SplitHostPort(hostport); err == nil {
		h = hh
	}
	h = strings.Trim(h, "[]")
	return isLoopbackName(h) || slices.Contains(allowed, "*") ||
		slices.ContainsFunc(allowed, func(a string) bool { return strings.EqualFold(a, h) || strings.EqualFold(a, hostport) })
}

func originAllowed(allowed []string, o string) bool {
	if o == "" {
		return true // not a browser
	}
	if slices.Contains(allowed, "*") || slices.Contains(allowed, o) {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && isLoopbackName(u.Hostname())
}

func isLoopbackName(h string) bool {
	return isLoopback(h) || strings.HasSuffix(h, ".localhost")
}

// adminClient is what `sluice approvals` and `sluice inventory` need to
// reach the admin API: its address and token, from flags, the
// environment or the gateway's config.
type adminClient struct {
	admin, token, config *string
}

func adminFlags(fs *flag.FlagSet) *adminClient {
	return &adminClient{
		admin:  fs.String("admin", "", "admin API base URL (default: the config's admin_listen, else http://127.0.0.1:8081)"),
		token:  fs.String("token", "", "admin bearer token (default $SLUICE_ADMIN_TOKEN, else the config's admin_token, else the token the gateway generated in its data_dir)"),
		config: fs.String("config", "", "the gateway's config file, to find admin_listen and the token (default sluice.yaml if present)"),
	}
}

// resolve returns the admin API base URL and the token.
func (c *adminClient) resolve() (base, token string, err error) {
	base, token = *c.admin, *c.token
	if token == "" {
		token = os.Getenv("SLUICE_ADMIN_TOKEN")
	}
	path := *c.config
	if path == "" {
		if _, err := os.Stat("sluice.yaml"); err == nil {
			// Its admin_listen is where the token goes, perhaps the one
			// from this user's data directory: not for a file another
			// account (root aside) left in the directory the CLI runs in
			// (/tmp, a shared checkout).
			if fi, err := os.Lstat("sluice.yaml"); err == nil && !ownFile(fi) {
				if st, ok := fi.Sys().(*syscall.Stat_t); !ok || st.Uid != 0 {
					return "", "", errors.New("./sluice.yaml belongs to another user: pass --config to use it anyway, or --admin and --token")
				}
			}
			path = "sluice.yaml"
		}
	}
	var cfg *config
	if path != "" && (base == "" || token == "") {
		if cfg, err = loadConfig(path); err != nil {
			return "", "", err
		}
	} else if token == "" {
		cfg = &config{} // the default data directory
	}
	switch {
	case base == "":
		base = "http://127.0.0.1:8081"
		if cfg != nil && cfg.AdminListen != "" {
			base = "http://" + cfg.AdminListen
			if pickedPort(cfg.AdminListen) {
				dir, derr := cfg.dataDirPath()
				if derr != nil {
					return "", "", derr
				}
				addr, ferr := findAdminAddr(dir)
				if ferr != nil {
					return "", "", ferr
				}
				base = "http://" + addr
			}
		}
	case !strings.Contains(base, "://"):
		// host:port, as the gateway logs it.
		base = "http://" + base
	}
	if token == "" && cfg != nil {
		token = cfg.AdminToken
		if token == "" {
			if dir, derr := cfg.dataDirPath(); derr == nil {
				if b, rerr := os.ReadFile(filepath.Join(dir, adminTokenFile)); rerr == nil {
					token = strings.TrimSpace(string(b))
				}
			}
		}
	}
	return strings.TrimRight(base, "/"), token, nil
}

// agentClaims is the claim agents' JWTs name them by (auth.jwt.agent_claim)
// when it is not one approval.Names reads anyway: an admin JWT for the
// account an agent acts as names that agent by it too, and never answers
// that agent's approvals.
func agentClaims(cfg *config) []string {
	if cfg.Auth == nil || !cfg.Auth.Mode.Has(auth.ModeJWT) || cfg.Auth.JWT.AgentClaim == "" {
		return nil
	}
	return []string{cfg.Auth.JWT.AgentClaim}
}
