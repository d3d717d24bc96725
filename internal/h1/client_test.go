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
