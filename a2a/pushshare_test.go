package a2a

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/internal/redistest"
)

// redisRelayStore is RelayStore on a real redis-server, as sluice serve
// keeps it.
type redisRelayStore struct{ c *redis.Client }

func (s redisRelayStore) Put(ctx context.Context, key string, v []byte, ttl time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	return s.c.Set(ctx, "relay:"+key, v, ttl).Err()
}

func (s redisRelayStore) Get(ctx context.Context, key string) ([]byte, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	b, err := s.c.Get(ctx, "relay:"+key).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	return b, err == nil, err
}

func (s redisRelayStore) Renew(ctx context.Context, key string, v []byte, ttl time.Duration) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if v == nil {
		return s.c.PExpire(ctx, "relay:"+key, ttl).Result()
	}
	return s.c.SetXX(ctx, "relay:"+key, v, ttl).Result()
}

func (s redisRelayStore) Delete(ctx context.Context, key string) error {
	ctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	return s.c.Del(ctx, "relay:"+key).Err()
}

// redisTaskStore is TaskStore on the same redis-server: a task created
// through one gateway is its creator's through the other.
type redisTaskStore struct{ c *redis.Client }

func (s redisTaskStore) Claim(ctx context.Context, key, owner string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if err := s.c.SetNX(ctx, "task:"+key, owner, time.Hour).Err(); err != nil {
		return "", err
	}
	return s.c.Get(ctx, "task:"+key).Result()
}

func (s redisTaskStore) Owner(ctx context.Context, key string) (string, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	v, err := s.c.Get(ctx, "task:"+key).Result()
	if errors.Is(err, redis.Nil) {
		return "", false, nil
	}
	return v, err == nil, err
}

// sharedRelayEnvs are two gateways (replicas) sharing their relays in
// one real redis-server: b rechecks a's principals' API keys as a key
// file every replica loads would (a's revocations). Its client reads to
// each command's deadline (200ms), as sluice serve's does (dialRedis).
func sharedRelayEnvs(t *testing.T, agent Agent) (a, b *relayEnv, rs *redistest.Server, c *redis.Client) {
	rs = redistest.Start(t)
	c = redis.NewClient(&redis.Options{Network: "unix", Addr: rs.Socket, MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	keys := [][]byte{[]byte(strings.Repeat("k", 32))}
	a = newRelayEnv(t, agent, Options{Relays: redisRelayStore{c}, RelayKeys: keys, Tasks: redisTaskStore{c}})
	b = newRelayEnv(t, agent, Options{Relays: redisRelayStore{c}, RelayKeys: keys, Tasks: redisTaskStore{c}, RecheckKey: func(id string) error {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.unreadable {
			return errKeyFileUnreadable
		}
		if a.revoked[id] {
			return errors.New("the API key was revoked")
		}
		return nil
	}, RecheckAgent: func(agent string) error {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.unreadable {
			return errKeyFileUnreadable
		}
		if a.keyAgents[agent] {
			return fmt.Errorf("agent %q is an API key's (auth.api_keys); a jwt credential cannot act as it", agent)
		}
		return nil
	}})
	return a, b, rs, c
}

// TestPushRelayShared: a relay registered through one gateway (replica
// a) is served by another on the same shared store (b) with every check
// a makes: the relay's token (401), the config's task (403), the caller's
// credential, rechecked there by its API key's id (410, ending the relay
// for a too); a task's last state delivered through b ends it on a too;
// the store holds none of the caller's URL, token or the relay's token in
// clear. Before, b answered every push 404.
func TestPushRelayShared(t *testing.T) {
	rec := newRecAgent(t, goodCard)
	hook := newWebhook(t)
	a, b, _, c := sharedRelayEnvs(t, Agent{URL: rec.srv.URL, AllowPushAddresses: []string{"127.0.0.1"}})
	task, url, token := relayOf(t, a, rec, "alice", hook.srv.URL+"/alice-secret-path")
	other, _, _ := relayOf(t, a, rec, "bob", hook.srv.URL+"/bob")
	onB := b.url + PushRelayPath + strings.TrimPrefix(url, a.url+PushRelayPath)

	for _, c := range []struct {
		name, token, body string
		status            int
	}{
		{"no token", "", taskPush(task, "working"), http.StatusUnauthorized},
		{"a forged token", forged(token), taskPush(task, "working"), http.StatusUnauthorized},
		{"another task", token, taskPush(other, "working"), http.StatusForbidden},
		{"a body past the bound", token, `{"kind":"task","id":"` + task + `","metadata":{"pad":"` + strings.Repeat("x", 5<<20) + `"}}`, http.StatusRequestEntityTooLarge},
		{"a push the gateway delivered, come back", token, taskPush(task, "working"), http.StatusLoopDetected},
	} {
		t.Run(c.name, func(t *testing.T) {
			var header []string
			if strings.Contains(c.name, "come back") {
				header = []string{relayHopHeader, "1"}
			}
			if status, got := pushAs(t, onB, c.token, c.body, header...); status != c.status {
				t.Errorf("through b: HTTP %d %s, want %d", status, got, c.status)
			}
			if got := hook.next(20 * time.Millisecond); got != "" {
				t.Errorf("the webhook got %.200s", got)
			}
		})
	}
	if status, got := pushAs(t, onB, token, taskPush(task, "working")); status != http.StatusOK {
		t.Fatalf("alice's push through b: HTTP %d %s, want 200", status, got)
	}
	if got := hook.next(5 * time.Second); !strings.HasPrefix(got, "alice-hook||") || !strings.Contains(got, task) {
		t.Fatalf("alice's webhook got %q; want her token and task", got)
	}

	// Nothing secret in clear in the store.
	ks, err := c.Keys(context.Background(), "relay:*").Result()
	relays := 0
	for _, k := range ks {
		if !strings.HasPrefix(k, "relay:c.") {
			relays++
		}
	}
	if err != nil || relays != 2 || len(ks) != 4 {
		t.Fatalf("store keys %q (%v); want alice's and bob's relays and their configs' keys", ks, err)
	}
	for _, k := range ks {
		v, _ := c.Get(context.Background(), k).Result()
		for _, secret := range []string{"alice-secret-path", "alice-hook", "bob-hook", token, hook.srv.URL} {
			if strings.Contains(v, secret) {
				t.Errorf("the store's %q holds %q in clear", k, secret)
			}
		}
	}

	// The task's last state through b ends the relay on a too.
	if status, got := pushAs(t, onB, token, taskPush(task, "completed")); status != http.StatusOK {
		t.Fatalf("alice's last push through b: HTTP %d %s", status, got)
	}
	hook.next(5 * time.Second)
	wantPush(t, url, token, task, http.StatusNotFound, "a push to a, after b delivered the task's last state")

	// Her key revoked: b refuses, and the relay ends on a too.
	task, url, token = relayOf(t, a, rec, "alice", hook.srv.URL+"/alice")
	onB = b.url + PushRelayPath + strings.TrimPrefix(url, a.url+PushRelayPath)
	a.revoke("alice")
	wantPush(t, onB, token, task, http.StatusGone, "through b after alice's key was revoked")
	if !b.heard("alice: the caller's credential no longer holds: the API key was revoked") {
		t.Errorf("b heard %q; want the revocation", b.refused)
	}
	wantPush(t, url, token, task, http.StatusNotFound, "a push to a after b ended the relay")
	if got := hook.next(20 * time.Millisecond); got != "" {
		t.Errorf("after alice's key was revoked her webhook got %.200s", got)
	}
}

// TestPushRelaySharedStoreDown: with the shared store stopped, a push is
// refused 503 (and heard), never delivered unchecked nor answered 404;
// a registration is refused with a JSON-RPC error and does not reach the
// agent; once the store is back (restarted, empty) both work again,
// neither gateway restarted.
func TestPushRelaySharedStoreDown(t *testing.T) {
	rec := newRecAgent(t, goodCard)
	hook := newWebhook(t)
	a, b, rs, _ := sharedRelayEnvs(t, Agent{URL: rec.srv.URL, AllowPushAddresses: []string{"127.0.0.1"}})
	task, url, token := relayOf(t, a, rec, "alice", hook.srv.URL+"/alice")
	onB := b.url + PushRelayPath + strings.TrimPrefix(url, a.url+PushRelayPath)
	rs.Stop()
	for _, u := range []string{onB, url} {
		start := time.Now()
		wantPush(t, u, token, task, http.StatusServiceUnavailable, fmt.Sprintf("a push to %s with the store stopped", u))
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("the refusal took %v", d)
		}
	}
	if !b.heard("the shared relay store did not answer") {
		t.Errorf("b heard %q; want the store's failure", b.refused)
	}
	if got := hook.next(20 * time.Millisecond); got != "" {
		t.Errorf("with the store stopped the webhook got %.200s", got)
	}
	rec.mu.Lock()
	n := len(rec.seen)
	rec.mu.Unlock()
	got := do(t, "POST", a.url+"/a2a/stub", "alice", "", `{"jsonrpc":"2.0","id":2,"method":"tasks/pushNotificationConfig/set","params":{"taskId":"`+task+`","pushNotificationConfig":{"url":"`+hook.srv.URL+`/alice","token":"alice-hook"}}}`)
	if !strings.Contains(got, `"code":-32603`) || !strings.Contains(got, "shared store") {
		t.Errorf("a registration with the store stopped: %s; want -32603 naming the shared store", got)
	}
	rec.mu.Lock()
	if len(rec.seen) != n {
		t.Errorf("the agent got %s; want no registration", rec.seen[len(rec.seen)-1])
	}
	rec.mu.Unlock()
	if err := rs.Restart(); err != nil {
		t.Fatal(err)
	}
	task, url, token = relayOf(t, a, rec, "alice", hook.srv.URL+"/alice")
	onB = b.url + PushRelayPath + strings.TrimPrefix(url, a.url+PushRelayPath)
	wantPush(t, onB, token, task, http.StatusOK, "a push through b once the store is back")
	if got := hook.next(5 * time.Second); !strings.HasPrefix(got, "alice-hook||") {
		t.Errorf("alice's webhook got %q once the store is back", got)
	}
}

// TestPushRelayStoredCredential: what a replica that did not take a
// relay's registration checks of the caller's credential, from the
// record: an expiry (a JWT's exp, a certificate's NotAfter), an API key
// by its id against the key file, and nothing it cannot tell refused.
func TestPushRelayStoredCredential(t *testing.T) {
	revoked := errors.New("the API key was revoked")
	holds := func(id string) error {
		if id == "gone" {
			return revoked
		}
		return nil
	}
	for _, c := range []struct {
		name    string
		cred    *relayCredential
		recheck func(string) error
		want    string
	}{
		{"no credential", nil, nil, ""},
		{"a JWT before its exp", &relayCredential{Method: "jwt", Expires: time.Now().Add(time.Hour), Lapses: true}, nil, ""},
		{"a JWT past its exp", &relayCredential{Method: "jwt", Expires: time.Now().Add(-time.Second), Lapses: true}, nil, "expired"},
		{"a certificate past its NotAfter", &relayCredential{Method: "mtls", Expires: time.Now().Add(-time.Second), Lapses: true}, nil, "expired"},
		{"an API key that holds", &relayCredential{Method: "api_key", KeyID: "k1", Lapses: true}, holds, ""},
		{"an API key revoked", &relayCredential{Method: "api_key", KeyID: "gone", Lapses: true}, holds, "the API key was revoked"},
		{"an API key, no key file here", &relayCredential{Method: "api_key", KeyID: "k1", Lapses: true}, nil, "cannot be checked"},
		{"an API key without its id", &relayCredential{Method: "api_key", Lapses: true}, holds, "cannot be checked"},
		{"a credential that lapses, no expiry", &relayCredential{Method: "other", Lapses: true}, holds, "cannot be checked"},
		// A JWT's signing key is asked of the issuer's key set again: one
		// withdrawn before the token's exp ends the relay here too.
		{"a JWT whose key is published", &relayCredential{Method: "jwt", Expires: time.Now().Add(time.Hour), Lapses: true, JWTKey: "sum.kid-1"}, holds, ""},
		{"a JWT whose key was withdrawn", &relayCredential{Method: "jwt", Expires: time.Now().Add(time.Hour), Lapses: true, JWTKey: "sum.withdrawn"}, holds, "no longer published"},
		{"a JWT's key, no JWKS here", &relayCredential{Method: "jwt", Expires: time.Now().Add(time.Hour), Lapses: true, JWTKey: "sum.kid-1"}, nil, "cannot be checked"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var published func(string) error
			if c.recheck != nil {
				published = func(ref string) error {
					if ref == "sum.withdrawn" {
						return errors.New("the token's signing key is no longer published")
					}
					return nil
				}
			}
			g := &Gateway{opts: Options{RecheckKey: c.recheck, RecheckJWTKey: published}}
			got := ""
			if err := g.storedLapsed(c.cred, "alice"); err != nil {
				got = err.Error()
			}
			if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

// TestPushRelaySharedConfigDeleted: a push config registered through one
// gateway and deleted through the other ends its relay on both; one the
// caller sets again under the same id ends the relay it replaces, on the
// other gateway too. Before, the relay went on delivering through the
// gateway that registered it.
func TestPushRelaySharedConfigDeleted(t *testing.T) {
	rec := newRecAgent(t, goodCard)
	hook := newWebhook(t)
	a, b, _, _ := sharedRelayEnvs(t, Agent{URL: rec.srv.URL, AllowPushAddresses: []string{"127.0.0.1"}})
	task, url, token := relayOf(t, a, rec, "alice", hook.srv.URL+"/alice")
	got := do(t, "POST", b.url+"/a2a/stub", "alice", "", `{"jsonrpc":"2.0","id":3,"method":"tasks/pushNotificationConfig/delete","params":{"id":"`+task+`","pushNotificationConfigId":"`+lastConfigID(t, rec)+`"}}`)
	if strings.Contains(got, `"error"`) {
		t.Fatalf("delete through b: %s", got)
	}
	for _, u := range []string{url, b.url + PushRelayPath + strings.TrimPrefix(url, a.url+PushRelayPath)} {
		wantPush(t, u, token, task, http.StatusNotFound, fmt.Sprintf("a push to %s after its config was deleted through b", u))
	}

	// Set again under the same id, through b: a's relay of that id ends.
	task, url, token = relayOf(t, a, rec, "alice", hook.srv.URL+"/alice")
	id := lastConfigID(t, rec)
	got = do(t, "POST", b.url+"/a2a/stub", "alice", "", `{"jsonrpc":"2.0","id":4,"method":"tasks/pushNotificationConfig/set","params":{"taskId":"`+task+`","pushNotificationConfig":{"id":"`+id+`","url":"`+hook.srv.URL+`/alice2","token":"alice-hook"}}}`)
	if strings.Contains(got, `"error"`) {
		t.Fatalf("set again through b: %s", got)
	}
	wantPush(t, url, token, task, http.StatusNotFound, "a push to the replaced relay")
	if got := hook.next(20 * time.Millisecond); got != "" {
		t.Errorf("the webhook got %.200s", got)
	}
}

// TestAttackPushRelayInFlightRevives: a push being delivered through one
// gateway when the caller deletes its config through the other must not
// bring the relay back: before, the delivery's end stored the record
// again (to renew its TTL), and the config's key with it, so the deleted
// relay went on delivering the agent's pushes, through either gateway,
// until push_relay.ttl.
func TestAttackPushRelayInFlightRevives(t *testing.T) {
	rec := newRecAgent(t, goodCard)
	arrived, release := make(chan struct{}, 8), make(chan struct{})
	delivered := make(chan string, 8)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		arrived <- struct{}{}
		<-release
		delivered <- string(b)
	}))
	t.Cleanup(hook.Close)
	a, b, _, _ := sharedRelayEnvs(t, Agent{URL: rec.srv.URL, AllowPushAddresses: []string{"127.0.0.1"}})
	task, url, token := relayOf(t, a, rec, "alice", hook.URL+"/alice")
	configID := lastConfigID(t, rec)
	onB := b.url + PushRelayPath + strings.TrimPrefix(url, a.url+PushRelayPath)

	done := pushAsync(onB, token, taskPush(task, "working"))
	select {
	case <-arrived:
	case <-time.After(5 * time.Second):
		t.Fatal("the push did not reach the webhook")
	}
	got := do(t, "POST", a.url+"/a2a/stub", "alice", "", `{"jsonrpc":"2.0","id":3,"method":"tasks/pushNotificationConfig/delete","params":{"id":"`+task+`","pushNotificationConfigId":"`+configID+`"}}`)
	if strings.Contains(got, `"error"`) {
		t.Fatalf("delete through a: %s", got)
	}
	close(release)
	<-done
	<-delivered
	for _, u := range []string{onB, url} {
		wantPush(t, u, token, task, http.StatusNotFound, fmt.Sprintf("a push to %s after its config was deleted during a delivery", u))
	}
	select {
	case got := <-delivered:
		t.Errorf("after the config was deleted the webhook got %.200s", got)
	case <-time.After(20 * time.Millisecond):
	}
}

// TestAttackPushRelaySlowBodyAfterDelete: an agent that starts pushes
// while a relay lives and sends their bodies once the caller deleted the
// config has none delivered: before, a push whose headers arrived while
// the relay lived was delivered whatever happened while its body came (the
// caller's credential alone was checked again), so an agent could hold
// any number open and deliver them after the caller ended the relay.
func TestAttackPushRelaySlowBodyAfterDelete(t *testing.T) {
	for _, shared := range []bool{false, true} {
		t.Run(map[bool]string{false: "one gateway", true: "shared store"}[shared], func(t *testing.T) {
			rec := newRecAgent(t, goodCard)
			hook := newWebhook(t)
			agent := Agent{URL: rec.srv.URL, AllowPushAddresses: []string{"127.0.0.1"}}
			var a, b *relayEnv
			if shared {
				a, b, _, _ = sharedRelayEnvs(t, agent)
			} else {
				a = newRelayEnv(t, agent, Options{})
				b = a
			}
			task, url, token := relayOf(t, a, rec, "alice", hook.srv.URL+"/alice")
			id := lastConfigID(t, rec)
			checked := make(chan struct{}, 16)
			a.mu.Lock()
			a.checked = func(string) { checked <- struct{}{} }
			a.mu.Unlock()
			pr, pw := io.Pipe()
			done := pushFrom(url, token, pr, "application/json")
			body := taskPush(task, "working")
			pw.Write([]byte(body[:5]))
			select {
			case <-checked: // the relay found, before its body is read
			case <-time.After(10 * time.Second):
				t.Fatal("the relay did not check the caller's credential")
			}
			got := do(t, "POST", b.url+"/a2a/stub", "alice", "", `{"jsonrpc":"2.0","id":3,"method":"tasks/pushNotificationConfig/delete","params":{"id":"`+task+`","pushNotificationConfigId":"`+id+`"}}`)
			if strings.Contains(got, `"error"`) {
				t.Fatalf("delete: %s", got)
			}
			pw.Write([]byte(body[5:]))
			pw.Close()
			if status := <-done; status != http.StatusNotFound {
				t.Errorf("a push whose body came after its config was deleted: HTTP %d, want 404", status)
			}
			if got := hook.next(20 * time.Millisecond); got != "" {
				t.Errorf("after the config was deleted the webhook got %.200s", got)
			}
		})
	}
}

// lastConfigID is the id of the push config the agent got last.
func lastConfigID(t *testing.T, rec *recAgent) string {
	t.Helper()
	rec.mu.Lock()
	set := rec.seen[len(rec.seen)-1]
	rec.mu.Unlock()
	_, body, _ := strings.Cut(strings.TrimPrefix(set, "POST "), " ")
	var req struct {
		Params struct {
			Config struct {
				ID string `json:"id"`
			} `json:"pushNotificationConfig"`
		} `json:"params"`
	}
	if err := json.Unmarshal([]byte(body), &req, json.RejectUnknownMembers(false)); err != nil || req.Params.Config.ID == "" {
		t.Fatalf("no config id in %s", body)
	}
	return req.Params.Config.ID
}

// TestAttackPushRelayHugeConfig: what the gateway keeps of a push config
// for the caller (its url, token and authentication: in process, and
// with relays shared, sealed in Redis) is bounded. Before, only the
// request's 4 MiB bound held: a caller registering its tenth of
// max_relays (1,000) configs of 4 MiB each made every replica it reached
// keep 4 GB, and the shared Redis the same for each, where task owners
// and sessions live.
func TestAttackPushRelayHugeConfig(t *testing.T) {
	rec := newRecAgent(t, goodCard)
	hook := newWebhook(t)
	_, b, _, c := sharedRelayEnvs(t, Agent{URL: rec.srv.URL, AllowPushAddresses: []string{"127.0.0.1"}})
	gw := b.url + "/a2a/stub"
	task := taskOf(t, do(t, "POST", gw, "alice", "", sendHi))
	pad := strings.Repeat("x", 1<<20)
	for _, cfg := range []string{
		`{"url":"` + hook.srv.URL + `/alice?` + pad + `","token":"t"}`,
		`{"url":"` + hook.srv.URL + `/alice","token":"` + pad + `"}`,
		`{"url":"` + hook.srv.URL + `/alice","authentication":{"schemes":["Bearer"],"credentials":"` + pad + `"}}`,
	} {
		got := do(t, "POST", gw, "alice", "", `{"jsonrpc":"2.0","id":2,"method":"tasks/pushNotificationConfig/set","params":{"taskId":"`+task+`","pushNotificationConfig":`+cfg+`}}`)
		if !strings.Contains(got, `"code":-32602`) {
			t.Errorf("a push config of a MiB: %.300s; want -32602", got)
		}
	}
	n, err := c.DBSize(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	ks, _ := c.Keys(context.Background(), "relay:*").Result()
	if len(ks) != 0 {
		t.Errorf("the store holds %d relay keys (of %d), want none", len(ks), n)
	}
}

// wantPush sends a "working" push for task to u with the relay's token and
// fails t unless it is answered status.
func wantPush(t *testing.T, u, token, task string, status int, what string) {
	t.Helper()
	if got, body := pushAs(t, u, token, taskPush(task, "working")); got != status {
		t.Errorf("%s: HTTP %d %s, want %d", what, got, body, status)
	}
}

// flakyRelayStore is a relay store whose reads and deletes fail while
// down is set: a store that stops answering between two steps of a
// request (the task's owner read, the relay's removal not).
type flakyRelayStore struct {
	RelayStore
	down *atomic.Bool
}

var errFlaky = errors.New("connection refused")

func (s flakyRelayStore) Get(ctx context.Context, key string) ([]byte, bool, error) {
	if s.down.Load() {
		return nil, false, errFlaky
	}
	return s.RelayStore.Get(ctx, key)
}

func (s flakyRelayStore) Delete(ctx context.Context, key string) error {
	if s.down.Load() {
		return errFlaky
	}
	return s.RelayStore.Delete(ctx, key)
}

// TestPushRelaySharedRemovalRetried: a config deleted through one
// gateway while the shared store did not answer there ends its relay on
// every gateway once the store answers again (the removal is retried);
// a config set again under the same id meanwhile keeps its new relay.
// Before, the deleted config's relay went on delivering through the
// gateway that registered it until push_relay.ttl.
func TestPushRelaySharedRemovalRetried(t *testing.T) {
	rec := newRecAgent(t, goodCard)
	hook := newWebhook(t)
	a, b, _, _ := sharedRelayEnvs(t, Agent{URL: rec.srv.URL, AllowPushAddresses: []string{"127.0.0.1"}})
	down := new(atomic.Bool)
	b.g.shared.store = flakyRelayStore{b.g.shared.store, down}
	b.g.shared.retryEvery = 20 * time.Millisecond
	retrying := func() bool { return retryingNow(b.g.shared) }
	deleteOnB := func(task, id string) {
		t.Helper()
		down.Store(true)
		defer down.Store(false)
		got := do(t, "POST", b.url+"/a2a/stub", "alice", "", `{"jsonrpc":"2.0","id":3,"method":"tasks/pushNotificationConfig/delete","params":{"id":"`+task+`","pushNotificationConfigId":"`+id+`"}}`)
		if strings.Contains(got, `"error"`) {
			t.Fatalf("delete through b: %s", got)
		}
		if !retrying() {
			t.Fatal("b keeps no removal to retry")
		}
	}

	task, url, token := relayOf(t, a, rec, "alice", hook.srv.URL+"/alice")
	deleteOnB(task, lastConfigID(t, rec))
	for deadline := time.Now().Add(5 * time.Second); retrying(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("b's removal was not retried once the store answered")
		}
	}
	wantPush(t, url, token, task, http.StatusNotFound, "a push to a's relay once b's removal was retried")
	b.g.shared.mu.Lock()
	b.g.shared.retryEvery = time.Hour // retried by hand below
	b.g.shared.mu.Unlock()

	// Deleted while the store did not answer, then set again under the
	// same id through a before b's retry: the new relay stays.
	task, _, _ = relayOf(t, a, rec, "alice", hook.srv.URL+"/alice")
	id := lastConfigID(t, rec)
	deleteOnB(task, id)
	url, token = setRelay(t, a, rec, "alice", `{"jsonrpc":"2.0","id":4,"method":"tasks/pushNotificationConfig/set","params":{"taskId":"`+task+`","pushNotificationConfig":{"id":"`+id+`","url":"`+hook.srv.URL+`/alice2","token":"alice-hook"}}}`)
	b.g.shared.retry()
	if retrying() {
		t.Error("b still retries a removal the store took")
	}
	wantPush(t, url, token, task, http.StatusOK, "a push to the config set again, after b's retry")
	if got := hook.next(5 * time.Second); !strings.HasPrefix(got, "alice-hook||") {
		t.Errorf("the webhook got %q", got)
	}
}

// errKeyFileUnreadable is what auth's key check says while the key file
// cannot be read.
var errKeyFileUnreadable = fmt.Errorf("the key file cannot be read: %w", intercept.ErrUncheckable)

// TestPushRelayKeyFileUnreadable: while the key file cannot be read, a
// push through either gateway is refused 503 (try again) and its relay
// kept: once the file reads again the push is delivered. Before, the
// relay was ended (410) on every replica, for good, for a moment's
// unreadable file.
func TestPushRelayKeyFileUnreadable(t *testing.T) {
	rec := newRecAgent(t, goodCard)
	hook := newWebhook(t)
	a, b, _, _ := sharedRelayEnvs(t, Agent{URL: rec.srv.URL, AllowPushAddresses: []string{"127.0.0.1"}})
	task, url, token := relayOf(t, a, rec, "alice", hook.srv.URL+"/alice")
	onB := b.url + PushRelayPath + strings.TrimPrefix(url, a.url+PushRelayPath)
	a.mu.Lock()
	a.unreadable = true
	a.mu.Unlock()
	for _, u := range []string{onB, url} {
		wantPush(t, u, token, task, http.StatusServiceUnavailable, fmt.Sprintf("a push to %s while the key file cannot be read", u))
	}
	if got := hook.next(20 * time.Millisecond); got != "" {
		t.Errorf("the webhook got %.200s", got)
	}
	a.mu.Lock()
	a.unreadable = false
	a.mu.Unlock()
	for _, u := range []string{onB, url} {
		wantPush(t, u, token, task, http.StatusOK, fmt.Sprintf("a push to %s once the key file reads again", u))
		if got := hook.next(5 * time.Second); !strings.HasPrefix(got, "alice-hook||") {
			t.Errorf("the webhook got %q", got)
		}
	}
}

// TestPushRelaySharedStoreStalled: the shared store stalled (connections
// open, nothing answered: SIGSTOP) rather than down. A flood of pushes
// through either gateway is refused 503 each within about the store's
// timeout, none delivered; a config deleted meanwhile through a (which
// registered it) is answered within it too, its removal kept for a
// retry; once the store answers again, neither gateway restarted, the
// removal is retried and the relay is ended through b too (404).
func TestPushRelaySharedStoreStalled(t *testing.T) {
	rec := newRecAgent(t, goodCard)
	hook := newWebhook(t)
	a, b, rs, _ := sharedRelayEnvs(t, Agent{URL: rec.srv.URL, AllowPushAddresses: []string{"127.0.0.1"}})
	a.g.shared.retryEvery = 50 * time.Millisecond
	task, url, token := relayOf(t, a, rec, "alice", hook.srv.URL+"/alice")
	id := lastConfigID(t, rec)
	onB := b.url + PushRelayPath + strings.TrimPrefix(url, a.url+PushRelayPath)
	if err := rs.Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rs.Resume() })

	const n = 40
	statuses := make([]int, n)
	took := make([]time.Duration, n)
	var wg sync.WaitGroup
	for i := range n {
		u := url
		if i%2 == 1 {
			u = onB
		}
		wg.Go(func() {
			start := time.Now()
			statuses[i], _ = pushAs(t, u, token, taskPush(task, "working"))
			took[i] = time.Since(start)
		})
	}
	wg.Wait()
	for i := range n {
		// The store's timeout is 200ms (redisRelayStore), for each of the
		// push's round trips; the pool's 10 connections are shared.
		if statuses[i] != http.StatusServiceUnavailable || took[i] > 3*time.Second {
			t.Errorf("push %d of %d with the store stalled: HTTP %d after %s; want 503 within 3s", i, n, statuses[i], took[i].Round(time.Millisecond))
		}
	}
	if got := hook.next(20 * time.Millisecond); got != "" {
		t.Errorf("with the store stalled the webhook got %.200s", got)
	}

	start := time.Now()
	got := do(t, "POST", a.url+"/a2a/stub", "alice", "", `{"jsonrpc":"2.0","id":3,"method":"tasks/pushNotificationConfig/delete","params":{"id":"`+task+`","pushNotificationConfigId":"`+id+`"}}`)
	if d := time.Since(start); strings.Contains(got, `"error"`) || d > 2*time.Second {
		t.Errorf("a delete through a with the store stalled: %s after %s; want it answered within 2s", got, d.Round(time.Millisecond))
	}
	a.g.shared.mu.Lock()
	kept := len(a.g.shared.unremoved)
	a.g.shared.mu.Unlock()
	if kept == 0 {
		t.Fatal("a keeps no removal to retry")
	}

	if err := rs.Resume(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); retryingNow(a.g.shared); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a's removal was not retried once the store answered again")
		}
	}
	wantPush(t, onB, token, task, http.StatusNotFound, "a push through b once the store answered again and a's removal was retried")
}

// TestPushRelayStalledStoreFloodHeardOnce: while the shared store does
// not answer, anyone's pushes to made-up relay ids (the relay's URL
// needs no credential) are each refused 503, but heard (a WARN line and
// an audit event) once a second, with how many were refused since: with
// the store up such pushes are only a debug line. Before, each was a
// line and an event: a flood during an outage filled the audit log.
func TestPushRelayStalledStoreFloodHeardOnce(t *testing.T) {
	rec := newRecAgent(t, goodCard)
	_, b, rs, _ := sharedRelayEnvs(t, Agent{URL: rec.srv.URL, AllowPushAddresses: []string{"127.0.0.1"}})
	if err := rs.Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rs.Resume() })
	const n = 30
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			statuses[i], _ = pushAs(t, fmt.Sprintf("%s%sx%d", b.url, PushRelayPath, i), "t", taskPush("t", "working"))
		})
	}
	wg.Wait()
	for i, s := range statuses {
		if s != http.StatusServiceUnavailable {
			t.Errorf("push %d with the store stalled: HTTP %d, want 503", i, s)
		}
	}
	b.mu.Lock()
	heard := len(b.refused)
	b.mu.Unlock()
	if heard == 0 || heard > 2 {
		t.Errorf("%d pushes refused within a second or so, the store stalled: heard %d times, want once (twice across a second's turn)", n, heard)
	}
}

// retryingNow reports whether s has removals to retry.
func retryingNow(s *sharedRelays) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.retrying
}

// countingRelayStore counts the store's Deletes.
type countingRelayStore struct {
	RelayStore
	deletes *atomic.Int32
}

func (s countingRelayStore) Delete(ctx context.Context, key string) error {
	s.deletes.Add(1)
	return s.RelayStore.Delete(ctx, key)
}

// TestPushRelayRetryStalledStore: removals the store did not take,
// retried while it stays stalled (SIGSTOP), are retried by one timer at
// a time, one store command per retry (each waits out its timeout), and
// not past the records' TTL: then the retries end, the store still
// stalled. Many removals failing at once add no timer, and those of one
// request wait one timeout, not one each (before: 5 relays, 1 s).
func TestPushRelayRetryStalledStore(t *testing.T) {
	rs := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Network: "unix", Addr: rs.Socket, MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	deletes := new(atomic.Int32)
	s, err := newSharedRelays(countingRelayStore{redisRelayStore{c}, deletes}, [][]byte{[]byte(strings.Repeat("k", 32))}, 700*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	s.retryEvery = 10 * time.Millisecond
	if err := rs.Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rs.Resume() })
	ids := make([]string, 50)
	for i := range ids {
		ids[i] = fmt.Sprintf("r%d", i)
	}
	start := time.Now()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if s.forget(context.Background(), ids[:5]) == nil {
				t.Error("forget with the store stalled: no error")
			}
		})
	}
	wg.Wait()
	// One timeout (200ms), not one per id.
	if d := time.Since(start); d > 600*time.Millisecond {
		t.Errorf("forgetting 5 relays with the store stalled took %s; want about one store timeout (200ms)", d.Round(time.Millisecond))
	}
	for retryingNow(s) {
		if time.Since(start) > 5*time.Second {
			t.Fatalf("still retrying %s after the removals failed, the records' TTL 700ms", time.Since(start).Round(time.Millisecond))
		}
		time.Sleep(20 * time.Millisecond)
	}
	took := time.Since(start)
	// 4 forgets of 5 ids, the first Delete of each a 200ms timeout,
	// then one Delete per retry while the TTL lasts: at most one each
	// 200ms+10ms.
	n := int(deletes.Load())
	if max := 4 + int(took/(200*time.Millisecond)) + 1; n > max {
		t.Errorf("%d Deletes in %s with the store stalled; want at most %d (one retry at a time)", n, took.Round(time.Millisecond), max)
	}
	t.Logf("retries ended %s after the removals failed; %d Deletes", took.Round(time.Millisecond), n)
}

// TestPushRelayCloseEndsRetries: Close tries the removals the store did
// not take once more (taken then: nothing left) and, while the store
// still does not take them, leaves them to the records' TTL, logging how
// many, and retries no more. Before, a2a had no Close: a gateway shut
// down kept a timer retrying until the TTL (push_relay.ttl, a day by
// default), and said nothing of the relays other replicas would go on
// delivering to.
func TestPushRelayCloseEndsRetries(t *testing.T) {
	store := &memRelayStore{m: map[string][]byte{}}
	down := new(atomic.Bool)
	deletes := new(atomic.Int32)
	newStore := func() (*sharedRelays, *[]string) {
		s, err := newSharedRelays(countingRelayStore{flakyRelayStore{store, down}, deletes}, [][]byte{[]byte(strings.Repeat("k", 32))}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		s.retryEvery = 10 * time.Millisecond
		var logged []string
		s.log = func(msg string, args ...any) { logged = append(logged, fmt.Sprintf("%s %v", msg, args)) }
		return s, &logged
	}

	// The store answers again by Close: taken then, nothing to say.
	s, logged := newStore()
	s.retryEvery = time.Hour // only Close retries
	down.Store(true)
	if s.forget(context.Background(), []string{"r1", "r2"}) == nil {
		t.Fatal("forget with the store down: no error")
	}
	down.Store(false)
	s.close()
	if n := len(s.unremoved); n != 0 {
		t.Errorf("%d removals left after Close with the store answering, want 0", n)
	}
	if len(*logged) != 0 {
		t.Errorf("Close logged %q with nothing left", *logged)
	}

	// Still down: left to the TTL, said, and no retry after Close.
	s, logged = newStore()
	down.Store(true)
	if s.forget(context.Background(), []string{"r4", "r5", "r6"}) == nil {
		t.Fatal("forget with the store down: no error")
	}
	s.close()
	if len(*logged) != 1 || !strings.Contains((*logged)[0], "left to push_relay.ttl") || !strings.Contains((*logged)[0], "[relays 3]") {
		t.Errorf("Close with 3 removals the store does not take logged %q, want one line saying 3 are left to the TTL", *logged)
	}
	before := deletes.Load()
	time.Sleep(100 * time.Millisecond) // ten retry periods: none may come
	if n := deletes.Load() - before; n != 0 {
		t.Errorf("%d Deletes after Close, want none", n)
	}
	if retryingNow(s) {
		t.Error("still retrying after Close")
	}
	// A relay ended after Close: said, not scheduled.
	if s.forget(context.Background(), []string{"r7"}) == nil {
		t.Fatal("forget with the store down: no error")
	}
	if retryingNow(s) || len(*logged) != 2 {
		t.Errorf("a removal failing after Close: retrying %v, logged %q; want no retry and a second line", retryingNow(s), *logged)
	}
}

// memRelayStore is a RelayStore in memory.
type memRelayStore struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (s *memRelayStore) put(key string, v []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[key] = v
}

func (s *memRelayStore) Put(_ context.Context, key string, v []byte, _ time.Duration) error {
	s.put(key, v)
	return nil
}

func (s *memRelayStore) Get(_ context.Context, key string) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[key]
	return v, ok, nil
}

func (s *memRelayStore) Delete(_ context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
	return nil
}

func (s *memRelayStore) Renew(_ context.Context, key string, v []byte, _ time.Duration) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[key]; !ok {
		return false, nil
	}
	if v != nil {
		s.m[key] = v
	}
	return true, nil
}
