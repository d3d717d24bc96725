// Package console is the operator console: web pages on the admin
// listener over the audit events, held calls, inventories, policy
// recommendations and the policy. It is built into the binary (html/template
// and embed, one small script for the live feed, no CDN) and readable
// without JavaScript.
//
// An operator signs in with the admin token (or an admin JWT) and a name;
// the console keeps a session in an HttpOnly, SameSite=Strict cookie. Every
// form that changes something carries the session's CSRF token, and every
// such action is an audit event naming the operator.
//
// A signed-in session's pages live under a path of its own,
// /console/k/{key}/, and its cookie is scoped to that path. Browsers send
// a host's cookies to every port of it, so a cookie scoped to /console/
// reached any server on another port of the host that the operator's
// browser was sent to (an agent's web page on 127.0.0.1:9999 redirecting
// to 127.0.0.1:9999/console/), and with it the session could approve the
// agent's own held calls. A server that does not know the key is never sent
// the cookie.
package console

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/approval"
	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/internal/throttle"
	"github.com/sluicehq/sluice/inventory"
	"github.com/sluicehq/sluice/recommend"
	"github.com/sluicehq/sluice/telemetry"
)

//go:embed templates/*.html static/*
var files embed.FS

// Recommender is the recommendation engine as the console uses it.
type Recommender interface {
	List() ([]recommend.Record, error)
	Preview(id string) (recommend.Record, string, error)
	Approve(ctx context.Context, id, by string) (recommend.Record, string, error)
	Decline(ctx context.Context, id, by, reason string) (recommend.Record, error)
	Run(ctx context.Context) ([]recommend.Record, error)
}

// Deps is what the console shows and acts on; nil members hide their page.
type Deps struct {
	Events    *audit.Store
	Approvals *approval.Store
	Inventory *inventory.Inventory
	Recs      Recommender
	// SignIn checks a sign-in token: the admin token (a zero Credential)
	// or an admin JWT, whose subject then names the operator in place of
	// the name typed (proven, not claimed), and whose expiry and Check
	// bound the session.
	SignIn func(ctx context.Context, token string) (Credential, bool)
	// RandomToken says the admin token was generated at random, not
	// chosen, so nobody guesses it: an address throttled for wrong tokens
	// may still sign in with the right one (an agent sending wrong tokens
	// from the operator's address cannot lock the operator out). A chosen
	// token keeps the lockout: it may be guessable.
	RandomToken bool
	// TrustedProxies are the reverse proxies whose X-Forwarded-For names
	// the client a failed sign-in is counted against
	// (throttle.GuesserBehind); from anyone else it is the peer.
	TrustedProxies []netip.Prefix
	// Record appends an audit event (the console's own actions).
	Record func(telemetry.Event)
	// Replay re-decides the recorded calls under a draft policy and
	// describes what would change.
	Replay func(ctx context.Context, draft []byte) (string, error)
	// PolicyFile is the served policy's file ("" for an inline policy);
	// HistoryDir holds approved versions.
	PolicyFile, HistoryDir string
	// KeepArguments shows calls' (redacted) arguments; otherwise only
	// their hash.
	KeepArguments bool
	// TraceURL links a call's trace id ({trace_id} in it stands for the
	// id); empty shows the id alone.
	TraceURL string
	Now      func() time.Time
}

// Credential is what a sign-in token proved.
type Credential struct {
	// Subject names the operator when the token proves who it is (an
	// admin JWT's subject); "" for the shared admin token, where the
	// operator is the name typed.
	Subject string
	// Names are the other names the token gives its holder (the client
	// it was issued to: azp, client_id…; approval.Names): a held call of
	// an agent named by one of them is not the operator's to answer.
	Names []string
	// Expires is when the token stops holding (a JWT's exp): the session
	// ends then if that is sooner than its own lifetime. Zero: never.
	Expires time.Time
	// Check, if set, reports why the token no longer holds (its signing
	// key withdrawn, say), or nil. It is asked on every request of the
	// session, which ends once it fails.
	Check func() error
}

// Console serves /console/.
type Console struct {
	d    Deps
	tmpl map[string]*template.Template

	mu       sync.Mutex
	sessions map[string]*session
	failures map[string]*failures // client address -> recent failed sign-ins
}

// failures counts failed sign-ins from one address in the current minute.
type failures struct {
	n     int
	since time.Time
}

// maxFailures is how many failed sign-ins an address gets per minute
// before it is refused outright (429), which keeps a weak admin token from
// being guessed at speed.
const maxFailures = 5

type session struct {
	id         string // the cookie's value, its key in Console.sessions
	name, csrf string
	// key is the session's path segment (/console/k/{key}/), which the
	// cookie is scoped to.
	key     string
	expires time.Time
	check   func() error // the sign-in credential's Check; nil: none
	names   []string     // the sign-in credential's Names
}

// isAgent reports whether one of the names s's credential gives names
// agent, in any normal form (approval.SameAgent), as the admin API reads
// them.
func (s *session) isAgent(agent string) bool {
	return agent != "" && slices.ContainsFunc(s.names, func(n string) bool { return approval.SameAgent(n, agent) })
}

// base is the path under which s's pages are served.
func (s *session) base() string { return "/console/k/" + s.key }

const (
	cookieName = "sluice_console"
	sessionTTL = 12 * time.Hour
)

// New returns the console over d.
func New(d Deps) (*Console, error) {
	if d.Now == nil {
		d.Now = time.Now
	}
	c := &Console{d: d, tmpl: map[string]*template.Template{}, sessions: map[string]*session{}, failures: map[string]*failures{}}
	funcs := template.FuncMap{
		"ts":        func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05") },
		"pct":       func(f float64) string { return fmt.Sprintf("%.0f%%", 100*f) },
		"short":     func(s string) string { return shorten(s, 16) },
		"join":      strings.Join,
		"arguments": argumentsText,
		"name":      nameText,
		"list":      func(a ...string) []string { return a },
		"traceLink": func(id string) template.URL { return traceLink(d.TraceURL, id) },
		"q": func(f map[string]string) string {
			v := url.Values{}
			for k, x := range f {
				if x != "" {
					v.Set(k, x)
				}
			}
			return v.Encode()
		},
	}
	pages, err := fs.Glob(files, "templates/*.html")
	if err != nil {
		return nil, err
	}
	for _, p := range pages {
		name := strings.TrimSuffix(filepath.Base(p), ".html")
		if name == "layout" {
			continue
		}
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(files, "templates/layout.html", p)
		if err != nil {
			return nil, err
		}
		c.tmpl[name] = t
	}
	return c, nil
}

// traceLink is the trace's page: tmpl with {trace_id} replaced, when tmpl
// is an http(s) URL.
func traceLink(tmpl, id string) template.URL {
	u := strings.ReplaceAll(tmpl, "{trace_id}", url.PathEscape(id))
	if id == "" || tmpl == "" || !(strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://")) {
		return ""
	}
	return template.URL(u)
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func random() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Handler serves the console; mount it at /console/ on the admin
// listener, behind the Host and Origin checks but not the bearer token:
// the console signs its operators in itself.
func (c *Console) Handler() http.Handler {
	inner := http.NewServeMux()
	inner.HandleFunc("POST /console/logout", c.authed(c.logout))
	inner.HandleFunc("GET /console/{$}", c.authed(func(w http.ResponseWriter, r *http.Request, s *session) {
		http.Redirect(w, r, s.base()+"/feed", http.StatusSeeOther)
	}))
	inner.HandleFunc("GET /console/feed", c.authed(c.feed))
	inner.HandleFunc("GET /console/feed/stream", c.authed(c.feedStream))
	inner.HandleFunc("GET /console/calls/{txn}", c.authed(c.call))
	inner.HandleFunc("GET /console/agents", c.authed(c.agents))
	inner.HandleFunc("GET /console/approvals", c.authed(c.approvals))
	inner.HandleFunc("POST /console/approvals/{id}", c.authed(c.decideApproval))
	inner.HandleFunc("GET /console/inventory", c.authed(c.inventory))
	inner.HandleFunc("POST /console/inventory/{upstream}/approve", c.authed(c.approveTool))
	inner.HandleFunc("GET /console/recommendations", c.authed(c.recommendations))
	inner.HandleFunc("POST /console/recommendations", c.authed(c.runRecommendations))
	inner.HandleFunc("GET /console/recommendations/{id}", c.authed(c.recommendation))
	inner.HandleFunc("POST /console/recommendations/{id}/{action}", c.authed(c.decideRecommendation))
	inner.HandleFunc("GET /console/policy", c.authed(c.policy))
	inner.HandleFunc("POST /console/policy/replay", c.authed(c.replay))

	mux := http.NewServeMux()
	static, _ := fs.Sub(files, "static")
	mux.Handle("GET /console/static/", http.StripPrefix("/console/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /console/login", c.loginPage)
	mux.HandleFunc("POST /console/login", c.login)
	// A session's pages: the key in the path must be the session's.
	mux.HandleFunc("/console/k/{key}/", func(w http.ResponseWriter, r *http.Request) {
		key := r.PathValue("key")
		s := c.session(r)
		if s != nil && subtle.ConstantTimeCompare([]byte(key), []byte(s.key)) != 1 {
			s = nil
		}
		u := *r.URL
		u.Path = "/console" + strings.TrimPrefix(r.URL.Path, "/console/k/"+key)
		if u.RawPath != "" {
			u.RawPath = "/console" + strings.TrimPrefix(r.URL.RawPath, "/console/k/"+key)
		}
		r2 := r.WithContext(context.WithValue(r.Context(), sessionKey{}, s))
		r2.URL = &u
		inner.ServeHTTP(w, r2)
	})
	// The same pages without a session's key: sign in first.
	mux.Handle("/console/", inner)
	return securityHeaders(mux)
}

// sessionKey carries the session a request's key and cookie name to the
// console's pages (nil: none).
type sessionKey struct{}

func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin") // no-referrer would make forms send "Origin: null"
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// authed admits a request with a live session; a POST must also carry the
// session's CSRF token in the form.
func (c *Console) authed(next func(http.ResponseWriter, *http.Request, *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, _ := r.Context().Value(sessionKey{}).(*session)
		if s == nil {
			if r.Method == http.MethodGet && !strings.HasSuffix(r.URL.Path, "/stream") {
				http.Redirect(w, r, "/console/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			http.Error(w, "sign in first", http.StatusUnauthorized)
			return
		}
		if r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
			if err := r.ParseForm(); err != nil {
				http.Error(w, "bad form: "+err.Error(), http.StatusBadRequest)
				return
			}
			if subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(s.csrf)) != 1 {
				http.Error(w, "missing or wrong CSRF token: reload the page and try again", http.StatusForbidden)
				return
			}
		}
		next(w, r, s)
	}
}

func (c *Console) session(r *http.Request) *session {
	ck, err := r.Cookie(cookieName)
	if err != nil {
		return nil
	}
	c.mu.Lock()
	s := c.sessions[ck.Value]
	c.mu.Unlock()
	if s == nil || !c.holds(s) {
		c.mu.Lock()
		delete(c.sessions, ck.Value)
		c.mu.Unlock()
		return nil
	}
	return s
}

// holds reports whether session s may still be used: not signed out, not
// expired, and the credential it was opened with still holding (a session
// lasts no longer than an admin JWT's exp or its signing key).
func (c *Console) holds(s *session) bool {
	c.mu.Lock()
	in := c.sessions[s.id] == s
	c.mu.Unlock()
	return in && c.d.Now().Before(s.expires) && (s.check == nil || s.check() == nil)
}

func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, "login", nil, map[string]any{"Next": safeNext(r.URL.Query().Get("next"))})
}

// safeNext keeps a post-login redirect on the console, as a path below
// /console/ without any session's key, and without ?done=: that reports
// what the operator just did, and a link's words must not come out as
// that on the session's page once the operator signed in through it.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/console/") || strings.HasPrefix(next, "//") || strings.Contains(next, "\\") {
		return "/console/feed"
	}
	if rest, ok := strings.CutPrefix(next, "/console/k/"); ok {
		_, after, found := strings.Cut(rest, "/")
		if !found {
			return "/console/feed"
		}
		next = "/console/" + after
	}
	if path, query, ok := strings.Cut(next, "?"); ok {
		v, err := url.ParseQuery(query)
		if err != nil {
			return path
		}
		v.Del("done")
		if next = path; len(v) > 0 {
			next += "?" + v.Encode()
		}
	}
	return next
}

// fail counts a failed sign-in of key, a client or a proxy (c.mu held),
// unless it has had limit this minute: throttled, and nothing counted.
func (c *Console) fail(key string, limit int) (f *failures, throttled bool) {
	key = throttle.Slot(c.failures, key, c.d.Now(), func(f *failures) time.Time { return f.since })
	f = c.failures[key]
	if f != nil && c.d.Now().Sub(f.since) > time.Minute {
		delete(c.failures, key)
		f = nil
	}
	if f != nil && f.n >= limit {
		return f, true
	}
	if f == nil {
		f = &failures{since: c.d.Now()}
		c.failures[key] = f
	}
	f.n++
	return f, false
}

func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 1<<16)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	name := strings.TrimSpace(r.PostForm.Get("name"))
	token := strings.TrimSpace(r.PostForm.Get("token"))
	client := throttle.GuesserBehind(r.RemoteAddr, r.Header.Values("X-Forwarded-For"), c.d.TrustedProxies)
	// The attempt is counted before the token is checked, so guesses sent
	// at once cannot all pass the limit while the first is being checked;
	// a good one gives its count back. Through a trusted proxy it counts
	// against the proxy too (throttle.Via).
	c.mu.Lock()
	f, throttled := c.fail(client, maxFailures)
	var pf *failures
	if via := throttle.Via(r.RemoteAddr, c.d.TrustedProxies); via != "" && !throttled {
		if pf, throttled = c.fail(via, maxFailures*throttle.ProxyGuessers); throttled {
			f.n--
		}
	}
	c.mu.Unlock()
	tooMany := func() {
		w.Header().Set("Retry-After", "60")
		http.Error(w, "too many failed sign-ins from this address: wait a minute", http.StatusTooManyRequests)
	}
	if throttled && !c.d.RandomToken {
		tooMany()
		return
	}
	var cred Credential
	ok := false
	if c.d.SignIn != nil && name != "" && len(name) <= 100 {
		cred, ok = c.d.SignIn(r.Context(), token)
	}
	if ok && !throttled {
		c.mu.Lock()
		f.n--
		if pf != nil {
			pf.n--
		}
		c.mu.Unlock()
	}
	if !ok && throttled {
		tooMany()
		return
	}
	if !ok {
		// Anyone may try, with a name as long as the form: recorded bounded.
		c.event(telemetry.Event{Type: "sluice.console_login", Attrs: map[string]any{"operator": telemetry.BoundName(name), "ok": false, "client": throttle.Forwarded(r.RemoteAddr, r.Header.Values("X-Forwarded-For"), c.d.TrustedProxies)}})
		w.WriteHeader(http.StatusUnauthorized)
		c.render(w, r, "login", nil, map[string]any{"Next": safeNext(r.PostForm.Get("next")), "Error": "wrong token, or no name given"})
		return
	}
	method := "admin_token"
	if cred.Subject != "" {
		name, method = cred.Subject, "jwt"
	}
	id := random()
	c.mu.Lock()
	now := c.d.Now()
	for k, s := range c.sessions {
		if now.After(s.expires) {
			delete(c.sessions, k)
		}
	}
	s := &session{id: id, name: name, csrf: random(), key: random(), expires: now.Add(sessionTTL), check: cred.Check, names: cred.Names}
	if !cred.Expires.IsZero() && cred.Expires.Before(s.expires) {
		s.expires = cred.Expires
	}
	c.sessions[id] = s
	c.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: id, Path: s.base() + "/", HttpOnly: true, Secure: c.overTLS(r),
		SameSite: http.SameSiteStrictMode, MaxAge: max(int(s.expires.Sub(now)/time.Second), 1)})
	c.event(telemetry.Event{Type: "sluice.console_login", Attrs: map[string]any{"operator": name, "auth": method, "ok": true, "client": throttle.Forwarded(r.RemoteAddr, r.Header.Values("X-Forwarded-For"), c.d.TrustedProxies)}})
	http.Redirect(w, r, s.base()+strings.TrimPrefix(safeNext(r.PostForm.Get("next")), "/console"), http.StatusSeeOther)
}

// overTLS reports whether the browser reached the console over TLS: the
// gateway's own, or that of a trusted proxy saying so in
// X-Forwarded-Proto.
func (c *Console) overTLS(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil || !throttle.Trusted(c.d.TrustedProxies, ap.Addr()) {
		return false
	}
	// The browser's leg is the first a chain of proxies lists.
	proto, _, _ := strings.Cut(r.Header.Get("X-Forwarded-Proto"), ",")
	return strings.EqualFold(strings.TrimSpace(proto), "https")
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request, s *session) {
	if ck, err := r.Cookie(cookieName); err == nil {
		c.mu.Lock()
		delete(c.sessions, ck.Value)
		c.mu.Unlock()
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: s.base() + "/", MaxAge: -1, HttpOnly: true, Secure: c.overTLS(r), SameSite: http.SameSiteStrictMode})
	c.action(s, "logout", "", nil)
	http.Redirect(w, r, "/console/login", http.StatusSeeOther)
}

// event records a console action; by names the operator.
func (c *Console) event(e telemetry.Event) {
	if c.d.Record == nil {
		return
	}
	if e.Time.IsZero() {
		e.Time = c.d.Now()
	}
	c.d.Record(e)
}

func (c *Console) action(s *session, action, target string, attrs map[string]any) {
	if attrs == nil {
		attrs = map[string]any{}
	}
	attrs["operator"], attrs["action"], attrs["target"] = s.name, action, target
	c.event(telemetry.Event{Type: "sluice.console_action", Attrs: attrs})
}

type page struct {
	// Base is the path the session's pages are under (/console/k/{key}),
	// or /console without a session.
	Base       string
	Title, Nav string
	Operator   string
	CSRF       string
	Data       any
	Flash      string
	Error      string
}

func (c *Console) render(w http.ResponseWriter, r *http.Request, name string, s *session, data any) {
	t := c.tmpl[name]
	if t == nil {
		http.Error(w, "no page "+name, http.StatusInternalServerError)
		return
	}
	p := page{Base: "/console", Title: name, Nav: name, Data: data}
	if m, ok := data.(map[string]any); ok {
		if e, ok := m["Error"].(string); ok {
			p.Error = e
		}
	}
	if s != nil {
		p.Operator, p.CSRF, p.Base = s.name, s.csrf, s.base()
		// What the operator just did (done): only on a session's pages,
		// which a link from elsewhere cannot reach without the key.
		p.Flash = r.URL.Query().Get("done")
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, p); err != nil {
		http.Error(w, "rendering "+name+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(spellBidi(buf.Bytes()))
}

// --- the live feed -------------------------------------------------------

type feedRow struct {
	Seq                                            int64
	Time                                           time.Time
	TxnID, Agent, Upstream, Tool, Decision, Reason string
}

func rowOf(e telemetry.Event) feedRow {
	return feedRow{Seq: e.Seq, Time: e.Time, TxnID: e.TxnID, Agent: e.Agent, Upstream: e.Upstream, Tool: e.Tool, Decision: e.Decision, Reason: e.Reason}
}

// feedFilter reads the decisions' filter from r's query, each value as it
// is: names are an agent's to choose, and "alice " is not alice (the
// Agents page links each agent to its decisions by its exact name).
func feedFilter(r *http.Request) (audit.Filter, map[string]string) {
	q := r.URL.Query()
	f := map[string]string{}
	for _, k := range []string{"agent", "upstream", "tool", "decision", "reason"} {
		f[k] = q.Get(k)
	}
	return audit.Filter{Type: telemetry.TypePolicyEnforced, Agent: f["agent"], Upstream: f["upstream"], Tool: f["tool"], Decision: f["decision"]}, f
}

func (c *Console) feed(w http.ResponseWriter, r *http.Request, s *session) {
	f, shown := feedFilter(r)
	f.Limit = 100
	var rows []feedRow
	var err error
	if c.d.Events != nil {
		if shown["reason"] != "" {
			f.Limit = 0
		}
		var evs []telemetry.Event
		evs, err = c.latest(r.Context(), f, 100, func(e telemetry.Event) bool { return shown["reason"] == "" || e.Reason == shown["reason"] })
		for _, e := range evs {
			rows = append(rows, rowOf(e))
		}
	}
	data := map[string]any{"Rows": rows, "Filter": shown}
	if err != nil {
		data["Error"] = err.Error()
	}
	c.render(w, r, "feed", s, data)
}

// maxPageBytes bounds the events a page reads, by their stored size. An
// agent chooses much of what its events hold (a tool name, a client name,
// kept arguments, each as long as a request body): the Agents page read
// the newest 5,000 events whatever their size, and 5,000 calls with 4 MiB
// tool names had one view of it hold 20 GiB in the gateway.
const maxPageBytes = 32 << 20

// latest returns up to n of the newest events f selects that keep
// accepts.
func (c *Console) latest(ctx context.Context, f audit.Filter, n int, keep func(telemetry.Event) bool) ([]telemetry.Event, error) {
	if f.Limit == 0 {
		f.Limit = 50 * n // a filter the store cannot apply: look a little further back
	}
	f.MaxBytes = maxPageBytes
	evs, err := c.d.Events.Latest(ctx, f)
	out := evs[:0]
	for _, e := range evs {
		if keep == nil || keep(e) {
			out = append(out, e)
			if len(out) == n {
				break
			}
		}
	}
	return out, err
}

// feedStream sends each new decision the filter selects as an SSE event.
func (c *Console) feedStream(w http.ResponseWriter, r *http.Request, s *session) {
	if c.d.Events == nil {
		http.Error(w, "no audit store", http.StatusNotFound)
		return
	}
	f, shown := feedFilter(r)
	last, err := c.d.Events.LastSeq(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	f.AfterSeq = last
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	_ = c.d.Events.Tail(r.Context(), f, func(e telemetry.Event) error {
		if !c.holds(s) {
			return errSessionEnded // signed out, or its credential ended, since the stream opened
		}
		if shown["reason"] != "" && e.Reason != shown["reason"] {
			return nil
		}
		row := rowOf(e)
		var b strings.Builder
		b.WriteString(`{"seq":`)
		fmt.Fprintf(&b, "%d", row.Seq)
		for _, kv := range [][2]string{{"time", row.Time.UTC().Format("2006-01-02 15:04:05")}, {"txn_id", row.TxnID}, {"agent", nameText(row.Agent)},
			{"upstream", row.Upstream}, {"tool", nameText(row.Tool)}, {"decision", row.Decision}, {"reason", row.Reason}} {
			fmt.Fprintf(&b, ",%q:%s", kv[0], jsonString(spellBidiString(kv[1])))
		}
		b.WriteString("}")
		if _, err := fmt.Fprintf(w, "event: decision\ndata: %s\n\n", b.String()); err != nil {
			return err
		}
		return rc.Flush()
	})
}

var errSessionEnded = errors.New("console: the session ended")

func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == '<' || r == '>' || r == '&' || r == 0x2028 || r == 0x2029:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// --- one call ------------------------------------------------------------

type axisRow struct {
	Axis, Value, Source string
	Confidence          float64
	Default             bool
}

func (c *Console) call(w http.ResponseWriter, r *http.Request, s *session) {
	txn := r.PathValue("txn")
	data := map[string]any{"TxnID": txn}
	if c.d.Events == nil {
		c.render(w, r, "call", s, data)
		return
	}
	evs, err := c.d.Events.Query(r.Context(), audit.Filter{TxnID: txn, Limit: 100})
	if err != nil {
		data["Error"] = err.Error()
	}
	var others []telemetry.Event
	for _, e := range evs {
		switch e.Type {
		case telemetry.TypePolicyEnforced:
			var p telemetry.PolicyEnforcement
			if e.Decode(&p) == nil {
				if !c.d.KeepArguments {
					p.Arguments.Value = nil
				}
				data["Policy"] = p
			}
		case telemetry.TypeIntentClassified:
			var ic telemetry.IntentClassification
			if e.Decode(&ic) == nil {
				data["Intent"] = ic
				var axes []axisRow
				for name, a := range ic.Axes {
					axes = append(axes, axisRow{Axis: name, Value: a.Classified, Confidence: a.Confidence, Source: a.Source, Default: a.ConservativeDefaultApplied})
				}
				sort.Slice(axes, func(i, j int) bool { return axes[i].Axis < axes[j].Axis })
				data["Axes"] = axes
			}
		default:
			others = append(others, e)
		}
	}
	data["Others"] = others
	if len(evs) == 0 && err == nil {
		w.WriteHeader(http.StatusNotFound)
		data["Error"] = "no events with this txn_id"
	}
	c.render(w, r, "call", s, data)
}

// --- agents --------------------------------------------------------------

type agentRow struct {
	Agent         string
	Calls, Denied int
	Sessions      []string
	LastSeen      time.Time
	Sources       []sourceTouch
	// Classifiers are the session-scoped classifier identities (RFC-010
	// §7) of the agent's sessions, with their last lifecycle phase.
	Classifiers []classifierRow
}

type classifierRow struct {
	ID, Session, Phase string
	At                 time.Time
}

type sourceTouch struct {
	Class string
	Last  time.Time
}

func (c *Console) agents(w http.ResponseWriter, r *http.Request, s *session) {
	data := map[string]any{}
	if c.d.Events != nil {
		evs, err := c.d.Events.Latest(r.Context(), audit.Filter{Limit: 5000, MaxBytes: maxPageBytes})
		if err != nil {
			data["Error"] = err.Error()
		}
		byAgent := map[string]*agentRow{}
		sessions := map[string]map[string]bool{}
		sources := map[string]map[string]time.Time{}
		// Lifecycle events name the session, not the agent: join them by
		// session afterwards.
		agentOf := map[string]string{}
		type lifecycle struct {
			id, session, phase string
			at                 time.Time
		}
		var lives []lifecycle
		for _, e := range evs {
			if e.Type == telemetry.TypeClassifierLifecycle {
				id, _ := e.Attrs["classifier_id"].(string)
				phase, _ := e.Attrs["phase"].(string)
				lives = append(lives, lifecycle{id, e.Session, phase, e.Time})
			}
			if e.Agent == "" {
				continue
			}
			if e.Session != "" {
				agentOf[e.Session] = e.Agent
			}
			a := byAgent[e.Agent]
			if a == nil {
				a = &agentRow{Agent: e.Agent}
				byAgent[e.Agent] = a
				sessions[e.Agent] = map[string]bool{}
				sources[e.Agent] = map[string]time.Time{}
			}
			if e.Time.After(a.LastSeen) {
				a.LastSeen = e.Time
			}
			if e.Session != "" {
				sessions[e.Agent][e.Session] = true
			}
			switch e.Type {
			case telemetry.TypePolicyEnforced:
				a.Calls++
				if e.Decision == "deny" {
					a.Denied++
				}
				if e.Decision == "allow" {
					ev, _ := e.Attrs["evidence"].(map[string]any)
					classes, _ := ev["matched_tool_classes"].([]any)
					for _, x := range classes {
						cl, _ := x.(string)
						if strings.HasPrefix(cl, "source:") && e.Time.After(sources[e.Agent][cl]) {
							sources[e.Agent][cl] = e.Time
						}
					}
				}
			}
		}
		seenID := map[string]bool{}
		for _, l := range lives { // newest first: the first of an id is its last phase
			a := byAgent[agentOf[l.session]]
			if a == nil || seenID[l.id] || len(a.Classifiers) >= 20 {
				continue
			}
			seenID[l.id] = true
			a.Classifiers = append(a.Classifiers, classifierRow{ID: l.id, Session: l.session, Phase: l.phase, At: l.at})
		}
		var rows []agentRow
		for name, a := range byAgent {
			for sid := range sessions[name] {
				a.Sessions = append(a.Sessions, sid)
			}
			slices.Sort(a.Sessions)
			for cl, t := range sources[name] {
				a.Sources = append(a.Sources, sourceTouch{cl, t})
			}
			sort.Slice(a.Sources, func(i, j int) bool { return a.Sources[i].Class < a.Sources[j].Class })
			rows = append(rows, *a)
		}
		sort.Slice(rows, func(i, j int) bool { return rows[i].LastSeen.After(rows[j].LastSeen) })
		data["Agents"] = rows
		data["Window"] = len(evs)
	}
	c.render(w, r, "agents", s, data)
}

// --- approvals -----------------------------------------------------------

// maxShownArguments bounds the held calls' arguments and what else they
// send (or its members' names) the Approvals page shows, by their size as
// held: an agent chooses how many calls it has held (100 an agent, a
// tenth of the store's 10,000 a client address) and how large each is
// (max_body_bytes).
const maxShownArguments = 8 << 20

func (c *Console) approvals(w http.ResponseWriter, r *http.Request, s *session) {
	data := map[string]any{}
	if c.d.Approvals != nil {
		var pending []heldCall
		var done []approval.Request
		reqs, err := c.d.Approvals.Current()
		if err != nil {
			data["Error"] = "the approvals store did not answer; shown is what this replica last read, which another may have changed since: " + err.Error()
		}
		for _, q := range reqs {
			if q.Status != approval.Pending {
				// Names as the client gave them, as long as a request:
				// shown cut, as events record them.
				q.Upstream, q.Tool, q.Agent, q.DecidedBy = telemetry.BoundName(q.Upstream), telemetry.BoundName(q.Tool), telemetry.BoundName(q.Agent), telemetry.BoundName(q.DecidedBy)
				done = append(done, q)
				continue
			}
			// Its secrets redacted, as the audit log keeps them.
			pending = append(pending, heldCall{Request: c.d.Approvals.Shown(q)})
		}
		// Each owner's oldest call first, then each one's next, and so
		// on, while what they send fits in maxShownArguments: a flood of
		// large calls hides neither the calls held before it nor those
		// of anyone else held after it.
		shown := 0
		for _, i := range fairOrder(pending) {
			h := &pending[i]
			extra, size := h.Extra, len(h.Arguments)+len(h.Extra)
			if !c.d.KeepArguments {
				h.Arguments, h.Extra = nil, nil
			}
			// Its names are shown whole too, and a made-up tool's is as
			// long as a request.
			idents := len(h.Upstream) + len(h.Tool) + len(h.Agent)
			n := idents + len(h.Arguments) + len(h.Extra)
			if shown+n <= maxShownArguments {
				// As the page lays them out: nested deep, a few hundred
				// bytes take up to 64 KiB (argumentsText).
				n = idents + shownSize(h.Arguments) + shownSize(h.Extra)
			}
			names, namesSize, all := memberNames(extra, maxShownArguments-shown-n)
			if h.Extra == nil { // the names of its members are shown instead
				n += namesSize
			}
			if !all || shown+n > maxShownArguments {
				h.Unshown, h.Arguments, h.Extra = size+idents, nil, nil
				h.Upstream, h.Tool, h.Agent = telemetry.BoundName(h.Upstream), telemetry.BoundName(h.Tool), telemetry.BoundName(h.Agent)
				continue
			}
			h.ExtraNames = names
			shown += n
		}
		data["Pending"], data["Done"] = pending, done
		data["MaxShown"] = maxShownArguments >> 20
	}
	c.render(w, r, "approvals", s, data)
}

// fairOrder returns the indexes of pending (newest first) round by
// round: in each, the oldest call not yet taken of every owner that has
// one — the client address of unauthenticated agents, whose names are
// theirs to choose, else the agent — the smaller calls first, and of
// calls alike in size the owner's whose oldest call is older. Smaller
// first: two owners whose first calls, held before anyone else's, filled
// the page left every other agent's call decline-only
// (TestConsoleApprovalsPageFairToOthersTwoOwners).
func fairOrder(pending []heldCall) []int {
	var owners []string
	calls := map[string][]int{}
	for i := len(pending) - 1; i >= 0; i-- {
		o := "agent:" + pending[i].Agent
		if pending[i].Client != "" {
			o = "client:" + pending[i].Client
		}
		if _, ok := calls[o]; !ok {
			owners = append(owners, o)
		}
		calls[o] = append(calls[o], i)
	}
	size := func(i int) int {
		h := &pending[i]
		return len(h.Arguments) + len(h.Extra) + len(h.Upstream) + len(h.Tool) + len(h.Agent)
	}
	order := make([]int, 0, len(pending))
	for round := 0; len(owners) > 0; round++ {
		left, start := owners[:0], len(order)
		for _, o := range owners {
			order = append(order, calls[o][round])
			if round+1 < len(calls[o]) {
				left = append(left, o)
			}
		}
		slices.SortStableFunc(order[start:], func(a, b int) int { return cmp.Compare(size(a), size(b)) })
		owners = left
	}
	return order
}

// heldCall is a held call as the Approvals page shows it.
type heldCall struct {
	approval.Request
	// ExtraNames are the members of Extra: what the call sends the
	// upstream beside its arguments, bound to the approval as they are.
	// They are shown even when the values are not (audit.keep_arguments
	// off), so that an operator knows the call holds more than arguments.
	ExtraNames []string
	// Unshown, when the page does not show what the call sends (past
	// maxShownArguments), is its size as held: its arguments, Extra and
	// names (then shown cut).
	// The call can then only be declined here: nobody approves what they
	// were not shown.
	Unshown int
}

// memberNames returns the names of the members of a JSON object, in
// order, and the bytes they take shown, while that is at most limit; all
// says whether they are every name.
func memberNames(v jsontext.Value, limit int) (names []string, size int, all bool) {
	if v.Kind() != '{' {
		return nil, 0, true
	}
	dec := jsontext.NewDecoder(bytes.NewReader(v))
	if _, err := dec.ReadToken(); err != nil {
		return nil, 0, true
	}
	for dec.PeekKind() == '"' {
		tok, err := dec.ReadToken()
		if err != nil {
			return names, size, true
		}
		name := tok.String()
		if size += len(name) + 4; size > limit { // "name",
			return nil, size, false
		}
		names = append(names, name)
		if err := dec.SkipValue(); err != nil {
			return names, size, true
		}
	}
	return names, size, true
}

func (c *Console) decideApproval(w http.ResponseWriter, r *http.Request, s *session) {
	if c.d.Approvals == nil {
		http.Error(w, "no approvals", http.StatusNotFound)
		return
	}
	id, act := r.PathValue("id"), r.PostForm.Get("action")
	if act != "approve" && act != "decline" {
		http.Error(w, "action: approve or decline", http.StatusBadRequest)
		return
	}
	var q approval.Request
	var err error
	held, gerr := c.d.Approvals.Get(id)
	switch {
	case gerr == nil && s.isAgent(held.Agent):
		q, err = held, approval.ErrSelfApproval
	case gerr != nil && !errors.Is(gerr, approval.ErrNotFound):
		// Not decided unchecked: the store may answer the decision.
		err = gerr
	default:
		q, err = c.d.Approvals.Decide(id, act == "approve", s.name)
	}
	c.action(s, "approval_"+act, id, map[string]any{"txn_id": q.TxnID, "tool": q.Tool, "reason": r.PostForm.Get("reason"), "ok": err == nil})
	done(w, r, "/console/approvals", err, act+"d "+id)
}

// done redirects back to a page with what happened (post/redirect/get).
func done(w http.ResponseWriter, r *http.Request, to string, err error, what string) {
	if s, _ := r.Context().Value(sessionKey{}).(*session); s != nil {
		to = s.base() + strings.TrimPrefix(to, "/console")
	}
	if err != nil {
		status := http.StatusConflict
		switch {
		case errors.Is(err, approval.ErrSelfApproval) || errors.Is(err, recommend.ErrSelfDecision):
			status = http.StatusForbidden
		case errors.Is(err, approval.ErrUnavailable):
			status = http.StatusServiceUnavailable
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(status)
		fmt.Fprintf(w, "%s: %v\n", what, err)
		return
	}
	http.Redirect(w, r, to+"?done="+url.QueryEscape(what), http.StatusSeeOther)
}

// --- inventory -----------------------------------------------------------

type upstreamView struct {
	Name, Hash string
	Diff       *inventory.Diff
	DiffText   string
	Findings   map[string][]inventory.Finding
}

func (c *Console) inventory(w http.ResponseWriter, r *http.Request, s *session) {
	data := map[string]any{}
	if inv := c.d.Inventory; inv != nil {
		var ups []upstreamView
		for _, u := range inv.Upstreams() {
			v := upstreamView{Name: u, Hash: inv.Hash(u), Findings: map[string][]inventory.Finding{}}
			if d, err := inv.Diff(u); err == nil {
				v.Diff = d
				if len(d.Changes) > 0 {
					v.DiffText = d.String()
				}
			}
			if snap := inv.Snapshot(u, inventory.Observed); snap != nil {
				for _, t := range snap.Tools {
					if f := inv.RiskFactors(u, t.Name); len(f) > 0 {
						v.Findings[t.Name] = f
					}
				}
			}
			ups = append(ups, v)
		}
		data["Upstreams"] = ups
		data["Collisions"] = inv.Collisions()
	}
	c.render(w, r, "inventory", s, data)
}

func (c *Console) approveTool(w http.ResponseWriter, r *http.Request, s *session) {
	if c.d.Inventory == nil {
		http.Error(w, "no inventory", http.StatusNotFound)
		return
	}
	u, tool := r.PathValue("upstream"), r.PostForm.Get("tool")
	hash, shown := r.PostForm["hash"]
	if tool == "" || !shown {
		http.Error(w, "tool and hash are required: approve from the inventory page", http.StatusBadRequest)
		return
	}
	// Only the version the page showed: a tool that changed again since
	// (or a tool named "*", which would name every tool) is not approved
	// unseen.
	err := c.d.Inventory.ApproveHash(u, tool, hash[0])
	c.action(s, "inventory_approve", u+"/"+tool, map[string]any{"upstream": u, "tool": tool, "ok": err == nil})
	done(w, r, "/console/inventory", err, "approved "+u+"/"+tool)
}

// --- recommendations -----------------------------------------------------

func (c *Console) recommendations(w http.ResponseWriter, r *http.Request, s *session) {
	data := map[string]any{}
	if c.d.Recs != nil {
		recs, err := c.d.Recs.List()
		if err != nil {
			data["Error"] = err.Error()
		}
		data["Recs"] = recs
	}
	c.render(w, r, "recommendations", s, data)
}

func (c *Console) runRecommendations(w http.ResponseWriter, r *http.Request, s *session) {
	if c.d.Recs == nil {
		http.Error(w, "no recommendation engine", http.StatusNotFound)
		return
	}
	pending, err := c.d.Recs.Run(r.Context())
	c.action(s, "recommendations_run", "", map[string]any{"pending": len(pending), "ok": err == nil})
	done(w, r, "/console/recommendations", err, fmt.Sprintf("%d pending", len(pending)))
}

func (c *Console) recommendation(w http.ResponseWriter, r *http.Request, s *session) {
	if c.d.Recs == nil {
		http.NotFound(w, r)
		return
	}
	rec, diff, err := c.d.Recs.Preview(r.PathValue("id"))
	data := map[string]any{"Rec": rec, "Diff": diff, "Reasons": recommend.ReasonCodes}
	if err != nil {
		if rec.ID == "" {
			w.WriteHeader(http.StatusNotFound)
		}
		data["Error"] = err.Error()
	}
	c.render(w, r, "recommendation", s, data)
}

func (c *Console) decideRecommendation(w http.ResponseWriter, r *http.Request, s *session) {
	if c.d.Recs == nil {
		http.NotFound(w, r)
		return
	}
	id := r.PathValue("id")
	var err error
	if rec, _, _ := c.d.Recs.Preview(id); rec.Agent != "" && (approval.SameAgent(rec.Agent, s.name) || s.isAgent(rec.Agent)) {
		// The agent it is about, by the name typed or any its admin JWT
		// gives: never its own decider.
		err = fmt.Errorf("%s: %w", id, recommend.ErrSelfDecision)
		c.action(s, "recommendation_"+r.PathValue("action"), id, map[string]any{"ok": false})
		done(w, r, "/console/recommendations/"+url.PathEscape(id), err, r.PathValue("action")+"d "+id)
		return
	}
	switch act := r.PathValue("action"); act {
	case "approve":
		_, _, err = c.d.Recs.Approve(r.Context(), id, s.name)
	case "decline":
		_, err = c.d.Recs.Decline(r.Context(), id, s.name, r.PostForm.Get("reason"))
	default:
		http.Error(w, "action: approve or decline", http.StatusBadRequest)
		return
	}
	c.action(s, "recommendation_"+r.PathValue("action"), id, map[string]any{"reason": r.PostForm.Get("reason"), "ok": err == nil})
	done(w, r, "/console/recommendations/"+url.PathEscape(id), err, r.PathValue("action")+"d "+id)
}

// --- policy --------------------------------------------------------------

type historyRow struct {
	File   string
	Time   time.Time
	Signed bool
}

func (c *Console) policy(w http.ResponseWriter, r *http.Request, s *session) {
	data := map[string]any{"File": c.d.PolicyFile}
	if c.d.PolicyFile != "" {
		if b, err := os.ReadFile(c.d.PolicyFile); err == nil {
			data["Source"] = string(b)
		}
	}
	if c.d.Events != nil {
		if evs, err := c.d.Events.Latest(r.Context(), audit.Filter{Type: telemetry.TypePolicyEnforced, Limit: 1}); err == nil && len(evs) == 1 {
			var p telemetry.PolicyEnforcement
			if evs[0].Decode(&p) == nil {
				data["Version"] = p.PolicyVersion
			}
		}
	}
	if c.d.HistoryDir != "" {
		ents, _ := os.ReadDir(c.d.HistoryDir)
		var hist []historyRow
		for _, e := range ents {
			if !strings.HasSuffix(e.Name(), ".yaml") {
				continue
			}
			fi, _ := e.Info()
			_, serr := os.Stat(filepath.Join(c.d.HistoryDir, strings.TrimSuffix(e.Name(), ".yaml")+".sig"))
			hist = append(hist, historyRow{File: e.Name(), Time: fi.ModTime(), Signed: serr == nil})
		}
		sort.Slice(hist, func(i, j int) bool { return hist[i].File > hist[j].File })
		data["History"] = hist
	}
	c.render(w, r, "policy", s, data)
}

func (c *Console) replay(w http.ResponseWriter, r *http.Request, s *session) {
	draft := r.PostForm.Get("draft")
	data := map[string]any{"Draft": draft, "File": c.d.PolicyFile}
	if c.d.Replay == nil {
		data["Error"] = "replay needs the audit store"
	} else if strings.TrimSpace(draft) == "" {
		data["Error"] = "paste a policy to compare"
	} else {
		out, err := c.d.Replay(r.Context(), []byte(draft))
		if err != nil {
			data["Error"] = err.Error()
		}
		data["Result"] = out
	}
	c.action(s, "policy_replay", "", map[string]any{"bytes": len(draft)})
	c.render(w, r, "policy", s, data)
}
