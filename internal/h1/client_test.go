package h1

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// TestSend: Send reports errors as Client.Do does (the URL's password
// hidden), closes the request body on every path, and hands a redirect
// back instead of following it.
func TestSend(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // accepts and hangs up: every request fails
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	c := NoRedirects(&http.Client{Transport: &Transport{}})
	addr := "http://user:secret@" + ln.Addr().String() + "/mcp"
	send := func(do func(*http.Request) (*http.Response, error)) (error, *closeCount) {
		body := &closeCount{Reader: strings.NewReader("{}")}
		req, _ := http.NewRequest(http.MethodPost, addr, body)
		_, err := do(req)
		return err, body
	}
	want, _ := send(c.Do)
	got, body := send(func(r *http.Request) (*http.Response, error) { return Send(c, r) })
	var g, w *url.Error
	if !errors.As(got, &g) || !errors.As(want, &w) || g.Op != w.Op || g.URL != w.URL {
		t.Errorf("Send: %v, want an error as Client.Do gives: %v", got, want)
	}
	if strings.Contains(got.Error(), "secret") {
		t.Errorf("the error shows the password: %v", got)
	}
	if body.n == 0 {
		t.Error("the request body was not closed")
	}

	var followed bool
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { followed = true }))
	defer target.Close()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL, http.StatusTemporaryRedirect)
	}))
	defer up.Close()
	for name, do := range map[string]func(*http.Request) (*http.Response, error){"Send": func(r *http.Request) (*http.Response, error) { return Send(c, r) }, "Do": c.Do} {
		req, _ := http.NewRequest(http.MethodPost, up.URL, strings.NewReader("{}"))
		resp, err := do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if followed || resp.StatusCode != http.StatusTemporaryRedirect || !IsRedirect(resp.StatusCode) {
			t.Errorf("%s: got %d (followed: %v), want the 307 back", name, resp.StatusCode, followed)
		}
	}
}

type closeCount struct {
	io.Reader
	n int
}

func (c *closeCount) Close() error { c.n++; return nil }

// TestSendUserinfo: credentials in the URL go as Basic authorization, as
// Client.Do sends them, unless the request has its own Authorization;
// the caller's headers are left as they were.
func TestSendUserinfo(t *testing.T) {
	got := make(chan string, 1)
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("Authorization")
	}))
	defer s.Close()
	c := NoRedirects(&http.Client{Transport: &Transport{}})
	withUser := strings.Replace(s.URL, "http://", "http://user:secret@", 1) + "/mcp"
	for _, tc := range []struct{ url, auth string }{
		{withUser, ""},
		{withUser, "Bearer own"},
		{s.URL + "/mcp", ""},
	} {
		var sent [2]string
		for i, do := range []func(*http.Request) (*http.Response, error){c.Do, func(r *http.Request) (*http.Response, error) { return Send(c, r) }} {
			req, _ := http.NewRequest(http.MethodPost, tc.url, strings.NewReader("{}"))
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			resp, err := do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			sent[i] = <-got
			if h := req.Header.Get("Authorization"); h != tc.auth {
				t.Errorf("%s: the caller's request now has Authorization %q, want %q", tc.url, h, tc.auth)
			}
		}
		if sent[1] != sent[0] {
			t.Errorf("%s with Authorization %q: Send sent %q, want %q as Client.Do", tc.url, tc.auth, sent[1], sent[0])
		}
	}
}
