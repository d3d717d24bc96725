package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/inventory"
)

// inventoryConfig is the `inventory:` section of sluice.yaml.
type inventoryConfig struct {
	// Pinning is "first" (pin an upstream's first tools/list, the default)
	// or "manual" (block until `sluice inventory pin`).
	Pinning inventory.Pinning `yaml:"pinning"`
	// OnDrift is "block" (changed tools are soft-denied with
	// inventory_drift until approved, the default) or "warn".
	OnDrift inventory.DriftAction `yaml:"on_drift"`
	// OnPoisonedListing is "withhold" (prompts, resources and resource
	// templates whose text looks poisoned are left out of their lists and
	// not served, poisoned server instructions are left out of the
	// initialize result; the default) or "report" (events only).
	OnPoisonedListing inventory.ListingAction `yaml:"on_poisoned_listing"`
	// AllowedListings are item_hash values of sluice.tool_poisoning events
	// an operator judged false alarms: those exact items are shown.
	AllowedListings []string `yaml:"allowed_listings"`
	// MaxDescription flags longer tool descriptions (default 2000; -1 off).
	MaxDescription int `yaml:"max_description"`
	// KeyFile is an Ed25519 signing key (PEM PKCS#8); default: generated
	// into the data directory on first run.
	KeyFile string `yaml:"key_file"`
	// RedisURL (redis://, rediss:// or unix://, ${VAR} expanded) keeps the
	// pinned and observed snapshots in Redis, shared by every replica: the
	// first replica to see an upstream pins it for all, a drift seen by
	// one blocks the tool on all, an approval through any applies on all
	// (within a moment; at most 30s if a notification is lost). Needs
	// key_file, the same on every replica. Empty keeps them in
	// data_dir/inventory.
	RedisURL string `yaml:"redis_url"`
	// KeyPrefix of the inventory's Redis keys (default "{sluice:inventory}:").
	KeyPrefix string `yaml:"key_prefix"`
}

// validate checks the section once ${VAR}s are expanded.
func (c *inventoryConfig) validate() error {
	if c.RedisURL == "" {
		return nil
	}
	if _, err := redis.ParseURL(c.RedisURL); err != nil {
		return fmt.Errorf("inventory.redis_url: %w; give redis://host:6379/0, rediss:// for TLS or unix:///path", err)
	}
	if c.KeyFile == "" {
		return errors.New("inventory.redis_url needs inventory.key_file: replicas sharing pins must sign them with one key " +
			"(generate one with: openssl genpkey -algorithm ed25519 -out inventory-key.pem)")
	}
	return nil
}

// dialRedis connects to the Redis at url (the value of config key key)
// and checks it answers a PING within 5s: an unreachable server at
// start-up is an error naming the key.
func dialRedis(ctx context.Context, key, url string) (*redis.Client, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	// A command waits no longer than its caller's deadline (rate_limits
	// and agent_tasks give one per call), nor than 2 s when there is
	// none, and is tried again once.
	opt.ContextTimeoutEnabled = true
	if opt.ReadTimeout == 0 {
		opt.ReadTimeout = 2 * time.Second
	}
	if opt.WriteTimeout == 0 {
		opt.WriteTimeout = 2 * time.Second
	}
	opt.MaxRetries = 1
	client := redis.NewClient(opt)
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := client.Ping(pctx).Err(); err != nil {
		client.Close()
		return nil, fmt.Errorf("%s: redis at %s: %w", key, opt.Addr, err)
	}
	return client, nil
}

// backend opens the Redis backend of the section, or returns nil for the
// data directory's files.
func (c *inventoryConfig) backend(ctx context.Context) (*inventory.RedisBackend, error) {
	if c.RedisURL == "" {
		return nil, nil
	}
	client, err := dialRedis(ctx, "inventory.redis_url", c.RedisURL)
	if err != nil {
		return nil, err
	}
	return inventory.OpenRedisBackend(client, c.KeyPrefix, 0), nil
}

// inventoryAdmin serves the operator's side of the inventory:
//
//	GET  /admin/inventory                      upstreams, hashes, collisions
//	GET  /admin/inventory/{upstream}/diff      pinned vs observed
//	POST /admin/inventory/{upstream}/pin       pin what was last observed [{"hash":"…"}]
//	POST /admin/inventory/{upstream}/approve   {"tool":"name"|"*"[,"hash":"…"]}
//
// A hash (the diff's observed hash of the tool, or its approval_hash, of
// the list and any changed instructions, for "*" and pin) approves that
// version only: a tool changed again since the
// operator reviewed it is refused 409 rather than approved unseen.
func inventoryAdmin(inv *inventory.Inventory) http.Handler {
	// decodeStrict reads the body as one JSON object of v's members and
	// nothing else (io.EOF for none): a version to approve named
	// otherwise ("observed_hash", as the diff names it, or "Hash"), in a
	// second value, or named twice with the last null would be dropped
	// and the tool approved at whatever version it is.
	decodeStrict := func(body io.Reader, v any) error {
		b, err := io.ReadAll(io.LimitReader(body, 1<<16))
		if err != nil {
			return err
		}
		if len(bytes.TrimSpace(b)) == 0 {
			return io.EOF
		}
		return jsonv2.Unmarshal(b, v, jsonv2.RejectUnknownMembers(true))
	}
	// hashOf is the version a body's "hash" names: nil without one, and
	// an error for one that is not a string: named as null it was read
	// as none, and the tool approved at whatever version it is, unseen
	// (TestApproveNullHashRefused).
	hashOf := func(v jsontext.Value) (*string, error) {
		if v == nil {
			return nil, nil
		}
		var h string
		if v.Kind() != '"' {
			return nil, errors.New("hash is not a string")
		}
		if err := jsonv2.Unmarshal(v, &h); err != nil {
			return nil, err
		}
		return &h, nil
	}
	mux := http.NewServeMux()
	reply := func(w http.ResponseWriter, v any, err error) {
		w.Header().Set("Content-Type", "application/json")
		if err != nil {
			status := http.StatusConflict
			switch {
			case errors.Is(err, inventory.ErrUnknownUpstream):
				status = http.StatusNotFound
			case errors.Is(err, inventory.ErrStoreUnavailable):
				// Nothing changed; the operator may try again (not a
				// conflict with the pin's state, which 409 says).
				status = http.StatusServiceUnavailable
			}
			w.WriteHeader(status)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
			return
		}
		_ = json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("GET /admin/inventory", func(w http.ResponseWriter, r *http.Request) {
		ups := map[string]string{}
		for _, u := range inv.Upstreams() {
			ups[u] = inv.Hash(u)
		}
		collisions := inv.Collisions()
		if collisions == nil {
			collisions = []inventory.Collision{} // "collisions": [], not null
		}
		reply(w, map[string]any{"upstreams": ups, "collisions": collisions, "key_id": inv.KeyID()}, nil)
	})
	mux.HandleFunc("GET /admin/inventory/{upstream}/diff", func(w http.ResponseWriter, r *http.Request) {
		d, err := inv.Diff(r.PathValue("upstream"))
		if err != nil {
			reply(w, nil, err)
			return
		}
		reply(w, map[string]any{"diff": d, "text": d.String()}, nil)
	})
	mux.HandleFunc("POST /admin/inventory/{upstream}/pin", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Hash jsontext.Value `json:"hash"`
		}
		err := decodeStrict(r.Body, &body)
		var hash *string
		if err == nil {
			hash, err = hashOf(body.Hash)
		}
		if err != nil && err != io.EOF {
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": `want no body or {"hash":"observed hash"}`})
			return
		}
		upstream := r.PathValue("upstream")
		if hash != nil {
			err = inv.PinHash(upstream, *hash)
		} else {
			err = inv.Pin(upstream)
		}
		reply(w, map[string]string{"pinned": upstream}, err)
	})
	mux.HandleFunc("POST /admin/inventory/{upstream}/approve", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Tool string         `json:"tool"`
			Hash jsontext.Value `json:"hash"`
		}
		err := decodeStrict(r.Body, &body)
		var hash *string
		if err == nil {
			hash, err = hashOf(body.Hash)
		}
		if err != nil || body.Tool == "" {
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": `want {"tool":"name"} or {"tool":"*"}, with "hash" the version to approve`})
			return
		}
		upstream := r.PathValue("upstream")
		if hash != nil {
			err = inv.ApproveHash(upstream, body.Tool, *hash)
		} else {
			err = inv.Approve(upstream, body.Tool)
		}
		reply(w, map[string]string{"approved": body.Tool}, err)
	})
	return mux
}

// runInventory is `sluice inventory list|diff|pin|approve`, talking to a
// running gateway's admin API.
func runInventory(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlagSet("inventory")
	ac := adminFlags(fs)
	hash := fs.String("hash", "", "approve or pin: only the version with this hash, the observed one `inventory diff` shows (a tool changed again since is refused)")
	if len(args) == 0 {
		return usageErrorf("inventory: want list, diff UPSTREAM, pin UPSTREAM or approve UPSTREAM [TOOL|*]")
	}
	verb, rest := args[0], args[1:]
	if isHelp(verb) {
		return &helpError{fs}
	}
	switch verb {
	case "list", "diff", "pin", "approve":
	default:
		return usageErrorf("inventory: unknown verb %q (want list, diff, pin or approve)", verb)
	}
	fs.Init("inventory "+verb, flag.ContinueOnError)
	var pos []string
	for len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		pos, rest = append(pos, rest[0]), rest[1:]
	}
	if err := parseFlags(fs, rest); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("inventory %s: unexpected argument %q", verb, fs.Arg(0))
	}
	// A name more than the verb takes was ignored: `inventory list demo`
	// listed every upstream, `inventory pin demo web_search` pinned all of
	// demo's tools.
	if most := map[string]int{"list": 0, "diff": 1, "pin": 1, "approve": 2}[verb]; len(pos) > most {
		return usageErrorf("inventory %s: unexpected argument %q (want list, diff UPSTREAM, pin UPSTREAM or approve UPSTREAM [TOOL|*])", verb, pos[most])
	}
	hashSet := false
	fs.Visit(func(f *flag.Flag) { hashSet = hashSet || f.Name == "hash" })
	if hashSet && verb != "approve" && verb != "pin" {
		return usageErrorf("inventory %s: --hash is for approve and pin", verb)
	}
	// withHash adds the hash given, if any, to an approval's body.
	withHash := func(body map[string]string) []byte {
		if hashSet {
			body["hash"] = *hash
		}
		b, _ := json.Marshal(body)
		return b
	}
	admin, token, err := ac.resolve()
	if err != nil {
		return err
	}
	base := admin + "/admin/inventory"
	need := func(n int) error {
		if len(pos) < n {
			return usageErrorf("inventory %s: want an upstream name", verb)
		}
		return nil
	}
	var res map[string]any
	switch verb {
	case "list":
		if err := adminCall(ctx, http.MethodGet, base, token, nil, &res); err != nil {
			return err
		}
	case "diff":
		if err := need(1); err != nil {
			return err
		}
		if err := adminCall(ctx, http.MethodGet, base+"/"+pos[0]+"/diff", token, nil, &res); err != nil {
			return err
		}
		fmt.Fprint(out, res["text"])
		return nil
	case "pin":
		if err := need(1); err != nil {
			return err
		}
		if err := adminCall(ctx, http.MethodPost, base+"/"+pos[0]+"/pin", token, withHash(map[string]string{}), &res); err != nil {
			return err
		}
	case "approve":
		if err := need(1); err != nil {
			return err
		}
		tool := inventory.AllTools
		if len(pos) > 1 {
			tool = pos[1]
		}
		if err := adminCall(ctx, http.MethodPost, base+"/"+pos[0]+"/approve", token, withHash(map[string]string{"tool": tool}), &res); err != nil {
			return err
		}
	}
	b, _ := json.MarshalIndent(res, "", "  ")
	fmt.Fprintln(out, string(b))
	return nil
}
