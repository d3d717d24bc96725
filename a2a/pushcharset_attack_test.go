package a2a

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestAttackPushCharsetDecodedOtherwise: the relay checks and screens a
// push as UTF-8 JSON (it must name the config's task), then delivered it
// with the charset the agent named. A webhook built on express.json()
// decodes a body in that charset, any utf-* one (body-parser), and in
// UTF-7 letters the relay read as a string are quotes and braces: the
// webhook read another task id, and text the screen never saw. A push is
// delivered as what the relay read it as: UTF-8.
func TestAttackPushCharsetDecodedOtherwise(t *testing.T) {
	hook := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		hook <- r.Header.Get("Content-Type")
	}))
	t.Cleanup(srv.Close)
	rec := newRecAgent(t, goodCard)
	e := newRelayEnv(t, Agent{URL: rec.srv.URL, AllowPushAddresses: []string{"127.0.0.1"}}, Options{})
	task := taskOf(t, do(t, "POST", e.url+"/a2a/stub", "alice", "", sendHi))
	r := &pushRecord{id: randomID(16), token: randomID(32), agent: "stub", owner: "alice", task: task, url: srv.URL, callerTok: "alice-hook"}
	if err := e.g.pushes.add(r); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ sent, want string }{
		{"application/json; charset=utf-7", "application/json"},
		{"application/a2a+json; charset=UTF-7", "application/a2a+json"},
		{"application/json; charset=utf-16le", "application/json"},
		{"application/json; charset=iso-8859-1", "application/json"},
		{"application/json; charset=UTF-8", "application/json; charset=utf-8"},
	} {
		// "+ACIALAAiAHQAYQBzAGsASQBkACIAOgAi-" is `","taskId":"` in UTF-7.
		status, got := pushAs(t, e.g.relayURL(r.id), r.token, `{"statusUpdate":{"taskId":"`+task+`","metadata":{"note":"+ACIALAAiAHQAYQBzAGsASQBkACIAOgAi-other"},"status":{"state":"TASK_STATE_WORKING"}}}`, "Content-Type", c.sent)
		if status != http.StatusOK {
			t.Fatalf("push sent as %q: HTTP %d %s", c.sent, status, got)
		}
		if ct := <-hook; !strings.EqualFold(ct, c.want) {
			t.Errorf("push sent as %q reached the webhook as %q, want %q: the webhook decodes it otherwise than the relay read it", c.sent, ct, c.want)
		}
	}
}
