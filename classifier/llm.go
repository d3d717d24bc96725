package classifier

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sony/gobreaker/v2"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/internal/h1"
)

// LLMOptions configures an LLM classifier. Every field's zero value means
// its documented default, except Provider, which must be set.
type LLMOptions struct {
	// Provider is the wire protocol: ProviderOpenAI, ProviderAnthropic or
	// ProviderGemini. Required.
	Provider Provider
	// BaseURL is the provider's endpoint, with or without the API version
	// segment ("/v1", Gemini "/v1beta"). Empty means the vendor's:
	// https://api.openai.com, https://api.anthropic.com,
	// https://generativelanguage.googleapis.com. OpenAI-compatible local
	// servers work with ProviderOpenAI: Ollama "http://127.0.0.1:11434",
	// vLLM "http://127.0.0.1:8000", llama.cpp server "http://127.0.0.1:8080".
	BaseURL string
	// Model is the provider's model name. Empty means the RFC-010 §8.2
	// recommendation: gpt-4o-mini, claude-haiku-4-5, gemini-2.5-flash.
	// Requests ask for temperature 0, which OpenAI's reasoning models
	// (o-series, gpt-5) refuse: use a chat model.
	Model string
	// APIKey authenticates to the provider; get it with LoadKey. Empty
	// sends none (local servers). It never appears in errors, logs or
	// String output, and New refuses to send it over plain http to a host
	// other than loopback.
	APIKey string
	// Timeout bounds one classification, from Classify to verdict. Zero
	// means 2s (RFC-010 §8.2). When it expires Classify returns the
	// fallback verdict (composite confidence 0).
	Timeout time.Duration
	// Profile selects the axes the model classifies, as Options.Profile:
	// ProfileDefault (action_type, boundary) or ProfileExtended (all
	// five). Zero means ProfileDefault.
	Profile Profile
	// Weights of each axis in the composite confidence, as
	// Options.Weights: all zero means RFC-010 §6.2's; only the active
	// axes count, normalised to sum to 1.
	Weights PerAxis
	// Floors are the per-axis confidences below which an axis takes its
	// conservative default (RFC-010 §5.3) whatever the model classified,
	// as Options.Floors: a zero field means 0.6, and 0.7 for
	// reversibility.
	Floors PerAxis
	// CacheSize is how many verdicts the cache keeps. Zero means 4096; a
	// negative value disables the cache.
	CacheSize int
	// Inventory returns the tool inventory snapshot embedded in the system
	// prompt. It is called once per classification, cache hits included,
	// and must be safe for concurrent use. The snapshot's Hash is part of
	// the cache key, so it must change whenever its tools or classes do; a
	// verdict made with a non-empty snapshot without a Hash is not cached.
	// Nil means an empty snapshot.
	Inventory func() InventorySnapshot
	// BreakerFailures is how many consecutive provider failures open the
	// circuit breaker. Zero means 5. A 400, 413 or 422 answer is about
	// the request, not the provider, and is not counted.
	BreakerFailures uint32
	// BreakerTimeout is how long the breaker stays open before it lets one
	// probe call through (half-open). Zero means 30s.
	BreakerTimeout time.Duration
	// OnBreakerStateChange, if set, is told of every breaker transition
	// (for metrics). It runs synchronously under the breaker's lock: it
	// must return quickly and must not call back into the LLM.
	OnBreakerStateChange func(from, to gobreaker.State)
	// HTTPClient sends the requests. Nil means a client of its own over
	// http.DefaultTransport. Its transport must honour request contexts,
	// which is how Timeout is enforced. Its CheckRedirect is replaced:
	// a redirect is never followed, it is a provider failure.
	HTTPClient *http.Client
	// Now is the clock for classified_at. Nil means time.Now.
	Now func() time.Time
	// ClassifierID returns a verdict's classifier_id for a session. Nil
	// means "urn:sluice:classifier:llm-<provider>:<session_id>".
	ClassifierID func(sessionID string) string
	// SecretKeys are more key fragments whose values are redacted before
	// a descriptor is sent, beside the built-in secret-looking ones, as
	// telemetry.Redactor's: sluice serve passes audit.secret_keys, so that
	// a value the record keeps out does not go to the provider either.
	SecretKeys []string
	// Budget bounds the requests sent to the provider a minute, per agent
	// and in all; zero fields mean their defaults (see LLMBudget).
	Budget LLMBudget
}

// String describes the options without the API key.
func (o LLMOptions) String() string {
	type plain LLMOptions // no methods: no recursion
	if o.APIKey != "" {
		o.APIKey = "[REDACTED]"
	}
	o.BaseURL = redactedURL(o.BaseURL)
	return fmt.Sprintf("%+v", plain(o))
}

// GoString is String: %#v must not print the key either.
func (o LLMOptions) GoString() string { return o.String() }

// Format prints String for every verb, so no verb prints the key.
func (o LLMOptions) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, o.String()) }

// LogValue logs the options without the API key.
func (o LLMOptions) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("provider", string(o.Provider)),
		slog.String("base_url", redactedURL(o.BaseURL)),
		slog.String("model", o.Model),
		slog.Bool("api_key_set", o.APIKey != ""),
		slog.Duration("timeout", o.Timeout),
		slog.String("profile", string(o.Profile)),
	)
}

// LLM defaults.
const (
	defaultLLMTimeout     = 2 * time.Second
	defaultLLMCacheSize   = 4096
	llmClassifierIDPrefix = "urn:sluice:classifier:llm-" // + provider + ":" + session id
)

// ErrInactive reports a call classified while the classifier is inactive
// because Probe found the provider unreachable. The verdict returned with
// it has composite confidence 0.
var ErrInactive = errors.New("LLM classifier inactive: provider unreachable")

// LLM classifies calls with an external model (RFC-010 §8): one request
// per descriptor not in its cache, holding a standard system prompt and
// the descriptor as the only user message. It is safe for concurrent use.
//
// It never blocks a call for longer than its timeout and never fails one:
// when the provider is slow, down, behind an open breaker or answers with
// anything but a valid verdict, or the call's agent has llmMaxPerAgent
// calls at the provider already, Classify returns a verdict with every
// active axis at its conservative default and composite confidence 0,
// which routes the call to escalation, together with an error for the log.
// A call over the budget (LLMOptions.Budget), its agent's or everyone's,
// is not sent either: it gets the same verdict, each axis with source
// SourceLLMOverBudget, and an *OverBudgetError. (The built-in rules'
// verdict would be no better: the agent that spent its own budget would
// choose a weaker verdict for its next call than an outage gives it.)
// The classifier never decides a call: what is done with an escalation
// is the policy's and the operator's (classifier.on_escalate).
type LLM struct {
	provider     Provider
	wire         providerWire
	conn         providerConn
	client       *http.Client
	timeout      time.Duration
	schema       llmSchema
	promptStatic string
	promptReply  string
	inventory    func() InventorySnapshot
	cache        *verdictCache
	breaker      *gobreaker.CircuitBreaker[string]
	now          func() time.Time
	classifierID func(sessionID string) string
	secretKeys   []string // LLMOptions.SecretKeys
	budget       *budget

	inactive atomic.Bool // set by a failed Probe, cleared by a good one
	// waitUntil is when (UnixNano, by now) the provider last asked, by
	// Retry-After, to be called again: no request is sent before.
	waitUntil atomic.Int64

	mu       sync.Mutex
	inflight map[string]int // requests at the provider, by agent (admit)
}

var _ Classifier = (*LLM)(nil)

// NewLLM checks opts and returns a classifier, active until a Probe fails.
func NewLLM(opts LLMOptions) (*LLM, error) {
	wire, ok := wireFor(opts.Provider)
	if !ok {
		return nil, fmt.Errorf("classifier: LLM provider %q: want %q, %q or %q",
			opts.Provider, ProviderOpenAI, ProviderAnthropic, ProviderGemini)
	}
	base, err := providerBaseURL(opts.Provider, opts.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("classifier: LLM %s: %w", opts.Provider, err)
	}
	if err := llmCheckKey(opts.APIKey, base); err != nil {
		return nil, fmt.Errorf("classifier: LLM %s: %w", opts.Provider, err)
	}
	// A provider's redirect is refused, not followed: Client.Do would
	// resend the descriptor, and every key header but Authorization
	// (x-api-key, x-goog-api-key), to wherever Location names.
	l := &LLM{
		provider:     opts.Provider,
		wire:         wire,
		conn:         providerConn{base: base, model: opts.Model, key: opts.APIKey},
		client:       h1.NoRedirects(opts.HTTPClient),
		timeout:      opts.Timeout,
		inventory:    opts.Inventory,
		now:          opts.Now,
		classifierID: opts.ClassifierID,
		secretKeys:   slices.Clone(opts.SecretKeys),
	}
	if l.budget, err = newBudget(opts.Budget); err != nil {
		return nil, fmt.Errorf("classifier: LLM %s: budget: %w", opts.Provider, err)
	}
	if l.conn.model == "" {
		l.conn.model = providerDefaults[opts.Provider].model
	}
	switch {
	case l.timeout < 0:
		return nil, fmt.Errorf("classifier: LLM %s: negative timeout %v", opts.Provider, opts.Timeout)
	case l.timeout == 0:
		l.timeout = defaultLLMTimeout
	}
	if l.now == nil {
		l.now = time.Now
	}
	if l.classifierID == nil {
		prefix := llmClassifierIDPrefix + string(opts.Provider) + ":"
		l.classifierID = func(session string) string { return prefix + session }
	}
	if l.schema, err = newLLMSchema(opts); err != nil {
		return nil, fmt.Errorf("classifier: LLM %s: %w", opts.Provider, err)
	}
	l.promptStatic = llmPromptStatic(l.schema.axes)
	l.promptReply = llmPromptReply(l.schema.axes)

	size := opts.CacheSize
	if size == 0 {
		size = defaultLLMCacheSize
	}
	if l.cache, err = newVerdictCache(size); err != nil {
		return nil, fmt.Errorf("classifier: LLM %s: cache: %w", opts.Provider, err)
	}
	failures, btimeout := opts.BreakerFailures, opts.BreakerTimeout
	if failures == 0 {
		failures = defaultBreakerFailures
	}
	switch {
	case btimeout < 0:
		return nil, fmt.Errorf("classifier: LLM %s: negative breaker timeout %v", opts.Provider, btimeout)
	case btimeout == 0:
		btimeout = defaultBreakerTimeout
	}
	l.breaker = newBreaker("llm-"+string(opts.Provider), failures, btimeout, opts.OnBreakerStateChange)
	return l, nil
}

func newLLMSchema(opts LLMOptions) (llmSchema, error) {
	scoring := Options{Profile: opts.Profile, Weights: opts.Weights, Floors: opts.Floors}
	if err := scoring.Validate(); err != nil {
		return llmSchema{}, err
	}
	if scoring.Profile == "" {
		scoring.Profile = ProfileDefault
	}
	return llmSchema{axes: scoring.Profile.Axes(), scoring: scoring}, nil
}

// llmCheckKey refuses keys that cannot be a header value and keys bound for
// plain http beyond this host, where anyone on the path could read them.
func llmCheckKey(key, base string) error {
	if key == "" {
		return nil
	}
	if strings.ContainsFunc(key, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return errors.New("API key contains spaces or control characters")
	}
	u, err := url.Parse(base)
	if err != nil {
		return err
	}
	if u.Scheme == "http" {
		host := u.Hostname()
		ip := net.ParseIP(host)
		if host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return fmt.Errorf("base URL %s is plain http to a non-loopback host: use https to send an API key", base)
		}
	}
	return nil
}

// String names the provider, model and endpoint; never the key.
func (l *LLM) String() string {
	key := "no API key"
	if l.conn.key != "" {
		key = "API key set"
	}
	return fmt.Sprintf("LLM classifier %s model %s at %s (%s)", l.provider, l.conn.model, redactedURL(l.conn.base), key)
}

// redactedURL is a base URL as it may be shown: a password in it (a proxy's
// credentials, https://user:token@proxy) replaced by xxxxx.
func redactedURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	return u.Redacted()
}

// Format prints String for every verb, so no verb prints the key.
func (l *LLM) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, l.String()) }

// BreakerState is the provider's circuit breaker state.
func (l *LLM) BreakerState() gobreaker.State { return l.breaker.State() }

// Active reports whether the classifier asks its provider; false after a
// failed Probe, until one succeeds.
func (l *LLM) Active() bool { return !l.inactive.Load() }

// Probe checks that the provider answers, with a request that costs no
// tokens (the model list, or Gemini's model), within the classification
// timeout. On failure it marks the classifier inactive — every Classify
// then returns composite confidence 0 without a request, which sends calls
// to escalation — and on success it marks it active again. Call it at
// start-up, and again to recover.
func (l *LLM) Probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	req, err := l.wire.probe(ctx, &l.conn)
	if err == nil {
		_, err = l.conn.do(l.client, req)
	}
	var se *providerStatusError
	if errors.As(err, &se) && se.RetryAfter > 0 {
		// Up, but over the account's rate: not inactive, only not to be
		// called before the time it names (Classify falls back until then).
		l.backOff(err)
		l.inactive.Store(false)
		return fmt.Errorf("classifier %s: probe: %w; the provider asked to be called again after %v (Retry-After)", l.name(), err, min(se.RetryAfter, llmMaxWait).Round(time.Second))
	}
	if err != nil {
		l.inactive.Store(true)
		return fmt.Errorf("classifier %s: probe: %w; classifier inactive", l.name(), err)
	}
	l.inactive.Store(false)
	return nil
}

func (l *LLM) name() string { return "llm-" + string(l.provider) }

// Classify classifies d; see LLM for what happens when it cannot.
func (l *LLM) Classify(ctx context.Context, d *intercept.ActionDescriptor) (Verdict, error) {
	if l.inactive.Load() {
		return l.stamp(l.schema.fallback(d), d), fmt.Errorf("classifier %s: %w", l.name(), ErrInactive)
	}
	// The verdict answers the system prompt too, which lists the
	// inventory: its hash is part of both keys, and the prompt of a miss is
	// built from this same snapshot.
	snap := l.snapshot()
	cache := l.cache
	if snap.Hash == "" && (len(snap.Tools) > 0 || len(snap.CapabilityClasses) > 0) {
		cache = nil // a prompt nothing identifies: never served again
	}
	var raw []byte
	if cache != nil {
		raw = cacheRaw(make([]byte, 0, 1024), d)
		raw = cacheRawInventory(raw, snap.Hash)
		if v, ok := cache.getRaw(raw); ok {
			return l.stamp(v, d), nil
		}
	}
	canon, key, err := cacheCanonical(d, l.secretKeys)
	if err != nil {
		return l.stamp(l.schema.fallback(d), d), fmt.Errorf("classifier %s: encoding the descriptor: %w", l.name(), err)
	}
	key = cacheKeyInventory(key, snap.Hash)
	if v, ok := cache.get(key, raw); ok {
		return l.stamp(v, d), nil
	}
	if len(canon) > llmMaxDescriptor {
		// Not sent: a provider would refuse it (a context overflow), and
		// counted against the breaker one agent's oversized calls would
		// turn the classifier off for every agent. The fallback verdict
		// escalates it as any unclassified call.
		return l.stamp(l.schema.fallback(d), d), fmt.Errorf("classifier %s: the call's descriptor is %d bytes, over the %d sent to a provider", l.name(), len(canon), llmMaxDescriptor)
	}

	if until := l.waitUntil.Load(); until != 0 && l.now().UnixNano() < until {
		// Not sent: a provider that asked to be left alone (a rate limit
		// of the operator's account) and was called on would keep the
		// account throttled, every call waiting out a refusal.
		return l.stamp(l.schema.fallback(d), d), fmt.Errorf("classifier %s: the provider asked to be called again after %s (Retry-After)", l.name(), time.Unix(0, until).UTC().Format(time.RFC3339))
	}
	owner := llmOwner(ctx, d)
	if !l.admit(owner) {
		// Not sent: the provider's rate limit is the key's, every agent's,
		// and one agent's flood of calls refused by it would open the
		// breaker for all. Its calls past its share escalate as any
		// unclassified call.
		return l.stamp(l.schema.fallback(d), d), fmt.Errorf("classifier %s: %s %d calls at the provider already", l.name(), ownerHas(owner, d), llmMaxPerAgent)
	}
	defer l.done(owner)
	// A call the open breaker refuses is sent nowhere and spends nothing.
	if scope, ok := l.spend(owner); !ok {
		// Not sent: every request is paid for, and an agent calling tools
		// in a loop would otherwise spend without bound.
		e := &OverBudgetError{Scope: scope, Who: ownerHas(owner, d), Limit: l.budget.perAgent}
		if scope == BudgetTotal {
			e.Limit = l.budget.total
		}
		return l.stamp(l.overBudget(d), d), fmt.Errorf("classifier %s: %w", l.name(), e)
	}

	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	var vocab []string
	text, err := l.breaker.Execute(func() (string, error) {
		var system string
		system, vocab = l.prompt(&snap, d.Upstream)
		text, err := l.complete(ctx, system, string(canon))
		switch {
		case err == nil:
			return text, nil
		case parent.Err() != nil:
			return "", fmt.Errorf("%w: %w", errCallerGone, parent.Err())
		case ctx.Err() != nil:
			return "", fmt.Errorf("no answer within %v: %w", l.timeout, context.DeadlineExceeded)
		}
		return "", err
	})
	if err != nil {
		l.backOff(err)
		return l.stamp(l.schema.fallback(d), d), fmt.Errorf("classifier %s: %w", l.name(), err)
	}
	v, err := l.schema.verdict(text, d, vocab)
	if err != nil {
		return l.stamp(l.schema.fallback(d), d), fmt.Errorf("classifier %s: %w", l.name(), err)
	}
	cache.add(key, raw, v)
	return l.stamp(v, d), nil
}

// backOff keeps requests from the provider for as long as err, its
// answer, asked (Retry-After), at most llmMaxWait.
func (l *LLM) backOff(err error) {
	var se *providerStatusError
	if !errors.As(err, &se) || se.RetryAfter <= 0 {
		return
	}
	until := l.now().Add(min(se.RetryAfter, llmMaxWait)).UnixNano()
	for {
		old := l.waitUntil.Load()
		if old >= until || l.waitUntil.CompareAndSwap(old, until) {
			return
		}
	}
}

// spend takes one request of owner's from the budget, unless the breaker
// is open (see budget.take).
func (l *LLM) spend(owner string) (scope string, ok bool) {
	if l.breaker.State() == gobreaker.StateOpen {
		return "", true
	}
	return l.budget.take(owner, l.now())
}

// ownerHas names owner (llmOwner) of d's call, with its verb: `the agent
// "x" has`, or the unauthenticated agents at an address have.
func ownerHas(owner string, d *intercept.ActionDescriptor) string {
	if client, ok := strings.CutPrefix(owner, "\x00client "); ok {
		return "the unauthenticated agents at " + client + " have"
	}
	return fmt.Sprintf("the agent %q has", d.Agent)
}

// overBudget is the verdict of a call over the budget: the conservative
// default on every axis, as for a call the provider did not answer,
// marked SourceLLMOverBudget.
func (l *LLM) overBudget(d *intercept.ActionDescriptor) Verdict {
	v := l.schema.fallback(d)
	for axis, av := range v.Axes.All() {
		av.Source = SourceLLMOverBudget
		v.Axes.Set(axis, av)
	}
	return v
}

// llmMaxWait bounds how long a provider's Retry-After keeps requests
// from it: a provider (or a proxy before it) asking for days would turn
// the classifier off for days.
const llmMaxWait = 5 * time.Minute

// llmMaxDescriptor bounds the descriptor sent to a provider, in bytes
// (about 16k tokens).
const llmMaxDescriptor = 64 << 10

// llmMaxPerAgent bounds the requests at the provider for one agent's
// calls at a time.
const llmMaxPerAgent = 8

// llmOwner is whom d's request counts against: its agent when
// authenticated; otherwise the address it came from
// (intercept.ClientAddrFrom, every loopback address one), since an
// unauthenticated agent is whatever name its client gives, a new one at
// each call if it likes.
func llmOwner(ctx context.Context, d *intercept.ActionDescriptor) string {
	if d.Principal != nil || intercept.PrincipalFrom(ctx) != nil {
		return d.Agent
	}
	addr := intercept.ClientAddrFrom(ctx)
	if a, err := netip.ParseAddr(addr); err == nil && a.Unmap().IsLoopback() {
		addr = "loopback"
	} else if p, err := netip.ParsePrefix(addr); err == nil && p.Contains(netip.IPv6Loopback()) {
		addr = "loopback"
	}
	return "\x00client " + addr
}

// admit counts a request of owner's (llmOwner) at the provider, unless it
// has llmMaxPerAgent there already; done uncounts it.
func (l *LLM) admit(owner string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inflight[owner] >= llmMaxPerAgent {
		return false
	}
	if l.inflight == nil {
		l.inflight = make(map[string]int)
	}
	l.inflight[owner]++
	return true
}

func (l *LLM) done(owner string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inflight[owner]--; l.inflight[owner] <= 0 {
		delete(l.inflight, owner)
	}
}

// snapshot is the current inventory snapshot.
func (l *LLM) snapshot() InventorySnapshot {
	if l.inventory == nil {
		return InventorySnapshot{}
	}
	return l.inventory()
}

// prompt builds the system prompt from an inventory snapshot for a call
// to upstream.
func (l *LLM) prompt(s *InventorySnapshot, upstream string) (string, []string) {
	vocab := llmVocabulary(s)
	return llmPrompt(l.promptStatic, l.promptReply, s, vocab, upstream), vocab
}

// complete asks the provider and returns the model's text.
func (l *LLM) complete(ctx context.Context, system, user string) (string, error) {
	req, err := l.wire.completion(ctx, &l.conn, system, user)
	if err != nil {
		return "", err
	}
	body, err := l.conn.do(l.client, req)
	if err != nil {
		return "", err
	}
	return l.wire.text(body)
}

// stamp fills in what belongs to this call rather than to the
// classification: the session, the session-scoped classifier id and the
// time. Cached verdicts get fresh ones on every hit.
func (l *LLM) stamp(v Verdict, d *intercept.ActionDescriptor) Verdict {
	v.SessionID = d.SessionID
	v.ToolName = d.ToolName
	v.ClassifierID = l.classifierID(d.SessionID)
	v.ClassifiedAt = l.now().Unix()
	return v
}

// LoadKey reads an API key from the environment variable env or from file
// (trimmed of surrounding white space), whichever is named; naming both is
// an error, naming neither returns "" (for local servers that need none).
// Errors name the variable or file, never the content.
func LoadKey(env, file string) (string, error) {
	var key string
	switch {
	case env != "" && file != "":
		return "", errors.New("classifier: API key: name an environment variable or a file, not both")
	case env != "":
		key = strings.TrimSpace(os.Getenv(env))
		if key == "" {
			return "", fmt.Errorf("classifier: API key: environment variable %s is unset or empty", env)
		}
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("classifier: API key: %w", err)
		}
		key = strings.TrimSpace(string(b))
		if key == "" {
			return "", fmt.Errorf("classifier: API key: file %s is empty", file)
		}
		if strings.ContainsAny(key, "\r\n") {
			return "", fmt.Errorf("classifier: API key: file %s holds more than one line", file)
		}
	}
	return key, nil
}
