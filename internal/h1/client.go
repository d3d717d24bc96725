package h1

import (
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strings"
)

// NoRedirects returns a copy of c (nil: a zero Client) that hands a
// redirect back to its caller instead of following it.
//
// A gateway must not follow its upstream's redirects: the request was
// decided about for the configured upstream, and following a 307 or 308
// would send it, body and headers included (an operator's API key in a
// custom header among them), wherever the Location says. The redirect
// goes back to the client, as from httputil.ReverseProxy.
func NoRedirects(c *http.Client) *http.Client {
	var n http.Client
	if c != nil {
		n = *c
	}
	n.CheckRedirect = useLastResponse
	return &n
}

func useLastResponse(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// Send is c.Do(req) for a client that follows no redirects (see
// NoRedirects) and has no Timeout or Jar: req goes to c's transport once,
// without the copy of its headers Client.Do keeps for redirects. Errors
// are reported as Client.Do reports them (a *url.Error naming the method
// and the URL without its password), and req's body is closed on every
// path, as the RoundTripper contract says. Credentials in the URL go as
// Basic authorization unless req has an Authorization header, as from
// Client.Do (which adds the header to a copy of req, not to req).
func Send(c *http.Client, req *http.Request) (*http.Response, error) {
	if c.Timeout > 0 || c.Jar != nil {
		return c.Do(req)
	}
	if u := req.URL.User; u != nil && req.Header.Get("Authorization") == "" {
		password, _ := u.Password()
		r := *req
		r.Header = req.Header.Clone()
		if r.Header == nil {
			r.Header = make(http.Header)
		}
		r.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(u.Username()+":"+password)))
		req = &r
	}
	rt := c.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	resp, err := rt.RoundTrip(req)
	if err == nil && resp == nil {
		err = errors.New("http: RoundTripper returned a nil *Response with a nil error")
	}
	if err != nil {
		if resp != nil && resp.Body != nil {
			resp.Body.Close()
		}
		method := req.Method
		if method == "" {
			method = http.MethodGet
		}
		return nil, &url.Error{Op: method[:1] + strings.ToLower(method[1:]), URL: redactedURL(req.URL), Err: err}
	}
	return resp, nil
}

// redactedURL is u as Client.Do names it in errors: without the password.
func redactedURL(u *url.URL) string {
	if _, has := u.User.Password(); has {
		return strings.Replace(u.String(), u.User.String()+"@", u.User.Username()+":***@", 1)
	}
	return u.String()
}

// IsRedirect reports whether status is one Client.Do would follow.
func IsRedirect(status int) bool {
	switch status {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}
