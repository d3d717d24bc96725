package gateway

import (
	"net/url"
	"strings"
)

// redactURLs returns the text of err with every URL carried by a
// *url.Error in its chain cut down to scheme and host: an upstream's
// URL may hold a key in its query string or credentials in its userinfo,
// and errors naming it go to clients.
func redactURLs(err error) string {
	msg := err.Error()
	for _, ue := range urlErrors(err) {
		msg = strings.ReplaceAll(msg, ue.URL, redactURL(ue.URL))
	}
	return msg
}

// urlErrors returns the *url.Errors in err's tree.
func urlErrors(err error) []*url.Error {
	var out []*url.Error
	var walk func(error)
	walk = func(err error) {
		if err == nil {
			return
		}
		if ue, ok := err.(*url.Error); ok {
			out = append(out, ue)
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		}
	}
	walk(err)
	return out
}

// redactURL keeps scheme and host of raw: hosted servers put keys in the
// path as well as the query string and userinfo. One that does not parse
// is left out altogether.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(upstream URL)"
	}
	out := (&url.URL{Scheme: u.Scheme, Host: u.Host}).String()
	if u.Path != "" && u.Path != "/" {
		out += "/…"
	}
	return out
}
