package a2a

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// TestAttackOversizedStreamEvent: an agent's event stream whose event is
// longer than the gateway reads (8 × MaxBody) had its first bytes written
// to the client as they were, a task in them unrecorded; so had an event
// the stream ended inside. None is passed on now: the request gets an
// error event naming the limit, and the events before it arrive.
func TestAttackOversizedStreamEvent(t *testing.T) {
	long := strings.Repeat("A", 40<<10)
	for _, c := range []struct{ name, tail, want string }{
		{"one long line", `data: {"jsonrpc":"2.0","id":1,"result":{"kind":"task","id":"EVIL` + long + `"}}` + "\n\n", "larger than 32768 bytes"},
		{"many lines", strings.Repeat(`data: {"EVIL":"`+strings.Repeat("A", 1000)+`"}`+"\n", 40) + "\n", "larger than 32768 bytes"},
		{"cut short", `data: {"jsonrpc":"2.0","id":1,"result":{"kind":"task","id":"EVIL"}}` + "\n", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var srv *httptest.Server
			srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodGet {
					io.WriteString(w, strings.ReplaceAll(goodCard, "BASE", srv.URL))
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, `data: {"jsonrpc":"2.0","id":1,"result":{"kind":"status-update","taskId":"t-first"}}`+"\n\n"+c.tail)
			}))
			t.Cleanup(srv.Close)
			gw := serve(t, allow, srv.URL, Options{MaxBody: 4096})
			_, got := post(t, gw.URL+"/a2a/stub", "", `{"jsonrpc":"2.0","id":1,"method":"message/stream","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}]}}}`)
			if strings.Contains(got, "EVIL") || !strings.Contains(got, "t-first") {
				t.Errorf("got %.300s, want the first event and nothing of the %s", got, c.name)
			}
			if c.want != "" && (!strings.Contains(got, c.want) || !strings.Contains(got, `"error"`)) {
				t.Errorf("got %.300s, want an error event naming the limit", got)
			}
		})
	}
}

// TestRestStreamEventBounded: a REST agent's stream event of many data
// lines is bounded as one line is; past the limit the translation ends
// with an error, not with the event.
func TestRestStreamEventBounded(t *testing.T) {
	var out bytes.Buffer
	in := strings.Repeat(`data: {"EVIL":"`+strings.Repeat("A", 1000)+`"}`+"\n", 40) + "\n"
	err := translateEvents(&out, strings.NewReader(in), jsontext.Value(`1`), 32<<10)
	if err == nil || strings.Contains(out.String(), "EVIL") {
		t.Errorf("got %v and %.100q, want an error and nothing written", err, out.String())
	}
}
