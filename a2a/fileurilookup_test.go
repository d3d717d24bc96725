package a2a

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// slowDNS makes the process's resolver ask a DNS server that answers
// every name, after delay, with a public address (a wildcard record of a
// domain whose server is slow, as an attacker's may be on purpose), and
// counts the questions.
func slowDNS(t *testing.T, delay time.Duration) *atomic.Int64 {
	t.Helper()
	var asked atomic.Int64
	old := net.DefaultResolver
	net.DefaultResolver = &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		client, server := net.Pipe()
		go func() {
			defer server.Close()
			var n [2]byte
			if _, err := io.ReadFull(server, n[:]); err != nil {
				return
			}
			q := make([]byte, binary.BigEndian.Uint16(n[:]))
			if _, err := io.ReadFull(server, q); err != nil {
				return
			}
			var p dnsmessage.Parser
			h, err := p.Start(q)
			if err != nil {
				return
			}
			question, err := p.Question()
			if err != nil {
				return
			}
			asked.Add(1)
			time.Sleep(delay)
			b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired, RecursionAvailable: true})
			b.EnableCompression()
			_ = b.StartQuestions()
			_ = b.Question(question)
			_ = b.StartAnswers()
			if question.Type == dnsmessage.TypeA {
				_ = b.AResource(dnsmessage.ResourceHeader{Name: question.Name, Class: dnsmessage.ClassINET, TTL: 60},
					dnsmessage.AResource{A: netip.MustParseAddr("93.184.215.14").As4()})
			}
			out, err := b.Finish()
			if err != nil {
				return
			}
			binary.BigEndian.PutUint16(n[:], uint16(len(out)))
			_, _ = server.Write(append(n[:], out...))
		}()
		return client, nil
	}}
	t.Cleanup(func() { net.DefaultResolver = old })
	return &asked
}

func fileParts(hosts ...string) string {
	var parts []string
	for i, h := range hosts {
		parts = append(parts, fmt.Sprintf(`{"kind":"file","file":{"uri":"https://%s/doc%d.pdf","mimeType":"application/pdf"}}`, h, i))
	}
	return `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[` + strings.Join(parts, ",") + `]}}}`
}

// TestAttackFileURILookupFlood: a file part naming a host makes the
// gateway look the name up before the message goes on. A message of many
// parts, each naming another host of a domain whose DNS server answers
// slowly, held the gateway for one lookup after another (a 4 MiB message
// holds tens of thousands of parts), each with a fresh two seconds, none
// ended by the client hanging up, and sent as many questions out. A
// message's lookups are bounded in number and in time; a name it repeats
// is looked up once.
func TestAttackFileURILookupFlood(t *testing.T) {
	asked := slowDNS(t, 200*time.Millisecond)
	agent := newRecAgent(t, goodCard)
	gw := serveAs(t, allow, agent.srv.URL, Options{})

	var hosts []string
	for i := range 40 {
		hosts = append(hosts, fmt.Sprintf("h%d.files.attacker.example", i))
	}
	start := time.Now()
	got := do(t, "POST", gw.URL+"/a2a/stub", "bob", "", fileParts(hosts...))
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("a message naming 40 hosts held the gateway %v in lookups (%d DNS questions)", took, asked.Load())
	}
	if !strings.Contains(got, `"code":-32602`) {
		t.Errorf("a message naming 40 hosts: got %s, want -32602", got)
	}
	if agent.saw("attacker.example") {
		t.Error("the message naming 40 hosts reached the agent")
	}

	// A message naming a few hosts, some more than once, goes on.
	asked.Store(0)
	many := []string{"files.example.com", "cdn.example.net"}
	for range 10 {
		many = append(many, "files.example.com")
	}
	start = time.Now()
	got = do(t, "POST", gw.URL+"/a2a/stub", "bob", "", fileParts(many...))
	if !agent.saw("cdn.example.net") {
		t.Errorf("a message with public file URIs did not reach the agent: %s", got)
	}
	if took := time.Since(start); took > 1500*time.Millisecond {
		t.Errorf("a message naming 2 hosts 12 times took %v in lookups (%d DNS questions)", took, asked.Load())
	}
}
