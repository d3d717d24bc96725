// Package a2a is Sluice's A2A gateway: it serves configured A2A agents at
// /a2a/{name}, rewrites their agent cards to point at the gateway, and
// relays JSON-RPC requests of A2A v0.3 and v1.0, deciding every message to
// an agent with the same decision point as MCP tool calls.
//
// A message to an agent is an action: its descriptor names the upstream
// "a2a:{agent}" and the tool by the skill the message asks for (metadata
// "skillId" or "skill"), or "send" when it names none; so policy writes
// `a2a:research/send` or `a2a:research/summarize` where it writes
// `github/create_issue` for MCP, and route rules see an MCP read and a
// handoff to an agent as one flow. The parameters are the message's text,
// data and file parts (the text scanned like any argument). Every other
// request to the agent that carries bytes of the caller's choosing (a
// tasks/get with historyLength, a push config, a ListTasks filter) is
// decided as that agent's "send"; only a plain one, naming the caller's
// task and nothing else, is sent undecided, re-encoded by the gateway
// (followup.go).
//
// A denial reaches the client as RFC-0002 says for the call's result mode:
// a soft deny is a completed response whose task is in state rejected,
// its status message carrying the reason as text and the envelope as a
// data part; a hard deny is a JSON-RPC error whose data is the envelope,
// with code -32090 (-32091 for a hold): MCP's -32001 means TaskNotFound
// in A2A.
//
// Tasks belong to the principal that created them: another principal's
// get, cancel, subscribe or push configuration on that id is answered
// "task not found", and a list shows each principal its own tasks.
// Conversations (contextId) belong to the principal they were started
// for, and a context the gateway does not know (another's, or one it
// forgot) is refused: the agent may still keep its history. File parts
// may name only http(s) URIs of public hosts unless the agent's
// AllowFileURIs says otherwise (fileuri.go).
//
// Push notifications go through the gateway with Options.PushRelay: the
// agent is given a relay URL of the gateway's for each push config, and
// the gateway delivers each push to the caller's URL while the caller's
// credential holds, connecting to no address in its own network
// (pushrelay.go). Without the relay they go from the agent straight to
// the caller's URL, which the gateway could not stop once the caller's
// credential stops holding: a caller authenticated with a credential that
// can (an API key, a JWT, a certificate) may then not register a push
// config, and polls or subscribes instead (push.go).
package a2a

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/sluicehq/sluice/gateway/transport"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/internal/h1"
	"github.com/sluicehq/sluice/telemetry"
)

// Agent is one A2A upstream.
type Agent struct {
	// Name is the route: /a2a/{Name}. Letters, digits, '-', '_', '.'.
	Name string `yaml:"name"`
	// URL is the agent's base URL; its card is fetched from
	// URL/.well-known/agent-card.json (or the legacy agent.json).
	URL string `yaml:"url"`
	// Headers are sent with every request to the agent (credentials).
	Headers map[string]string `yaml:"headers"`
	// CardKeys is a JWK set (a file, or an http(s) URL) whose keys sign
	// the agent's card. Empty: the JWKS a signature's jku names, only on
	// the agent's own origin.
	CardKeys string `yaml:"card_keys"`
	// RequireSignedCard refuses a card without signatures.
	RequireSignedCard bool `yaml:"require_signed_card"`
	// AllowFileURIs are the file-part URIs a message may send the agent
	// to fetch beyond http(s) URIs of public hosts: schemes ("gs:",
	// "data:"), host names ("files.example.com", "*.example.com"), IP
	// addresses and CIDR prefixes. Empty: a URI naming a loopback,
	// private, link-local or internal host, or another scheme (file:), is
	// refused.
	AllowFileURIs []string `yaml:"allow_file_uris"`
	// AllowPushAddresses are the addresses (IPs and CIDR prefixes) in the
	// gateway's network that the push relay (Options.PushRelay) may
	// deliver this agent's pushes to, and that a push config's URL may
	// name. Empty: loopback, private, link-local and metadata addresses
	// are refused, when the config is set and again when a push is
	// delivered.
	AllowPushAddresses []string `yaml:"allow_push_addresses"`
}

// Options configure a Gateway. The zero value of each field is a
// documented default.
type Options struct {
	Agents []Agent
	// Client reaches the agents; nil is a client keeping up to 256 idle
	// connections per agent.
	Client *http.Client
	// CardTTL is how long a fetched card is served before it is fetched
	// again (zero: 5m).
	CardTTL time.Duration
	// MaxBody bounds a request (zero: 4 MiB) and a non-streaming answer
	// (8× that).
	MaxBody int64
	// MaxPart bounds the decoded size of one file part (zero: 1 MiB).
	MaxPart int64
	// TrustedProxies may set X-Forwarded-Proto and X-Forwarded-Host, which
	// the rewritten card's URLs then use; from anyone else they are
	// ignored.
	TrustedProxies []netip.Prefix
	// HostAllowed, if set, says which hosts a trusted proxy's
	// X-Forwarded-Host may name (the gateway's allowed_hosts); another is
	// ignored. Nil takes any.
	HostAllowed func(hostport string) bool
	// PublicURL, if set, is the gateway's own URL as agents reach it
	// (scheme and host, no path): served cards name it whatever the
	// request's Host or forwarding headers say, so a card is never
	// signed for a host a client made up.
	PublicURL string
	// CredentialsLapse says callers authenticate with credentials that
	// can stop holding (sluice serve's auth:), whose push configs are
	// refused (push.go) unless PushRelay: the served cards then say so,
	// with capabilities.pushNotifications false, so that a client does
	// not plan on pushes it cannot register.
	CredentialsLapse bool
	// PushRelay relays push notifications through the gateway
	// (pushrelay.go): the agent is given the gateway's URL and token for
	// each push config, and the gateway delivers each push to the
	// caller's URL while the caller's credential holds. It needs
	// PublicURL, which the agent POSTs to. False: with CredentialsLapse
	// push configs are refused; without, they reach the agent as sent.
	PushRelay bool
	// PushTimeout bounds one delivery of a relayed push, connecting
	// included (zero: 10s).
	PushTimeout time.Duration
	// PushDeliveries bounds the relayed pushes delivered at once (zero:
	// 64), a quarter of them (at least one) to one principal's URLs; past
	// either the agent is answered 503.
	PushDeliveries int
	// MaxPushRelays bounds the push configs relayed (zero: 10,000); one
	// principal holds at most a tenth, its oldest ending first; when they
	// are full, the principal holding the most gives up its oldest to one
	// holding fewer.
	MaxPushRelays int
	// PushRelayTTL ends a relay unused this long (zero: 24h); one also
	// ends with its task's final state, its config's deletion, or its
	// caller's credential.
	PushRelayTTL time.Duration
	// OnPushRefused, if set, hears of every push for a relay the gateway
	// holds that it did not deliver for its own reasons (a wrong token, a
	// lapsed credential, another task); not of one for a relay it does not
	// hold (anyone may POST those, unauthenticated).
	OnPushRefused func(agent, principal, reason string)
	// Relays, if set (with PushRelay), keeps each relay's record where
	// every replica sees it (pushshare.go), sealed with RelayKeys: any
	// replica delivers the agent's pushes to any relay, and relays outlive
	// a restart. Nil: a relay lives in the process that registered it.
	Relays RelayStore
	// RelayKeys seal the records in Relays (AES-256-GCM, 32 bytes each):
	// the first seals, all open. Required with Relays.
	RelayKeys [][]byte
	// RecheckKey, if set, reports why the API key with this id no longer
	// holds (revoked, expired, gone from the key file), or nil: how a
	// replica that did not take a relay's registration checks the
	// caller's key. Without it such a relay's pushes are refused (410).
	RecheckKey func(keyID string) error
	// RecheckJWTKey, if set, reports why the JWT signing key ref names
	// (intercept.Principal.SigningKey) is no longer published by the
	// issuer, or nil; an error wrapping intercept.ErrUncheckable if the
	// key set cannot be fetched now. Without it the pushes of a relay
	// registered with a JWT through another replica are refused (410).
	RecheckJWTKey func(ref string) error
	// RecheckAgent, if set, reports why a token or certificate may no
	// longer act as agent (an API key is now issued for the name:
	// auth.Authenticator.AgentNameHolds), or nil; an error wrapping
	// intercept.ErrUncheckable if that cannot be told now. A replica asks
	// it of a relay registered with a JWT or a certificate through
	// another, as the Principal's Check asks it on that one. Unset, the
	// name is not asked (no API keys to take it).
	RecheckAgent func(agent string) error
	// AllowPrivatePushURLs lets push notification URLs name loopback,
	// private and link-local addresses (refused by default: an agent must
	// not make an upstream call into the gateway's network).
	AllowPrivatePushURLs bool
	// AllowUnknownMethods forwards methods that are neither v0.3 nor v1.0
	// A2A methods, each decided as a message of the caller's to the agent
	// would be (followup.go), the tasks and conversations its params name
	// at any depth the caller's, its answer cut to the caller's tasks
	// (extension.go); refused by default.
	AllowUnknownMethods bool
	// MaxTasks bounds the task ownership table, and apart from it the
	// conversation (contextId) table (zero: 100,000 each); the oldest are
	// forgotten first, and then answer "task not found" ("context not
	// found").
	MaxTasks int
	// Tasks, if set, shares task owners with the other replicas (a task
	// created through one is the same principal's through any other).
	Tasks TaskStore
	// AgentHeader, if set, is a header naming the calling agent when the
	// request carries no authenticated principal (gateway.Options'
	// AgentHeader); an authenticated principal always wins.
	AgentHeader string
	// AgentHeaderRequired refuses a request without AgentHeader and no
	// authenticated principal (gateway.Options' AgentHeaderRequired).
	// Either way a request naming the agent twice is refused: a proxy
	// that names the agent by adding its header after the client's would
	// otherwise be read as the client says.
	AgentHeaderRequired bool
	Logger              *slog.Logger
	// OnCardRefused, if set, hears of every upstream card refused.
	OnCardRefused func(agent, reason string)
	// SigningKey signs the cards the gateway serves (their rewritten URLs
	// break the upstream's signatures); its public key is served at
	// /a2a/.well-known/jwks.json. Nil: cards are served unsigned.
	SigningKey ed25519.PrivateKey
}

// Gateway serves the configured agents. Create it with New.
type Gateway struct {
	opts   Options
	ic     *intercept.Interceptor
	agents map[string]*agent
	tasks  *owners
	log    *slog.Logger
	signer *signer  // signs served cards; nil: served unsigned
	keys   keyCache // agents' JWK sets
	// calls is opts.Client following no redirects, for what goes to an
	// agent: messages and card fetches carry the operator's headers, and
	// were decided about for the configured agent (h1.NoRedirects).
	calls *http.Client
	// pushes are the relayed push configs (PushRelay); delivering
	// bounds the deliveries at once.
	pushes     *pushRelays
	delivering *deliveries
	shared     *sharedRelays  // Options.Relays; nil: relays in this process only
	unanswered refusalSampler // pushes refused as the shared store did not answer
}

// New returns a gateway deciding with ic.
func New(opts Options, ic *intercept.Interceptor) (*Gateway, error) {
	if opts.Client == nil {
		// As the MCP routes' client: enough idle connections per agent
		// that concurrent calls do not open a connection each.
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConns, t.MaxIdleConnsPerHost = 1024, 256
		// Plain-HTTP agents are served on the caller's goroutine
		// (internal/h1); TLS and proxied agents by t.
		opts.Client = &http.Client{Transport: &h1.Transport{Fallback: t, Proxy: t.Proxy, Dial: t.DialContext, MaxIdlePerHost: 256}}
	}
	if opts.CardTTL <= 0 {
		opts.CardTTL = 5 * time.Minute
	}
	if opts.MaxBody <= 0 {
		opts.MaxBody = 4 << 20
	}
	if opts.MaxPart <= 0 {
		opts.MaxPart = 1 << 20
	}
	if opts.MaxTasks <= 0 {
		opts.MaxTasks = 100_000
	}
	if opts.PushTimeout <= 0 {
		opts.PushTimeout = 10 * time.Second
	}
	if opts.PushDeliveries <= 0 {
		opts.PushDeliveries = 64
	}
	if opts.MaxPushRelays <= 0 {
		opts.MaxPushRelays = 10_000
	}
	if opts.PushRelayTTL <= 0 {
		opts.PushRelayTTL = 24 * time.Hour
	}
	if opts.PushRelay && opts.PublicURL == "" {
		return nil, errors.New("push relay: set public_url to the URL agents reach the gateway at (https://gw.example.com): agents POST their push notifications there")
	}
	if opts.PublicURL != "" {
		u, err := url.Parse(opts.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || strings.Trim(u.Path, "/") != "" {
			return nil, fmt.Errorf("public_url %q: want the gateway's http(s)://host[:port], without a path", opts.PublicURL)
		}
		opts.PublicURL = u.Scheme + "://" + u.Host
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	g := &Gateway{opts: opts, ic: ic, calls: h1.NoRedirects(opts.Client), agents: map[string]*agent{}, tasks: newOwners(opts.MaxTasks, opts.Tasks, log), log: log,
		signer: newSigner(opts.SigningKey), keys: keyCache{sets: map[string]keyEntry{}},
		pushes: newPushRelays(opts.MaxPushRelays, opts.PushRelayTTL), delivering: newDeliveries(opts.PushDeliveries)}
	if opts.Relays != nil && opts.PushRelay {
		s, err := newSharedRelays(opts.Relays, opts.RelayKeys, opts.PushRelayTTL)
		if err != nil {
			return nil, err
		}
		s.log = log.Warn
		g.shared, g.pushes.keepEnded = s, true
	}
	for i, a := range opts.Agents {
		if err := ValidateAgent(a); err != nil {
			return nil, fmt.Errorf("agents[%d]: %w", i, err)
		}
		if g.agents[a.Name] != nil {
			return nil, fmt.Errorf("agents[%d]: a second agent named %q", i, a.Name)
		}
		u, _ := url.Parse(a.URL)
		files, _ := compileFileURIs(a.AllowFileURIs) // ValidateAgent compiled it
		pushTo, _ := compileAddresses(a.AllowPushAddresses)
		if opts.AllowPrivatePushURLs {
			pushTo = []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")}
		}
		g.agents[a.Name] = &agent{Agent: a, base: u, target: target(u), shown: shownURL(u), files: files, pushTo: pushTo, pushes: pushClient(pushTo, opts.PushTimeout)}
	}
	return g, nil
}

// target is u without userinfo, query and fragment ([agent].target).
func target(u *url.URL) string {
	t := *u
	t.User, t.RawQuery, t.ForceQuery, t.Fragment, t.RawFragment = nil, "", false, "", ""
	return t.String()
}

// shownURL is what an error a client reads says of the agent's URL u:
// its scheme and host, and "/…" for a path, which may hold a key too.
func shownURL(u *url.URL) string {
	out := (&url.URL{Scheme: u.Scheme, Host: u.Host}).String()
	if u.Path != "" && u.Path != "/" {
		out += "/…"
	}
	return out
}

// ValidateAgent checks one agent's configuration.
func ValidateAgent(a Agent) error {
	if a.Name == "" || strings.Trim(a.Name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") != "" {
		return fmt.Errorf("name %q: use letters, digits, '-', '_' and '.'", a.Name)
	}
	u, err := url.Parse(a.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("agent %q: url %q is not an http(s) URL", a.Name, a.URL)
	}
	if _, err := compileFileURIs(a.AllowFileURIs); err != nil {
		return fmt.Errorf("agent %q: %w", a.Name, err)
	}
	if _, err := compileAddresses(a.AllowPushAddresses); err != nil {
		return fmt.Errorf("agent %q: %w", a.Name, err)
	}
	return nil
}

// Close stops what the gateway does on its own: the retries of removals
// a shared relay store did not take (Options.Relays), tried once more
// now, what is left logged. The handler may still be used; removals that
// fail from then on are left to the records' TTL.
func (g *Gateway) Close() {
	if g.shared != nil {
		g.shared.close()
	}
}

// Handler serves /a2a/{name} (JSON-RPC) and the agents' cards.
func (g *Gateway) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /a2a/.well-known/jwks.json", g.serveJWKS)
	mux.HandleFunc("GET /a2a/{name}/.well-known/agent-card.json", g.serveCard)
	mux.HandleFunc("GET /a2a/{name}/.well-known/agent.json", g.serveCard)
	mux.HandleFunc("POST /a2a/{name}", g.serveRPC)
	mux.HandleFunc("/a2a/{name}/rest/{rest...}", g.serveREST)
	if g.opts.PushRelay {
		mux.HandleFunc("POST "+PushRelayPath+"{id}", g.servePush)
		return g.refuseDelivered(mux)
	}
	return mux
}

type agent struct {
	Agent
	base *url.URL
	// target is URL without the operator's credentials (userinfo, query,
	// fragment): what every descriptor carries into policy, the
	// classifier (an LLM provider too) and the audit store, as an MCP
	// upstream's target is. shown is less still (scheme and host), for
	// errors the calling client reads.
	target, shown string
	files         *fileURIs // AllowFileURIs
	// pushTo are AllowPushAddresses; pushes delivers relayed pushes.
	pushTo []netip.Prefix
	pushes *http.Client
	cards  cardCache
}

func (g *Gateway) agent(w http.ResponseWriter, r *http.Request) *agent {
	a := g.agents[r.PathValue("name")]
	if a == nil {
		writeJSON(w, http.StatusNotFound, intercept.ErrorResponse(nil, &intercept.WireError{Code: intercept.CodeInvalidRequest,
			Message: fmt.Sprintf("no A2A agent named %q is configured", r.PathValue("name"))}))
	}
	return a
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}

// A2A error codes (both versions).
const (
	codeTaskNotFound         = -32001
	codeUnsupportedOperation = -32004
	codeVersionNotSupported  = -32009
	// codePolicyDenied and codeApprovalRequired are the hard denials'
	// codes (MCP's -32001 and -32002 mean TaskNotFound and
	// TaskNotCancelable in A2A).
	codePolicyDenied     = -32090
	codeApprovalRequired = -32091
)

// method is what the gateway knows of one A2A JSON-RPC method.
type method struct {
	v1   bool // an A2A 1.0 method (else 0.3)
	kind methodKind
}

type methodKind int

const (
	send       methodKind = iota // a message to the agent: decided
	onTask                       // names a task by params.id: owner checked
	pushConfig                   // names a task by params taskId/id; may set a URL
	list                         // lists tasks: filtered by owner
	card                         // the extended card: rewritten
)

var methods = map[string]method{
	"message/send":                         {false, send},
	"message/stream":                       {false, send},
	"tasks/get":                            {false, onTask},
	"tasks/cancel":                         {false, onTask},
	"tasks/resubscribe":                    {false, onTask},
	"tasks/pushNotificationConfig/set":     {false, pushConfig},
	"tasks/pushNotificationConfig/get":     {false, pushConfig},
	"tasks/pushNotificationConfig/list":    {false, pushConfig},
	"tasks/pushNotificationConfig/delete":  {false, pushConfig},
	"agent/getAuthenticatedExtendedCard":   {false, card},
	"SendMessage":                          {true, send},
	"SendStreamingMessage":                 {true, send},
	"GetTask":                              {true, onTask},
	"CancelTask":                           {true, onTask},
	"SubscribeToTask":                      {true, onTask},
	"ListTasks":                            {true, list},
	"CreateTaskPushNotificationConfig":     {true, pushConfig},
	"GetTaskPushNotificationConfig":        {true, pushConfig},
	"ListTaskPushNotificationConfigs":      {true, pushConfig},
	"ListTaskPushNotificationConfig":       {true, pushConfig},
	"DeleteTaskPushNotificationConfig":     {true, pushConfig},
	"GetExtendedAgentCard":                 {true, card},
	"tasks/pushNotificationConfig/getMany": {false, pushConfig},
}

// version returns whether r speaks A2A 1.x, from the A2A-Version header
// (absent means 0.3, as the specification says).
func version(r *http.Request) (v1 bool, err error) {
	v := strings.TrimSpace(r.Header.Get("A2A-Version"))
	switch {
	case v == "" || v == "0.3" || strings.HasPrefix(v, "0.3."):
		return false, nil
	case v == "1" || v == "1.0" || strings.HasPrefix(v, "1."):
		return true, nil
	}
	return false, fmt.Errorf("A2A-Version %q is not supported; the gateway speaks 0.3 and 1.0", v)
}

func (g *Gateway) serveRPC(w http.ResponseWriter, r *http.Request) {
	a := g.agent(w, r)
	if a == nil {
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, g.opts.MaxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeJSON(w, http.StatusRequestEntityTooLarge, intercept.ErrorResponse(nil, &intercept.WireError{Code: intercept.CodeInvalidRequest,
				Message: fmt.Sprintf("request larger than %d bytes", g.opts.MaxBody)}))
			return
		}
		writeJSON(w, http.StatusBadRequest, intercept.ErrorResponse(nil, &intercept.WireError{Code: intercept.CodeParseError, Message: "reading the request: " + err.Error()}))
		return
	}
	m, err := intercept.DecodeMessage(body)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, intercept.ErrorResponse(nil, err))
		return
	}
	if err := g.checkAgentHeader(r); err != nil {
		writeJSON(w, http.StatusBadRequest, intercept.ErrorResponse(m.ID, err))
		return
	}
	r = g.withNamedAgent(r)
	if m.Kind != intercept.KindRequest {
		writeJSON(w, http.StatusBadRequest, intercept.ErrorResponse(m.ID, &intercept.WireError{Code: intercept.CodeInvalidRequest,
			Message: "an A2A endpoint takes JSON-RPC requests only"}))
		return
	}
	reply := func(err error) { writeJSON(w, http.StatusOK, intercept.ErrorResponse(m.ID, err)) }
	v1, err := version(r)
	if err != nil {
		reply(&intercept.WireError{Code: codeVersionNotSupported, Message: err.Error()})
		return
	}
	if !v1 {
		if _, _, err := g.endpoint(r.Context(), a, false); err == nil {
			// A 0.3 card: served as it says.
		} else if _, rest, err := g.endpoint(r.Context(), a, true); err == nil && rest {
			// 0.3 has no binding to translate to for an agent that
			// offers only 1.0's HTTP+JSON (restupstream.go).
			reply(&intercept.WireError{Code: codeVersionNotSupported, Message: fmt.Sprintf("agent %q offers only the A2A 1.0 HTTP+JSON binding: send A2A-Version: 1.0", a.Name)})
			return
		}
	}
	spec, known := methods[m.Method]
	if !known {
		if !g.opts.AllowUnknownMethods {
			reply(&intercept.WireError{Code: intercept.CodeMethodNotFound, Message: fmt.Sprintf("method %q is not an A2A 0.3 or 1.0 method; the gateway forwards only methods it governs", m.Method)})
			return
		}
		// Not a method the gateway knows: never plain, always decided
		// (followup.go), never naming another's task or conversation,
		// and, for a caller whose credential can stop holding, never a
		// push config's registration (push.go).
		tasks, conversation, err := g.unknownNames(r.Context(), a, m.Params, ownerOf(r.Context()))
		if err != nil {
			reply(err)
			return
		}
		if unknownRegistersPush(m.Params) {
			if err := g.pushAllowed(r.Context(), a, m.Params, true, true); err != nil {
				reply(err)
				return
			}
		}
		if sent, _, decided, ok := g.followUp(w, r, a, m, v1, ownerOf(r.Context()), tasks, conversation); ok {
			// Whatever the agent answers is screened as a message's
			// answer, and cut to the caller's tasks (extension.go).
			owner := ownerOf(r.Context())
			g.relay(w, r, a, sent, v1, relayed{decided: decided, action: g.readAction(r, a, m, v1, decided),
				check: func(res jsontext.Value) jsontext.Value { return g.unknownAnswer(r.Context(), a.Name, owner, res) }})
		}
		return
	}
	if spec.v1 != v1 {
		want := "0.3 (no A2A-Version header, or 0.3)"
		if spec.v1 {
			want = "1.0 (header A2A-Version: 1.0)"
		}
		reply(&intercept.WireError{Code: intercept.CodeInvalidRequest, Message: fmt.Sprintf("method %q is A2A %s, but the request's A2A-Version says otherwise", m.Method, want)})
		return
	}
	if (spec.kind == card || spec.kind == list) && (m.Params == nil || m.Params.Kind() == 'n') {
		// Methods that take no params: a2a-go's client sends null.
		m.Params = jsontext.Value("{}")
	}
	if m.Params.Kind() != '{' {
		reply(&intercept.WireError{Code: intercept.CodeInvalidParams, Message: "invalid params: " + m.Method + " needs a params object"})
		return
	}
	// An agent binding params with Go's encoding/json reads "taskID" or
	// "ID" as the field the gateway checked under its exact name.
	if why, bad := intercept.CaseVariant(m.Params, a2aFields); bad {
		reply(&intercept.WireError{Code: intercept.CodeInvalidParams, Message: "invalid params: " + why})
		return
	}
	if msg := intercept.Member(m.Params, "message"); msg.Kind() == '{' {
		if why, bad := intercept.CaseVariant(msg, a2aFields); bad {
			reply(&intercept.WireError{Code: intercept.CodeInvalidParams, Message: "invalid params: message: " + why})
			return
		}
		if k := notString(msg); k != "" {
			reply(&intercept.WireError{Code: intercept.CodeInvalidParams, Message: "invalid params: message." + k + " must be a string"})
			return
		}
	}
	if k := notString(m.Params); k != "" {
		reply(&intercept.WireError{Code: intercept.CodeInvalidParams, Message: "invalid params: " + k + " must be a string"})
		return
	}
	owner := ownerOf(r.Context())
	if spec.kind == send {
		g.send(w, r, a, m, v1, owner)
		return
	}
	var ids []string
	registers := false // a push config method registering one
	if spec.kind == onTask || spec.kind == pushConfig {
		// A 1.0 push config method's id is the config's; 0.3's get, list
		// and delete name their task by id (a TaskIdParams), as a2a-go
		// and @a2a-js/sdk read it.
		ids = requestTaskIDs(m.Params, spec.kind == pushConfig && spec.v1)
		if len(ids) == 0 && !(spec.kind == pushConfig && strings.Contains(strings.ToLower(m.Method), "list")) {
			reply(&intercept.WireError{Code: intercept.CodeInvalidParams, Message: "invalid params: " + m.Method + " needs the task's id"})
			return
		}
		// Every task the request names must be the caller's: an agent
		// reads the field it reads (a push config's taskId, a Python
		// agent's task_id), whichever the gateway would have picked.
		for _, id := range ids {
			if err := g.tasks.notOwned(r.Context(), a.Name, id, owner, "task not found"); err != nil {
				reply(err)
				return
			}
			if g.tasks.rejectedOnly(a.Name, id) {
				// The gateway's own soft denial: the agent never saw the
				// task, and a caller may make as many as it likes — the
				// choice of one to name would carry its bits.
				reply(&intercept.WireError{Code: codeTaskNotFound, Message: "task not found: the gateway rejected it, the agent never saw it"})
				return
			}
		}
		if spec.kind == pushConfig {
			registers = registersPush(m.Method, m.Params)
			if err := g.pushAllowed(r.Context(), a, m.Params, registers, false); err != nil {
				reply(err)
				return
			}
			if registers && g.opts.PushRelay && len(ids) != 1 {
				reply(&intercept.WireError{Code: intercept.CodeInvalidParams, Message: "invalid params: a push config names one task"})
				return
			}
		}
	}
	// A follow-up goes undecided only when it carries no data of the
	// caller's; otherwise it is decided as the message it amounts to
	// (followup.go).
	sent, clientID, decided, ok := g.followUp(w, r, a, m, v1, owner, ids, "")
	if !ok {
		return
	}
	// Whatever the agent answers is screened (OnResult, WithholdResult)
	// under the method's name: a task read later carries its answer as
	// message/send's did, and any method's error is shown to the
	// client's model as its answer (a2a-go and @a2a-js/sdk return or
	// throw it with its message).
	rel := relayed{clientID: clientID, decided: decided, action: g.readAction(r, a, m, v1, decided)}
	if registers && g.opts.PushRelay {
		// The agent gets the gateway's relay for the caller's URL
		// (pushrelay.go), after the decision on what the caller sent.
		relayedMsg, rec, err := g.relayMessage(r.Context(), a, sent, "", ids[0])
		if err != nil {
			reply(err)
			return
		}
		sent, rel.push = relayedMsg, rec
	}
	switch spec.kind {
	case pushConfig:
		if !g.opts.PushRelay {
			break
		}
		// The caller sees its own URL and token, never the relay's; a
		// deleted config's relay ends.
		deleted, taken := "", false
		if strings.Contains(strings.ToLower(m.Method), "delete") && len(ids) > 0 {
			deleted = intercept.StringMember(m.Params, "pushNotificationConfigId")
			if v1 {
				deleted = intercept.StringMember(m.Params, "id")
			}
		}
		rel.rewrite = func(result jsontext.Value) jsontext.Value {
			if deleted != "" {
				g.pushes.removeConfig(a.Name, owner, ids[0], deleted)
				g.forgetEnded(r.Context())
				g.removeSharedConfig(r.Context(), a.Name, owner, ids[0], deleted)
			}
			taken = true
			return g.showCaller(r.Context(), a.Name, owner, result)
		}
		if rel.push != nil {
			// A config the agent did not take (an error, no answer) has
			// no relay.
			defer func() {
				if !taken {
					g.endRelay(r.Context(), rel.push)
				}
			}()
		}
	case list:
		// The tasks listed (their status messages, history and
		// artifacts) are screened as the client gets them, the caller's.
		rel.rewrite = func(result jsontext.Value) jsontext.Value {
			return g.tasks.filterList(r.Context(), a.Name, owner, result)
		}
	case card:
		rel.rewrite = func(result jsontext.Value) jsontext.Value {
			reviewed, err := g.reviewedExtendedCard(r.Context(), a, v1, result)
			if err != nil {
				g.log.Warn("a2a: extended agent card refused", "agent", a.Name, "err", err)
				return nil
			}
			out, err := g.rewriteCard(r, a, reviewed)
			if err != nil {
				return nil
			}
			return out
		}
	}
	g.relay(w, r, a, sent, v1, rel)
}

// readAction is the action whose result the agent's answer to m, a
// request that is not a message, is for the Interceptor's OnResult
// (classifier.scan_results): named after m's method, the result of the
// action decided (nil: none, a plain follow-up).
func (g *Gateway) readAction(r *http.Request, a *agent, m *intercept.Message, v1 bool, decided *intercept.ActionDescriptor) *intercept.ActionDescriptor {
	d := &intercept.ActionDescriptor{TxnID: intercept.NewTxnID(), ToolName: m.Method, TargetEndpoint: a.target,
		Upstream: "a2a:" + a.Name, CallID: m.ID, ProtocolVersion: "a2a/" + map[bool]string{true: "1.0", false: "0.3"}[v1]}
	if decided != nil {
		d.TxnID = decided.TxnID // the result of the action decided
	}
	if g.opts.AgentHeader != "" {
		d.Agent = r.Header.Get(g.opts.AgentHeader)
	}
	if p := intercept.PrincipalFrom(r.Context()); p != nil {
		// Not decided (DecideAction would do this): the principal is
		// the agent, the header's name only the client's, as for the
		// message that made the task.
		if d.Principal = p; d.Agent != p.ID {
			d.ClientName, d.Agent = d.Agent, p.ID
		}
	}
	return d
}

// checkAgentHeader refuses a request whose AgentHeader appears more than
// once, and (AgentHeaderRequired) one without it, unless the request
// carries an authenticated principal, who is the agent whatever a header
// says (as the MCP routes do).
func (g *Gateway) checkAgentHeader(r *http.Request) error {
	h := g.opts.AgentHeader
	if h == "" || intercept.PrincipalFrom(r.Context()) != nil {
		return nil
	}
	switch vs := r.Header.Values(h); {
	case len(vs) > 1:
		return &intercept.WireError{Code: intercept.CodeInvalidRequest, Message: fmt.Sprintf("the %s header names the agent and must appear once; it appears %d times", h, len(vs))}
	case len(vs) == 0 && g.opts.AgentHeaderRequired:
		return &intercept.WireError{Code: intercept.CodeInvalidRequest, Message: fmt.Sprintf("the %s header is required: it names the agent making the request", h)}
	}
	return nil
}

// send decides a message to the agent and forwards it if allowed.
func (g *Gateway) send(w http.ResponseWriter, r *http.Request, a *agent, m *intercept.Message, v1 bool, owner string) {
	reply := func(err error) { writeJSON(w, http.StatusOK, intercept.ErrorResponse(m.ID, err)) }
	msg := intercept.Member(m.Params, "message")
	if msg.Kind() != '{' {
		reply(&intercept.WireError{Code: intercept.CodeInvalidParams, Message: "invalid params: " + m.Method + " needs a message object"})
		return
	}
	args, skill, err := g.arguments(r.Context(), msg, a.files)
	if err == nil {
		args, err = withExtra(args, m.Params, msg, m.Raw, r.Header.Get("A2A-Extensions"), skill)
	}
	if err != nil {
		reply(err)
		return
	}
	// The card first: the decision reads the skills it declares (their
	// descriptions, pins and drift).
	if _, err := g.card(r.Context(), a, v1); err != nil {
		writeJSON(w, http.StatusBadGateway, intercept.ErrorResponse(m.ID, &intercept.WireError{Code: intercept.CodeInternalError, Message: err.Error()}))
		return
	}
	for _, k := range []string{"taskId", "task_id"} { // Python agents read snake case too
		if id := intercept.StringMember(msg, k); id != "" {
			if err := g.tasks.notOwned(r.Context(), a.Name, id, owner, "task not found"); err != nil {
				reply(err)
				return
			}
		}
	}
	// The conversation the message is decided in (its session): the one
	// it names, which must be its task's; a message going on with a task
	// without naming one is the task's.
	session := intercept.StringMember(msg, "contextId")
	if task := intercept.StringMember(msg, "taskId"); task != "" && !g.tasks.rejectedOnly(a.Name, task) {
		// The agent goes on with the task in its own conversation.
		if session == "" {
			c, err := g.tasks.conversationOf(r.Context(), a.Name, task)
			if err != nil {
				reply(&intercept.WireError{Code: codeTaskNotFound, Message: "task not found (the gateway's shared task store, agent_tasks.redis_url, did not answer: try again)"})
				return
			}
			session = c
		}
		if err := g.tasks.notInContext(r.Context(), a.Name, task, session); err != nil {
			reply(err)
			return
		}
	}
	// Tasks the message refers to (A2A's referenceTaskIds; Python agents
	// read snake case too) are loaded by the agent for the caller: each
	// must be the caller's, as a task named by taskId is.
	for _, k := range []string{"referenceTaskIds", "reference_task_ids"} {
		refs := intercept.Member(msg, k)
		if refs == nil || refs.Kind() == 'n' {
			continue
		}
		if refs.Kind() != '[' {
			reply(&intercept.WireError{Code: intercept.CodeInvalidParams, Message: "invalid params: message." + k + " must be an array of task ids"})
			return
		}
		err := intercept.EachElement(refs, func(_ int, v jsontext.Value) error {
			var id string
			if v.Kind() != '"' || json.Unmarshal(v, &id) != nil {
				return &intercept.WireError{Code: intercept.CodeInvalidParams, Message: "invalid params: message." + k + " must be an array of task ids"}
			}
			if err := g.tasks.notOwned(r.Context(), a.Name, id, owner, "task not found"); err != nil {
				return err
			}
			if !g.tasks.rejectedOnly(a.Name, id) {
				// The agent reads the task's history with the message:
				// decided in the conversation it names, the task must be
				// of that one.
				if err := g.tasks.notInContext(r.Context(), a.Name, id, session); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			reply(err)
			return
		}
	}
	if cid := intercept.StringMember(msg, "contextId"); cid != "" {
		// A context is the caller's only if the gateway saw it started
		// for the caller. One it does not know may be one it forgot
		// (evicted, expired in the shared store, a restart, a replica
		// without it) whose history the agent still keeps: whoever named
		// it first would join that conversation. Closed.
		if err := g.tasks.notOwned(r.Context(), a.Name, contextKey(cid), owner, "context not found: start a conversation without a contextId and go on with the one the agent answers"); err != nil {
			reply(err)
			return
		}
	}
	if intercept.Member(msg, "task_id") != nil || intercept.Member(msg, "context_id") != nil {
		reply(&intercept.WireError{Code: intercept.CodeInvalidParams, Message: "invalid params: write message.taskId and message.contextId, not task_id and context_id"})
		return
	}
	relayPush := false
	if registersPush(m.Method, m.Params) {
		if g.opts.PushRelay {
			relayPush = true
		} else if err := ungovernedPush(r.Context()); err != nil {
			reply(err)
			return
		}
	}
	if err := g.checkPushURLsFor(r.Context(), a, intercept.Member(m.Params, "configuration"), false); err != nil {
		reply(err)
		return
	}
	if skill == "" {
		skill = "send"
	}
	desc, declared := a.cards.skill(skill)
	if !declared {
		// The client chose the name and the agent need not heed it: a
		// name the card does not declare would be decided under a name
		// no rule was written for, while the agent does what it likes.
		reply(&intercept.WireError{Code: intercept.CodeInvalidParams, Message: fmt.Sprintf(
			"invalid params: metadata names skill %q, which agent %q's card does not declare; name one of its skills or none", skill, a.Name)})
		return
	}
	if reservedSkill(skill) {
		// Policy takes a descriptor without a method named resource:…
		// or prompt:… for a read (as the audit log replays one), decided
		// under default_read, and mcp:… is a carry's name: a card's
		// skill of such an id would be decided as what it is not. An MCP
		// tool of such a name is denied (tool_name_reserved).
		reply(&intercept.WireError{Code: intercept.CodeInvalidParams, Message: fmt.Sprintf(
			"invalid params: metadata names skill %q of agent %q, but names starting with %s, %s or %s are reserved by the gateway's policy for reads and other messages; name another of its skills or none",
			skill, a.Name, intercept.ResourcePrefix, intercept.PromptPrefix, intercept.CarryPrefix)})
		return
	}
	d := &intercept.ActionDescriptor{
		Method: "", ToolName: skill, Parameters: args, TargetEndpoint: a.target,
		Upstream: "a2a:" + a.Name, CallID: m.ID, ProtocolVersion: "a2a/" + map[bool]string{true: "1.0", false: "0.3"}[v1],
		SessionID: policySession(session),
	}
	d.ToolDescription = desc
	if g.opts.AgentHeader != "" {
		d.Agent = r.Header.Get(g.opts.AgentHeader)
	}
	dec := g.decide(r.Context(), d)
	if dec.Verdict != intercept.Allow {
		g.deny(w, m, v1, d, dec, intercept.StringMember(msg, "contextId"), owner, a)
		return
	}
	var rec *pushRecord
	if relayPush {
		// The agent gets the gateway's relay for the caller's URL
		// (pushrelay.go), bound to the task its answer names.
		sent, r2, err := g.relayMessage(r.Context(), a, m, "configuration", intercept.StringMember(msg, "taskId"))
		if err != nil {
			reply(err)
			return
		}
		m, rec = sent, r2
		defer func() {
			g.pushes.dropUnbound(rec)
			g.forgetEnded(r.Context())
		}()
	}
	g.relay(w, r, a, m, v1, relayed{action: d, decided: d, push: rec})
}

// reservedSkill reports a skill id that policy would not decide as a
// tool's name: a read's (resource:, prompt:) or a carry's (mcp:).
func reservedSkill(id string) bool {
	return strings.HasPrefix(id, intercept.ResourcePrefix) || strings.HasPrefix(id, intercept.PromptPrefix) ||
		strings.HasPrefix(id, intercept.CarryPrefix)
}

// arguments builds the descriptor's parameters from a message: its text
// parts joined, its data parts, and its file parts' names, media types and
// URIs (their bytes are checked, not carried). It refuses invalid parts,
// and file URIs files does not let the agent fetch.
func (g *Gateway) arguments(ctx context.Context, msg jsontext.Value, files *fileURIs) (jsontext.Value, string, error) {
	type file struct {
		Name      string `json:"name,omitempty"`
		MediaType string `json:"media_type,omitempty"`
		URI       string `json:"uri,omitempty"`
		Bytes     int    `json:"bytes,omitempty"`
		// SHA256 is the hex digest of the file's bytes: an approval
		// binds to the file it was given for, and an event records it.
		SHA256 string `json:"sha256,omitempty"`
	}
	var p struct {
		Text  string           `json:"text,omitzero"`
		Data  []jsontext.Value `json:"data,omitempty"`
		Files []file           `json:"files,omitempty"`
	}
	parts := intercept.ValidMember(msg, "parts")
	if parts.Kind() != '[' {
		return nil, "", &intercept.WireError{Code: intercept.CodeInvalidParams, Message: "invalid params: message.parts must be an array"}
	}
	var texts []string
	hosts := newHostChecks(ctx)
	defer hosts.done()
	partErr := intercept.EachElement(parts, func(i int, part jsontext.Value) error {
		if part.Kind() != '{' {
			return &intercept.WireError{Code: intercept.CodeInvalidParams, Message: fmt.Sprintf("invalid params: message.parts[%d] is not an object", i)}
		}
		bad := func(what string) error {
			return &intercept.WireError{Code: intercept.CodeInvalidParams, Message: fmt.Sprintf("invalid params: message.parts[%d]: %s", i, what)}
		}
		// An agent's SDK may match member names without regard to case
		// (a2a-go does): {"Kind":"data","Data":…} must not pass for a
		// part without them.
		if why, variant := intercept.CaseVariant(part, partFields); variant {
			return bad(why)
		}
		if f := intercept.ValidMember(part, "file"); f.Kind() == '{' {
			if why, variant := intercept.CaseVariant(f, partFields); variant {
				return bad("file: " + why)
			}
		}
		// One content per part: an agent reads a part by its kind, and
		// {"kind":"data","text":"hello","data":{...}} must not be decided
		// as its text while the agent acts on its data.
		var contents []string
		for _, k := range []string{"text", "data", "file", "raw", "url"} {
			if intercept.ValidMember(part, k) != nil {
				contents = append(contents, k)
			}
		}
		if len(contents) > 1 {
			return bad("a part carries more than one content (" + strings.Join(contents, ", ") + ")")
		}
		if kind := intercept.ValidStringMember(part, "kind"); kind != "" && len(contents) == 1 && kind != contents[0] && !(kind == "file" && contents[0] == "file") {
			return bad(fmt.Sprintf("kind %q but the part carries %s", kind, contents[0]))
		}
		switch t := intercept.ValidMember(part, "text"); {
		case t != nil:
			if t.Kind() != '"' {
				return bad("text must be a string")
			}
			s, err := jsontext.AppendUnquote(nil, t)
			if err != nil {
				return bad("text must be a string")
			}
			texts = append(texts, string(s))
		case intercept.ValidMember(part, "data") != nil:
			p.Data = append(p.Data, intercept.ValidMember(part, "data"))
		default:
			// v0.3 {"kind":"file","file":{"bytes"|"uri",...}}; v1.0
			// {"raw": base64} or {"url": ...} with filename/mediaType.
			f := intercept.ValidMember(part, "file")
			if f == nil {
				f = part
			}
			var fl file
			fl.Name = intercept.ValidStringMember(f, "name") + intercept.ValidStringMember(part, "filename")
			fl.MediaType = intercept.ValidStringMember(f, "mimeType") + intercept.ValidStringMember(part, "mediaType")
			fl.URI = intercept.ValidStringMember(f, "uri") + intercept.ValidStringMember(part, "url")
			b64 := intercept.ValidMember(f, "bytes")
			if b64 == nil {
				b64 = intercept.ValidMember(part, "raw")
			}
			if b64 != nil {
				var s string
				if b64.Kind() != '"' || json.Unmarshal(b64, &s) != nil {
					return bad("file bytes must be a base64 string")
				}
				if int64(base64.StdEncoding.DecodedLen(len(s))) > g.opts.MaxPart {
					return bad(fmt.Sprintf("file larger than %d bytes", g.opts.MaxPart))
				}
				n, err := base64.StdEncoding.Strict().DecodeString(s)
				if err != nil {
					return bad("file bytes are not valid base64: " + err.Error())
				}
				fl.Bytes = len(n)
				sum := sha256.Sum256(n)
				fl.SHA256 = hex.EncodeToString(sum[:])
			}
			if fl.URI == "" && b64 == nil {
				return bad("not a text, data or file part")
			}
			if err := files.checkPartIn(hosts, part); err != nil {
				return bad(err.Error())
			}
			p.Files = append(p.Files, fl)
		}
		return nil
	})
	if partErr != nil {
		if we := (*intercept.WireError)(nil); errors.As(partErr, &we) {
			return nil, "", we
		}
		return nil, "", &intercept.WireError{Code: intercept.CodeInvalidParams, Message: "invalid params: message.parts: " + partErr.Error()}
	}
	p.Text = strings.Join(texts, "\n")
	out, err := textArguments(p.Text)
	if p.Data != nil || p.Files != nil {
		out, err = json.Marshal(p, json.Deterministic(true))
	}
	if err != nil {
		return nil, "", &intercept.WireError{Code: intercept.CodeInvalidParams, Message: "invalid params: " + err.Error()}
	}
	meta := intercept.ValidMember(msg, "metadata")
	skill := intercept.ValidStringMember(meta, "skillId")
	for _, k := range []string{"skillId", "skill"} {
		if v := intercept.ValidMember(meta, k); v != nil && v.Kind() != '"' && v.Kind() != 'n' {
			return nil, "", &intercept.WireError{Code: intercept.CodeInvalidParams, Message: "invalid params: message.metadata." + k + " must be a string"}
		}
	}
	if other := intercept.ValidStringMember(meta, "skill"); skill == "" {
		skill = other
	} else if other != "" && other != skill {
		// The message is decided as one skill; an agent that reads the
		// other member would run another.
		return nil, "", &intercept.WireError{Code: intercept.CodeInvalidParams, Message: fmt.Sprintf(
			"invalid params: message.metadata names skill %q as skillId and %q as skill; name one", skill, other)}
	}
	return out, skill, nil
}

// textArguments is what json.Marshal writes for a message of text parts
// only, the usual one, without its reflection.
func textArguments(text string) ([]byte, error) {
	if text == "" {
		return []byte("{}"), nil
	}
	out, err := jsontext.AppendQuote([]byte(`{"text":`), text)
	return append(out, '}'), err
}

// deny answers a message the decision point did not allow.
func (g *Gateway) deny(w http.ResponseWriter, m *intercept.Message, v1 bool, d *intercept.ActionDescriptor, dec intercept.Decision, contextID, owner string, a *agent) {
	env := envelope(dec, d.TxnID)
	if dec.Mode != intercept.ModeToolResult {
		// MCP's -32001 is A2A's TaskNotFoundError: A2A denials get codes
		// of their own, outside A2A's reserved -32001…-32099 block's used
		// part.
		code := codePolicyDenied
		if dec.Verdict == intercept.RequireApproval {
			code = codeApprovalRequired
		}
		resp, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{
			"code": code, "message": env.PublicReason, "data": env}}, json.Deterministic(true))
		if err != nil {
			resp = intercept.RenderDecision(m.ID, dec, d.TxnID, "")
		}
		writeJSON(w, http.StatusOK, resp)
		return
	}
	// The soft deny: a task the agent never saw, rejected by the gateway.
	taskID, msgID := intercept.NewTxnID(), intercept.NewTxnID()
	if contextID == "" {
		// A conversation the client may go on with: the caller's.
		contextID = intercept.NewTxnID()
		g.tasks.addRejected(a.Name, contextKey(contextID), owner)
	}
	g.tasks.addRejected(a.Name, taskID, owner)
	now := time.Now().UTC().Format(time.RFC3339Nano)
	var result any
	if v1 {
		result = map[string]any{"task": map[string]any{
			"id": taskID, "contextId": contextID,
			"status": map[string]any{"state": "TASK_STATE_REJECTED", "timestamp": now, "message": map[string]any{
				"messageId": msgID, "role": "ROLE_AGENT", "taskId": taskID, "contextId": contextID,
				"parts": []any{map[string]any{"text": env.PublicReason}, map[string]any{"data": env}},
			}},
		}}
	} else {
		result = map[string]any{"kind": "task", "id": taskID, "contextId": contextID,
			"status": map[string]any{"state": "rejected", "timestamp": now, "message": map[string]any{
				"kind": "message", "messageId": msgID, "role": "agent", "taskId": taskID, "contextId": contextID,
				"parts": []any{map[string]any{"kind": "text", "text": env.PublicReason}, map[string]any{"kind": "data", "data": env}},
			}},
		}
	}
	resp, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": result}, json.Deterministic(true))
	if err != nil {
		writeJSON(w, http.StatusOK, intercept.RenderDecision(m.ID, dec, d.TxnID, ""))
		return
	}
	if strings.Contains(m.Method, "tream") { // message/stream, SendStreamingMessage: one event
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		fmt.Fprintf(w, "data: %s\n\n", resp)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// softEnvelope is RFC-0002's envelope with the txn id, as a data part.
type softEnvelope struct {
	intercept.Envelope
	TxnID string `json:"txn_id"`
}

func envelope(dec intercept.Decision, txnID string) softEnvelope {
	return softEnvelope{intercept.NewEnvelope(dec), txnID}
}

// relayed says what relay does with an answer besides passing it on. The
// zero value passes it on as the agent wrote it.
type relayed struct {
	// rewrite, if set, replaces a non-streamed result (nil: the answer
	// becomes an error).
	rewrite func(jsontext.Value) jsontext.Value
	// action, if set, is the action whose result the answer is (each
	// event's, streamed): screened as a tool call's (the Interceptor's
	// OnResult: classifier.scan_results).
	action *intercept.ActionDescriptor
	// clientID, if set, is the id of the client's request, which the
	// request sent is not (a plain follow-up re-encoded with the gateway's
	// id, followup.go): every answer is given it back.
	clientID jsontext.Value
	// push, if set, is the relay the request registers: bound to the
	// task the answer names (pushrelay.go).
	push *pushRecord
	// decided, if set, is the action policy allowed for the request:
	// each conversation the answer names is linked to its route memory
	// (linkContexts).
	decided *intercept.ActionDescriptor
	// check, if set, is what the caller may have of each result, streamed
	// or not (nil: none of it): an unknown method's answer cut to the
	// caller's tasks (unknownAnswer).
	check func(jsontext.Value) jsontext.Value
}

// relay sends m, re-encoded as policy saw it, to the agent's JSON-RPC
// endpoint (or as its REST request) and relays the answer: an event
// stream event by event, anything else whole.
func (g *Gateway) relay(w http.ResponseWriter, r *http.Request, a *agent, m *intercept.Message, v1 bool, rel relayed) {
	rewrite, d, id := rel.rewrite, rel.action, m.ID
	if rel.clientID != nil {
		id = rel.clientID
	}
	fail := func(status int, err error) {
		writeJSON(w, status, intercept.ErrorResponse(id, &intercept.WireError{Code: intercept.CodeInternalError, Message: err.Error()}))
	}
	endpoint, rest, err := g.endpoint(r.Context(), a, v1)
	if err != nil {
		fail(http.StatusBadGateway, err)
		return
	}
	var req *http.Request
	if rest {
		// An agent with only the 1.0 HTTP+JSON binding: the same method
		// as its REST request (restupstream.go).
		if !v1 {
			writeJSON(w, http.StatusOK, intercept.ErrorResponse(id, &intercept.WireError{Code: codeVersionNotSupported,
				Message: fmt.Sprintf("agent %q offers only the A2A 1.0 HTTP+JSON binding: send A2A-Version: 1.0", a.Name)}))
			return
		}
		verb, path, body, stream, err := restCall(m.Method, m.Params)
		if err != nil {
			writeJSON(w, http.StatusOK, intercept.ErrorResponse(id, err))
			return
		}
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(body)
		}
		if req, err = http.NewRequestWithContext(r.Context(), verb, strings.TrimSuffix(endpoint, "/")+path, rd); err != nil {
			fail(http.StatusBadGateway, err)
			return
		}
		req.Header.Set("Accept", restAccept(stream))
	} else {
		body, err := transport.Compact(m.Raw)
		if err != nil {
			fail(http.StatusBadRequest, err)
			return
		}
		if req, err = http.NewRequestWithContext(r.Context(), http.MethodPost, endpoint, bytes.NewReader(body)); err != nil {
			fail(http.StatusBadGateway, err)
			return
		}
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	req.Header.Set("Content-Type", "application/json")
	// The version the request was decided as, not the client's spelling
	// of it: "0.3.x" is 0.3 to the gateway but 1.0 to an agent that takes
	// only "0.3" for 0.3 (@a2a-js/sdk), and a spelling is a string of the
	// caller's choosing.
	req.Header.Set("A2A-Version", map[bool]string{true: "1.0", false: "0.3"}[v1])
	if rel.clientID == nil {
		if v := r.Header.Get("A2A-Extensions"); v != "" {
			req.Header.Set("A2A-Extensions", v)
		}
	}
	for k, v := range a.Headers {
		req.Header.Set(k, v)
	}
	resp, err := h1.Send(g.calls, req)
	if err != nil {
		if r.Context().Err() != nil {
			return // the client is gone
		}
		if ue, ok := err.(*url.Error); ok {
			// Its URL is the endpoint the agent's card names, path and
			// query whole, which the card the client reads points at the
			// gateway instead.
			err = ue.Err
		}
		fail(http.StatusBadGateway, fmt.Errorf("agent %q at %s: %v", a.Name, a.shown, err))
		return
	}
	if h1.IsRedirect(resp.StatusCode) {
		// Neither followed (the message was decided about for this agent,
		// and carries the operator's headers for it) nor passed on (the
		// client would follow it around the gateway).
		resp.Body.Close()
		fail(http.StatusBadGateway, fmt.Errorf("agent %q answered with a redirect (HTTP %d), which the gateway does not follow; the operator must set its url to where it redirects", a.Name, resp.StatusCode))
		return
	}
	if rest {
		if err := restToRPC(resp, id, 8*g.opts.MaxBody); err != nil {
			resp.Body.Close()
			fail(http.StatusBadGateway, fmt.Errorf("agent %q: %v", a.Name, err))
			return
		}
	}
	defer resp.Body.Close()
	owner := ownerOf(r.Context())
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		if rewrite != nil {
			// An answer the gateway must rewrite is one message, never
			// relayed unread.
			fail(http.StatusBadGateway, fmt.Errorf("agent %q: its answer to %s is an event stream, not one JSON-RPC response", a.Name, m.Method))
			return
		}
		g.relayStream(w, resp, id, rel.clientID != nil, a.Name, owner, d, rel.decided, rel.push, rel.check)
		return
	}
	limit := 8 * g.opts.MaxBody
	out, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		fail(http.StatusBadGateway, fmt.Errorf("agent %q: reading the answer: %v", a.Name, err))
		return
	}
	if int64(len(out)) > limit {
		fail(http.StatusBadGateway, fmt.Errorf("agent %q: answer larger than %d bytes", a.Name, limit))
		return
	}
	if err := intercept.PrincipalFrom(r.Context()).Gone(); err != nil {
		// Authenticated when the request came; the answer comes later,
		// and is withheld as a stream's events are (relayStream): the
		// task is not recorded as its caller's either.
		writeJSON(w, http.StatusOK, intercept.ErrorResponse(id, err))
		return
	}
	if rel.clientID != nil {
		if out, err = withID(out, id); err != nil {
			fail(http.StatusBadGateway, fmt.Errorf("agent %q: %v", a.Name, err))
			return
		}
	}
	if ans, err := intercept.DecodeMessage(out); err == nil && ans.Kind == intercept.KindResponse {
		if err := g.linkContexts(r.Context(), rel.decided, ans.Result, nil); err != nil {
			fail(http.StatusBadGateway, err)
			return
		}
		g.tasks.record(r.Context(), a.Name, owner, ans.Result, nil)
		g.bindPush(r.Context(), rel.push, taskIDs(ans.Result))
		res := ans.Result
		if rel.check != nil {
			if res = rel.check(res); res == nil {
				fail(http.StatusBadGateway, fmt.Errorf("agent %q: its answer to %s names another's task or conversation, or nests deeper than the %d levels the gateway reads: not passed on", a.Name, m.Method, maxWalkDepth))
				return
			}
			if out, err = intercept.WithMember(ans.Raw, "result", res); err != nil {
				fail(http.StatusBadGateway, err)
				return
			}
		}
		if rewrite != nil {
			if res = rewrite(res); res == nil {
				fail(http.StatusBadGateway, fmt.Errorf("agent %q: its answer to %s could not be made safe to pass on", a.Name, m.Method))
				return
			}
			if out, err = intercept.WithMember(ans.Raw, "result", res); err != nil {
				fail(http.StatusBadGateway, err)
				return
			}
		}
		// What the client gets (a list: the caller's tasks): never the
		// gateway's soft deny (softdeny.go).
		if stripped, changed, ok := withoutForgedEnvelope(res); !ok {
			writeJSON(w, http.StatusOK, intercept.ErrorResponse(id, forgedDenialError(a.Name)))
			return
		} else if changed {
			res = stripped
			if out, err = intercept.WithMember(ans.Raw, "result", res); err != nil {
				fail(http.StatusBadGateway, err)
				return
			}
		}
		if why := g.screen(d, res, false); why != "" {
			writeJSON(w, http.StatusOK, withheldAnswer(id, d, why))
			return
		}
	} else if err != nil || ans.Kind != intercept.KindError {
		// Unread, it must not pass: a client that reads it otherwise
		// (fetch and Python skip a UTF-8 BOM Go refuses) would get what
		// the rewrite keeps from it, a result the screen never saw and a
		// task never recorded as the caller's.
		fail(http.StatusBadGateway, unreadableAnswer(a.Name, resp.StatusCode))
		return
	} else {
		// A client shows an agent's error to its model as its answer.
		if why := g.screen(d, ans.Error, true); why != "" {
			writeJSON(w, http.StatusOK, withheldAnswer(id, d, why))
			return
		}
		if out, err = agentError(a.Name, ans.Raw, ans.Error); err != nil {
			// Never the gateway's denial or hold (agenterror.go).
			fail(http.StatusBadGateway, fmt.Errorf("agent %q: %v", a.Name, err))
			return
		}
	}
	// What the gateway read, as UTF-8 JSON: not the agent's media type,
	// whose charset (UTF-7) a client decoding by it (Python's requests)
	// would read another answer in, nor text/html from the gateway's
	// origin.
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(resp.StatusCode)
	w.Write(out)
}

// relayStream passes an event stream on event by event, flushing each,
// and notes the tasks it creates. It ends when either side does. Only
// whole events are passed on: one longer than 8 × MaxBody ends the stream
// with an error answering id, and one the stream ends inside is dropped
// (as a client would drop it), so no bytes go out whose task the gateway
// did not note.
//
// With ownID, id is the client's and the request the agent answers was
// sent with the gateway's own: each event is given id back (withID).
//
// push, if set, is the relay the request registers, bound to the first
// task an event names.
//
// check, if set, is what the caller may have of each event's result
// (relayed.check).
func (g *Gateway) relayStream(w http.ResponseWriter, resp *http.Response, id jsontext.Value, ownID bool, agentName, owner string, d, decided *intercept.ActionDescriptor, push *pushRecord, check func(jsontext.Value) jsontext.Value) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	limit := 8 * g.opts.MaxBody
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	var event bytes.Buffer
	var data []byte
	first, sawData := true, false
	p := intercept.PrincipalFrom(resp.Request.Context())
	// unread ends the stream with an error for what the gateway cannot
	// read as a client would.
	unread := func(why string) {
		g.log.Warn("agent's stream not passed on", "agent", agentName, "why", why)
		msg := intercept.ErrorResponse(id, &intercept.WireError{Code: intercept.CodeInternalError,
			Message: fmt.Sprintf("agent %q: %s", agentName, why)})
		fmt.Fprintf(w, "data: %s\n\n", msg)
		_ = rc.Flush()
	}
	recorded := map[string]bool{} // the tasks and contexts its events named (owners.record)
	linked := map[string]bool{}   // the contexts linked to decided's route memory (linkContexts)
	var tails *artifactTails      // the end of each artifact's text, for a chunk appended to it (artifacttail.go)
	if d != nil && g.ic != nil && g.ic.ScreensUpstreamMessages() {
		tails = newArtifactTails()
	}
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// One line longer than the buffer: keep reading it.
			long := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) && int64(len(long)) <= limit {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if int64(event.Len()+len(line)) > limit {
			g.log.Warn("agent's event longer than the gateway reads; not passed on", "agent", agentName, "limit", limit)
			msg := intercept.ErrorResponse(id, &intercept.WireError{Code: intercept.CodeInternalError,
				Message: fmt.Sprintf("agent %q: event larger than %d bytes, the most the gateway reads", agentName, limit)})
			fmt.Fprintf(w, "data: %s\n\n", msg)
			_ = rc.Flush()
			return
		}
		if len(line) > 0 {
			event.Write(line)
			trimmed := bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
			if bytes.IndexByte(trimmed, '\r') >= 0 || (first && bytes.HasPrefix(trimmed, []byte("\xEF\xBB\xBF"))) {
				// A bare CR ends a line to an SSE parser, and one drops a
				// BOM opening the stream: the client would read events
				// the gateway did not.
				unread("its event stream has a line the gateway reads otherwise than a client (a bare CR, or a BOM)")
				return
			}
			first = false
			if d, ok := bytes.CutPrefix(trimmed, []byte("data:")); ok {
				if sawData {
					data = append(data, '\n') // as an SSE parser joins data lines
				}
				sawData = true
				data = append(data, bytes.TrimPrefix(d, []byte(" "))...)
			}
			if len(trimmed) == 0 { // end of an event
				if err := p.Gone(); err != nil {
					// Authenticated when the request came; a stream
					// outlives that, and an agent whose credential no
					// longer holds must not go on reading it.
					fmt.Fprintf(w, "data: %s\n\n", intercept.ErrorResponse(id, err))
					_ = rc.Flush()
					return
				}
				if len(data) > 0 && ownID {
					out, err := withID(data, id)
					if err != nil {
						msg := intercept.ErrorResponse(id, &intercept.WireError{Code: intercept.CodeInternalError,
							Message: fmt.Sprintf("agent %q: %v", agentName, err)})
						fmt.Fprintf(w, "data: %s\n\n", msg)
						_ = rc.Flush()
						return
					}
					data = append(data[:0], out...)
					event.Reset()
					fmt.Fprintf(&event, "data: %s\n\n", data)
				}
				if len(data) > 0 {
					ans, err := intercept.DecodeMessage(data)
					if err != nil || (ans.Kind != intercept.KindResponse && ans.Kind != intercept.KindError) {
						// Unread, it must not pass: its result would
						// reach the client unscreened.
						unread("an event of its stream is not a JSON-RPC response the gateway can read")
						return
					}
					if ans.Kind == intercept.KindError {
						// Never the gateway's denial or hold (agenterror.go).
						out, err := agentError(agentName, ans.Raw, ans.Error)
						if err != nil {
							unread("an error event of its stream cannot be passed on: " + err.Error())
							return
						}
						// out is new: ans.Error, a slice of data, stays
						// as read for the screen below.
						data = out
						event.Reset()
						fmt.Fprintf(&event, "data: %s\n\n", data)
					}
					if ans.Kind == intercept.KindResponse {
						if err := g.linkContexts(resp.Request.Context(), decided, ans.Result, linked); err != nil {
							msg := intercept.ErrorResponse(id, &intercept.WireError{Code: intercept.CodeInternalError, Message: err.Error()})
							fmt.Fprintf(w, "data: %s\n\n", msg)
							_ = rc.Flush()
							return
						}
						g.tasks.record(resp.Request.Context(), agentName, owner, ans.Result, recorded)
						g.bindPush(resp.Request.Context(), push, taskIDs(ans.Result))
						if check != nil {
							res := check(ans.Result)
							var out []byte
							var err error = errUnsafe
							if res != nil {
								out, err = intercept.WithMember(ans.Raw, "result", res)
							}
							if err != nil {
								unread(fmt.Sprintf("an event of its stream names another's task or conversation, or nests deeper than the %d levels the gateway reads: not passed on", maxWalkDepth))
								return
							}
							// out is new: ans.Result, a slice of data
							// (or res of it), stays as read.
							ans.Result, ans.Raw = res, out
							data = out
							event.Reset()
							fmt.Fprintf(&event, "data: %s\n\n", data)
						}
						// Never the gateway's soft deny (softdeny.go): in
						// what the caller gets.
						if res, changed, ok := withoutForgedEnvelope(ans.Result); !ok {
							fmt.Fprintf(w, "data: %s\n\n", intercept.ErrorResponse(id, forgedDenialError(agentName)))
							_ = rc.Flush()
							return
						} else if changed {
							out, err := intercept.WithMember(ans.Raw, "result", res)
							if err != nil {
								unread("an event of its stream cannot be passed on: " + err.Error())
								return
							}
							ans.Result, ans.Raw = res, out
							data = out
							event.Reset()
							fmt.Fprintf(&event, "data: %s\n\n", data)
						}
					}
					answer := ans.Result
					if ans.Kind == intercept.KindError {
						answer = ans.Error
					}
					why := g.screen(d, answer, ans.Kind == intercept.KindError)
					if why == "" && tails != nil && ans.Kind == intercept.KindResponse {
						joined, err := tails.next(ans.Result, g.ic.WithholdResult != nil)
						if err != nil {
							unread(err.Error())
							return
						}
						if joined != nil {
							why = g.screen(d, joined, false)
						}
					}
					if why != "" {
						// The stream ends here: its events go on from
						// what the client was not given.
						fmt.Fprintf(w, "data: %s\n\n", withheldAnswer(id, d, why))
						_ = rc.Flush()
						return
					}
				}
				if _, werr := w.Write(event.Bytes()); werr != nil {
					return
				}
				if rc.Flush() != nil {
					return
				}
				event.Reset()
				data, sawData = data[:0], false
			}
		}
		if err != nil {
			if event.Len() > 0 {
				g.log.Warn("agent's stream ended inside an event; the event is not passed on", "agent", agentName, "err", err)
			}
			if !errors.Is(err, io.EOF) && resp.Request.Context().Err() == nil {
				// Broken (a REST stream too long to translate): the
				// request gets an error, not silence.
				msg := intercept.ErrorResponse(id, &intercept.WireError{Code: intercept.CodeInternalError,
					Message: fmt.Sprintf("agent %q: its stream broke: %v", agentName, err)})
				fmt.Fprintf(w, "data: %s\n\n", msg)
				_ = rc.Flush()
			}
			return
		}
	}
}

// linkContexts links each conversation result names, other than the one
// the action decided (nil: none) was decided in, to the action's route
// memory (intercept.SessionLinker): a message is decided with its
// contextId as its session, and a conversation's first message has none
// (a client may not make one up) until the agent answers, so a source
// read in that first turn would be in no session a later turn of the
// conversation is decided in, and a session-scope route rule would not
// close it. An error (route memory not written) withholds the answer,
// before the conversation is recorded as the caller's: not taken up, it
// cannot go on. linked, if not nil, are the contexts already linked (one
// stream's events).
func (g *Gateway) linkContexts(ctx context.Context, decided *intercept.ActionDescriptor, result jsontext.Value, linked map[string]bool) error {
	if decided == nil || g.ic == nil {
		return nil
	}
	for _, c := range contextIDs(result) {
		if policySession(c) == decided.SessionID || linked[c] {
			continue
		}
		if err := g.ic.LinkSession(ctx, decided, policySession(c)); err != nil {
			return fmt.Errorf("the answer names a conversation whose route memory could not be written (%v); it is withheld", err)
		}
		if linked != nil && len(linked) < maxSeenPerStream {
			linked[c] = true
		}
	}
	return nil
}

// policySession is the session policy decides a message of conversation
// contextID in: the contextId itself, as the agent named it, or, for one
// of the form of an MCP session's reference (telemetry.SessionRef), which
// events, spans, logs and approval records show, that with "a2a:"
// before it: an agent naming its conversation after a session's
// reference shared that session's route memory, and a sensitive answer
// in it closed the sink in another client's MCP session
// (TestAttackA2AContextNamedAsSessionRef).
func policySession(contextID string) string {
	if telemetry.IsSessionRef(contextID) {
		return "a2a:" + contextID
	}
	return contextID
}

// screen hands answer, the agent's result (or, isErr, its error object)
// for the action d (nil: none), to the Interceptor before the client has
// it, as an MCP tool call's is: its WithholdResult
// (classifier.on_result_injection: withhold), which records what it
// finds and returns why the client must not have it, else OnResult for a
// result. "" passes it on.
func (g *Gateway) screen(d *intercept.ActionDescriptor, answer jsontext.Value, isErr bool) string {
	switch {
	case d == nil || g.ic == nil:
	case g.ic.WithholdResult != nil:
		return g.ic.WithholdResult(d, d.ToolName, answer)
	case !isErr && g.ic.OnResult != nil:
		g.ic.OnResult(d, answer)
	}
	return ""
}

// withheldAnswer is the answer to request id of action d whose answer the
// Interceptor withheld, why: an error, as a denial in throw mode is.
func withheldAnswer(id jsontext.Value, d *intercept.ActionDescriptor, why string) []byte {
	dec := intercept.Decision{Verdict: intercept.Deny, Reason: intercept.ReasonResultWithheld, PublicReason: why, Mode: intercept.ModeThrow}
	resp, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{
		"code": codePolicyDenied, "message": why, "data": envelope(dec, d.TxnID)}}, json.Deterministic(true))
	if err != nil {
		return intercept.RenderDecision(id, dec, d.TxnID, "")
	}
	return resp
}

// pushAllowed is nil when the push config in params may reach the agent:
// one it registers (registers) only for a caller whose credential cannot
// lapse (ungovernedPush), and none with a URL into the gateway's network.
// For a method the gateway does not know (unknown), where a push config
// may take any name, every string that is an http(s) URL is checked, not
// only url members.
func (g *Gateway) pushAllowed(ctx context.Context, a *agent, params jsontext.Value, registers, unknown bool) error {
	switch {
	case registers && unknown && g.opts.PushRelay:
		// Where the config is in a method the gateway does not know, it
		// cannot point it at its relay: the agent would push past it.
		return &intercept.WireError{Code: codePushNotSupported,
			Message: "push notifications are relayed through the gateway, which cannot relay a push config registered with a method it does not know; use tasks/pushNotificationConfig/set or CreateTaskPushNotificationConfig"}
	case registers && !g.opts.PushRelay:
		if err := ungovernedPush(ctx); err != nil {
			return err
		}
	}
	return g.checkPushURLsFor(ctx, a, params, unknown)
}

// checkPushURLs refuses push notification URLs that reach loopback,
// private or link-local addresses, anywhere in v (a message's
// configuration or a push config's params): url members, and with
// anyMember every string that is an http(s) URL as a WHATWG parser reads
// it (webURL). Host names are looked up as
// a file URI's are: each once, at most maxFileHosts of them, within one
// deadline tied to ctx. Looked up one after another without a bound, a
// request naming thousands of hosts of a slow domain held the gateway
// for as many lookups.
func (g *Gateway) checkPushURLs(ctx context.Context, v jsontext.Value, anyMember bool) error {
	return g.checkPushURLsFor(ctx, nil, v, anyMember)
}

// checkPushURLsFor is checkPushURLs letting through the addresses agent
// a's AllowPushAddresses name (a nil: none).
func (g *Gateway) checkPushURLsFor(ctx context.Context, a *agent, v jsontext.Value, anyMember bool) error {
	if g.opts.AllowPrivatePushURLs || v == nil {
		return nil
	}
	hosts := newHostChecks(ctx)
	hosts.what = "its push notification URLs"
	if a != nil {
		hosts.allowed = a.pushTo
	}
	defer hosts.done()
	var bad error
	walkStrings(v, "", func(key, s string) {
		if bad != nil {
			return
		}
		target := s
		if !strings.EqualFold(key, "url") {
			if target = webURL(s); !anyMember || target == "" {
				return
			}
		}
		u, err := url.Parse(target)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
			bad = &intercept.WireError{Code: intercept.CodeInvalidParams, Message: fmt.Sprintf("invalid params: push notification url %q is not an http(s) URL", s)}
			return
		}
		if reason := hosts.private(u.Hostname()); reason != "" {
			bad = &intercept.WireError{Code: intercept.CodeInvalidParams, Message: fmt.Sprintf("invalid params: push notification url %q names %s; the gateway does not let an agent call into its network", s, reason)}
		}
	})
	return bad
}

// privateHost says what is wrong with host as a push target: a loopback,
// private, link-local or unspecified address (or a name for one).
func privateHost(host string) string { return privateHostCtx(context.Background(), host) }

// privateHostCtx is privateHost, its lookup ending with ctx.
func privateHostCtx(ctx context.Context, host string) string {
	return privateHostAllowing(ctx, host, nil)
}

// privateHostAllowing is privateHostCtx but for addresses in allowed (an
// agent's AllowPushAddresses).
func privateHostAllowing(ctx context.Context, host string, allowed []netip.Prefix) string {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if (h == "localhost" || strings.HasSuffix(h, ".localhost")) && len(allowed) == 0 {
		return "the loopback host"
	}
	ips := []netip.Addr{}
	if ip, err := netip.ParseAddr(h); err == nil {
		ips = append(ips, ip)
	} else {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", h)
		if err != nil {
			return "a host that does not resolve"
		}
		ips = addrs
	}
	for _, ip := range ips {
		if slices.ContainsFunc(allowed, func(p netip.Prefix) bool { return p.Contains(ip.Unmap().WithZone("")) }) {
			continue
		}
		if why := privateAddr(ip); why != "" {
			return why
		}
	}
	return ""
}

// privateAddr says what is wrong with ip as a push target (privateHost),
// or "".
func privateAddr(ip netip.Addr) string {
	{
		ip = ip.Unmap()
		if ip.Is6() {
			// IPv4 carried in IPv6: NAT64 (64:ff9b::/96), IPv4-compatible
			// (::/96), IPv4-translated (::ffff:0:0:0/96) and 6to4
			// (2002::/16) reach the IPv4 address inside.
			b := ip.As16()
			switch {
			case nat64.Contains(ip), v4compat.Contains(ip), v4translated.Contains(ip):
				ip = netip.AddrFrom4([4]byte(b[12:16]))
			case sixToFour.Contains(ip):
				ip = netip.AddrFrom4([4]byte(b[2:6]))
			}
		}
		switch {
		case ip.IsLoopback():
			return "a loopback address"
		case ip.IsPrivate(), ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast(), ip.IsUnspecified():
			return "a private or link-local address"
		case ip.IsMulticast(), ip.IsInterfaceLocalMulticast():
			return "a multicast address"
		}
		for _, p := range otherPrivate {
			if p.Contains(ip) {
				return "a private or reserved address (" + p.String() + ")"
			}
		}
	}
	return ""
}

// Ranges the netip predicates leave out that a push must not reach:
// carrier-grade NAT and cloud metadata (100.64.0.0/10, Alibaba's
// 100.100.100.200), "this network", benchmarking, IETF protocol
// assignments, the broadcast address.
var (
	nat64        = netip.MustParsePrefix("64:ff9b::/96")
	v4compat     = netip.MustParsePrefix("::/96")
	v4translated = netip.MustParsePrefix("::ffff:0:0:0/96")
	sixToFour    = netip.MustParsePrefix("2002::/16")
	otherPrivate = []netip.Prefix{
		netip.MustParsePrefix("100.64.0.0/10"), netip.MustParsePrefix("0.0.0.0/8"),
		netip.MustParsePrefix("192.0.0.0/24"), netip.MustParsePrefix("198.18.0.0/15"),
		netip.MustParsePrefix("255.255.255.255/32"), netip.MustParsePrefix("64:ff9b:1::/48"),
	}
)

// walkStrings calls fn for every string value in v with the name of the
// member holding it (in an array, the array's), key at the top. It reads
// v once: decoded level by level, as it was, each level read all below
// it again, the depth times v's size. It stops where v cannot be read.
func walkStrings(v jsontext.Value, key string, fn func(key, s string)) {
	d := jsontext.NewDecoder(bytes.NewReader(v))
	// The name each open object's next value is held under, or the name
	// an open array is held under.
	type level struct {
		key string
		obj bool
	}
	var stack []level
	for {
		tok, err := d.ReadToken()
		if err != nil {
			return
		}
		k := key
		if n := len(stack); n > 0 {
			k = stack[n-1].key
		}
		switch tok.Kind() {
		case '"':
			if n := len(stack); n > 0 && stack[n-1].obj {
				if _, i := d.StackIndex(d.StackDepth()); i%2 == 1 {
					stack[n-1].key = tok.String() // a member's name
					continue
				}
			}
			fn(k, tok.String())
		case '{', '[':
			stack = append(stack, level{key: k, obj: tok.Kind() == '{'})
		case '}', ']':
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				return
			}
		}
	}
}

// taskIDParam is the task a method names: params.id (0.3 and 1.0),
// params.taskId, or params.name "tasks/{id}[/...]".
func taskIDParam(params jsontext.Value) string {
	if ids := requestTaskIDs(params, false); len(ids) > 0 {
		return ids[0]
	}
	return ""
}

// a2aFields are the members whose names the gateway reads in A2A params
// and messages: a case variant of one is refused.
var a2aFields = []string{"id", "taskId", "contextId", "messageId", "message", "parts", "kind", "role", "text", "data", "file",
	"metadata", "skillId", "configuration", "pushNotificationConfig", "name", "historyLength", "referenceTaskIds", "extensions"}

// idFields are the ids the gateway checks ownership of, as strings: one
// of another type (7 where an agent in JavaScript or Python may read "7")
// is refused, not passed by unchecked. null is no id.
var idFields = []string{"id", "taskId", "task_id", "contextId", "context_id"}

// notString returns the first of idFields that obj holds as something
// other than a string or null, or "".
func notString(obj jsontext.Value) string {
	for _, k := range idFields {
		if v := intercept.Member(obj, k); v != nil && v.Kind() != '"' && v.Kind() != 'n' {
			return k
		}
	}
	return ""
}

// partFields are the members whose names the gateway reads in a message
// part (and in a v0.3 part's file): a case variant of one is refused.
var partFields = []string{"kind", "text", "data", "file", "raw", "url", "name", "filename", "mimeType", "mediaType", "uri", "bytes", "metadata"}

// requestTaskIDs are the distinct task ids params names: in id (not for a 1.0
// push config method that names its task otherwise: there id is the
// config's),
// taskId, task_id (Python agents read snake case too) and name
// (tasks/{id}/...).
func requestTaskIDs(params jsontext.Value, pushConfig bool) []string {
	var ids []string
	add := func(s string) {
		if s != "" && !slices.Contains(ids, s) {
			ids = append(ids, s)
		}
	}
	add(intercept.StringMember(params, "taskId"))
	add(intercept.StringMember(params, "task_id"))
	if n, ok := strings.CutPrefix(intercept.StringMember(params, "name"), "tasks/"); ok {
		id, _, _ := strings.Cut(n, "/")
		add(id)
	}
	if !pushConfig || len(ids) == 0 {
		add(intercept.StringMember(params, "id"))
	}
	return ids
}

// ownerOf is who owns the tasks and conversations a request creates or
// names: the authenticated principal; without one, the agent its agent
// header names (withNamedAgent), marked apart from every principal's id
// and, past maxOwnerName, as its SHA-256, as an MCP task's owner is: a
// conversation is decided with its owner's name, so one going on under
// another name would be decided in that name's route memory, empty,
// while the agent keeps the conversation's history. "" for an unnamed
// caller (every one of them is one owner).
func ownerOf(ctx context.Context) string {
	if p := intercept.PrincipalFrom(ctx); p != nil {
		return p.ID
	}
	name, _ := ctx.Value(namedAgentKey{}).(string)
	switch {
	case name == "":
		return ""
	case len(name) > maxOwnerName:
		sum := sha256.Sum256([]byte(name))
		return namedDigestOwner + hex.EncodeToString(sum[:])
	}
	return namedOwner + name
}

// Owners an agent header names (no principal's id holds a NUL).
const (
	namedOwner       = "a\x00"
	namedDigestOwner = "h\x00"
	maxOwnerName     = 1 << 10
)

type namedAgentKey struct{}

// withNamedAgent is r with the agent its AgentHeader names, if it has no
// authenticated principal (which is the agent whatever a header says).
func (g *Gateway) withNamedAgent(r *http.Request) *http.Request {
	if g.opts.AgentHeader == "" || intercept.PrincipalFrom(r.Context()) != nil {
		return r
	}
	name := r.Header.Get(g.opts.AgentHeader)
	if name == "" {
		return r
	}
	return r.WithContext(context.WithValue(r.Context(), namedAgentKey{}, name))
}

// ownerAgent is the agent an owner is: its principal, or the name an
// agent header gave ("" past maxOwnerName, or for none).
func ownerAgent(owner string) string {
	if name, ok := strings.CutPrefix(owner, namedOwner); ok {
		return name
	}
	return principalOf(owner)
}

// principalOf is the principal an owner is, "" for one an agent header
// named: what logs and OnPushRefused call the principal.
func principalOf(owner string) string {
	if strings.HasPrefix(owner, namedOwner) || strings.HasPrefix(owner, namedDigestOwner) {
		return ""
	}
	return owner
}

// unreadableCard is why an agent's card could not be had from its HTTP
// status.
func unreadableCard(status int) error {
	if status == http.StatusUnauthorized || status == http.StatusForbidden {
		return fmt.Errorf("HTTP %d %s: the agent refused the gateway's credentials for it (agents[].url's userinfo, agents[].headers)", status, http.StatusText(status))
	}
	return fmt.Errorf("HTTP %d %s", status, http.StatusText(status))
}

// unreadableAnswer is the error for an agent's answer that is not a
// JSON-RPC response, naming the HTTP status when it is not a success: an
// agent refusing the gateway's credentials for it (its url's userinfo,
// its headers) answers 401 or 403 with a page, not JSON-RPC.
func unreadableAnswer(agent string, status int) error {
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return fmt.Errorf("agent %q answered HTTP %d %s, not a JSON-RPC response: it refused the gateway's credentials for it (agents[].url's userinfo, agents[].headers)", agent, status, http.StatusText(status))
	case status < 200 || status > 299:
		return fmt.Errorf("agent %q answered HTTP %d %s, not a JSON-RPC response", agent, status, http.StatusText(status))
	}
	return fmt.Errorf("agent %q: its answer is not a JSON-RPC response the gateway can read", agent)
}
