package a2a

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// TestPlainRequest: which follow-ups are plain, what the gateway sends for
// them, and what makes the others carry data.
func TestPlainRequest(t *testing.T) {
	for _, c := range []struct {
		method, params string
		ext            string // A2A-Extensions
		want           string // the request sent; "" when not plain
		extra          []string
	}{
		{"tasks/get", `{"id":"t1"}`, "", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"t1"}}`, nil},
		{"tasks/get", `{ "metadata" : {}, "id":"t\u0031", "historyLength":null }`, "", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"t1"}}`, nil},
		{"GetTask", `{"tenant":"","id":"t1"}`, "", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t1"}}`, nil},
		{"CancelTask", `{"tenant":"","id":"t1","metadata":{}}`, "", `{"jsonrpc":"2.0","id":1,"method":"CancelTask","params":{"id":"t1"}}`, nil},
		{"ListTasks", `{}`, "", `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}`, nil},
		{"ListTaskPushNotificationConfigs", `{"taskId":"t1"}`, "", `{"jsonrpc":"2.0","id":1,"method":"ListTaskPushNotificationConfigs","params":{"taskId":"t1"}}`, nil},
		{"tasks/get", `{"id":"t1","historyLength":0}`, "", "", []string{"params.historyLength"}},
		{"tasks/get", `{"id":"t1","metadata":{"a":1}}`, "", "", []string{"params.metadata"}},
		{"tasks/get", `{"id":"t1","task_id":"t1"}`, "", "", []string{"params.task_id"}},
		{"tasks/get", `{"id":"t1","x":false}`, "", "", []string{"params.x"}},
		{"tasks/get", `{"id":"t1"}`, "urn:x", "", []string{"the A2A-Extensions header"}},
		{"GetTask", `{"id":"t1","tenant":"acme"}`, "", "", []string{"params.tenant"}},
		{"ListTasks", `{"pageToken":"p"}`, "", "", []string{"params.pageToken"}},
		{"ListTasks", `{"id":"t1"}`, "", "", []string{"params.id"}},
		{"ListTaskPushNotificationConfigs", `{"taskId":"t1","id":"c1"}`, "", "", []string{"params.id"}},
		{"tasks/pushNotificationConfig/get", `{"id":"t1","pushNotificationConfigId":"c"}`, "", "", []string{"params.pushNotificationConfigId"}},
		{"tasks/pushNotificationConfig/set", `{"taskId":"t1"}`, "", "", []string{"method tasks/pushNotificationConfig/set"}},
		{"DeleteTaskPushNotificationConfig", `{"taskId":"t1","id":"c"}`, "", "", []string{"method DeleteTaskPushNotificationConfig"}},
		{"tasks/annotate", `{}`, "", "", []string{"method tasks/annotate"}},
	} {
		m, err := intercept.DecodeMessage([]byte(`{"jsonrpc":"2.0","id":"client","method":"` + c.method + `","params":` + c.params + `}`))
		if err != nil {
			t.Fatal(err)
		}
		r, _ := http.NewRequest(http.MethodPost, "/", nil)
		if c.ext != "" {
			r.Header.Set("A2A-Extensions", c.ext)
		}
		sent, extra := plainRequest(r, m)
		got := ""
		if sent != nil {
			got = string(sent.Raw)
		}
		if got != c.want || !slices.Equal(extra, c.extra) {
			t.Errorf("%s %s: got %s %q, want %s %q", c.method, c.params, got, extra, c.want, c.extra)
		}
	}
}

// FuzzPlainRequest: whatever a client sends, a plain request's re-encoding
// holds the method, the gateway's id and at most the one task member, with
// the value the gateway checked the owner of.
func FuzzPlainRequest(f *testing.F) {
	for _, s := range []string{`{"id":"t1"}`, `{"id":"t1","tenant":""}`, `{"taskId":"t\u00e9"}`, `{"id":"a\"b","metadata":{}}`, `{}`, `{"id":""}`} {
		f.Add("tasks/get", s)
		f.Add("ListTaskPushNotificationConfigs", s)
		f.Add("ListTasks", s)
	}
	f.Fuzz(func(t *testing.T, method, params string) {
		m, err := intercept.DecodeMessage([]byte(`{"jsonrpc":"2.0","id":7,"method":` + quoteJSON(method) + `,"params":` + params + `}`))
		if err != nil || m.Kind != intercept.KindRequest || m.Params.Kind() != '{' {
			return
		}
		r, _ := http.NewRequest(http.MethodPost, "/", nil)
		sent, extra := plainRequest(r, m)
		if sent == nil {
			if len(extra) == 0 {
				t.Fatalf("%s %s: neither plain nor carrying data", method, params)
			}
			return
		}
		if sent.Method != m.Method || string(sent.ID) != "1" {
			t.Fatalf("sent %s for %s", sent.Raw, m.Raw)
		}
		key := plainTask[m.Method]
		n := 0
		_ = intercept.EachMember(sent.Params, func(k string, _ jsontext.Value) error {
			n++
			if k != key {
				t.Fatalf("sent %s: member %q", sent.Raw, k)
			}
			return nil
		})
		if n > 1 || (n == 1 && intercept.StringMember(sent.Params, key) != intercept.StringMember(m.Params, key)) {
			t.Fatalf("sent %s for %s", sent.Raw, m.Raw)
		}
		if strings.Count(string(sent.Raw), `"jsonrpc"`) != 1 {
			t.Fatalf("sent %s", sent.Raw)
		}
	})
}

func quoteJSON(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteString(`\` + string(r))
		case r < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte("0123456789abcdef"[r>>4])
			b.WriteByte("0123456789abcdef"[r&15])
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
