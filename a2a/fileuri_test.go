package a2a

import (
	"strings"
	"testing"
)

// TestAttackFileURIIntoNetwork: a file part's URI is fetched by the agent,
// from its network: a client that cannot reach the cloud metadata service
// or the agent's own admin port names it in a file part and the agent
// fetches it for him (and may hand the contents back as its answer). Each
// spelling below names a loopback, link-local, private or internal target,
// or a local file; none may reach the agent.
func TestAttackFileURIIntoNetwork(t *testing.T) {
	agent := newRecAgent(t, goodCard)
	gw := serveAs(t, allow, agent.srv.URL, Options{})
	for _, u := range []string{
		"http://127.0.0.1:9090/admin", "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
		"file:///etc/passwd", "FILE:///etc/passwd", "File://localhost/etc/passwd", "gopher://127.0.0.1:6379/_FLUSHALL",
		"http://2130706433/", "http://0x7f000001/", "http://0177.0.0.1/", "http://127.1/", "http://127.0.0.1./", "http://0/",
		"http://[::1]/", "http://[::ffff:127.0.0.1]/", "http://[::ffff:a9fe:a9fe]/", "http://[::ffff:0:7f00:1]/", "http://[fe80::1%25eth0]/",
		"http://public.example@127.0.0.1/", "http://127.0.0.1\\\\@public.example/", "http:127.0.0.1/x", "//127.0.0.1/x", " http://127.0.0.1/",
		"http://%31%32%37.0.0.1/", "http://\uff11\uff12\uff17.0.0.1/", "HTTP://LOCALHOST/", "http://a.localhost/",
		"http://metadata.google.internal/computeMetadata/v1/", "http://intranet/secret", "http://10.0.0.5/", "http://192.168.1.1/",
		"http://100.100.100.200/latest/meta-data/", "http://[fd00:ec2::254]/",
	} {
		for _, c := range []struct{ version, body string }{
			{"", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"file","file":{"uri":"` + u + `","mimeType":"text/plain"}}]}}}`},
			{"1.0", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"url":"` + u + `","mediaType":"text/plain"}]}}}`},
			// a proto-JSON FilePart (fileWithUri) beside bytes the gateway reads
			{"", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"file","file":{"bytes":"aGk=","fileWithUri":"` + u + `"}}]}}}`},
		} {
			got := do(t, "POST", gw.URL+"/a2a/stub", "bob", c.version, c.body)
			if !strings.Contains(got, `"code":-32602`) {
				t.Errorf("file uri %q (A2A %q): got %s, want -32602", u, c.version, got)
			}
		}
	}
	if agent.saw("file") || agent.saw("url") {
		t.Errorf("a message with an internal file uri reached the agent: %v", agent.seen)
	}
	// Public URIs and what the operator allows go on.
	pub := `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"file","file":{"uri":"https://93.184.215.14/report.pdf"}}]}}}`
	if got := do(t, "POST", gw.URL+"/a2a/stub", "bob", "", pub); !agent.saw("93.184.215.14") {
		t.Errorf("a public file uri did not reach the agent: %s", got)
	}
	for _, c := range []struct {
		allow []string
		uri   string
	}{
		{nil, "https://93.184.215.14/report.pdf"},
		{[]string{"files.corp.example"}, "http://files.corp.example/report.pdf"},
		{[]string{"*.corp.example"}, "http://a.files.corp.example/report.pdf"},
		{[]string{"10.1.0.0/16"}, "http://10.1.2.3/report.pdf"},
		{[]string{"gs:"}, "gs://bucket/report.pdf"},
	} {
		g, err := New(Options{Agents: []Agent{{Name: "stub", URL: agent.srv.URL, AllowFileURIs: c.allow}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := g.agents["stub"].files.checkPart([]byte(`{"kind":"file","file":{"uri":"` + c.uri + `"}}`)); err != nil {
			t.Errorf("allow %v: %s refused: %v", c.allow, c.uri, err)
		}
		if err := g.agents["stub"].files.checkPart([]byte(`{"url":"http://10.2.0.1/"}`)); err == nil {
			t.Errorf("allow %v: http://10.2.0.1/ accepted", c.allow)
		}
	}
	if err := ValidateAgent(Agent{Name: "stub", URL: "http://x.example", AllowFileURIs: []string{"10.0.0.0/33"}}); err == nil {
		t.Error("allow_file_uris 10.0.0.0/33 accepted")
	}
}
