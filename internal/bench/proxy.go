package bench

import (
	"net/http"
	"net/http/httputil"
	"net/url"
)

// BareProxyOptions configures NewBareProxy. The zero value is the plain
// baseline.
type BareProxyOptions struct {
	// IdleConnsPerHost, if positive, gives the proxy its own transport,
	// a clone of http.DefaultTransport keeping that many idle connections
	// to the target. Zero uses http.DefaultTransport itself, which keeps
	// only 2, so above 2 concurrent calls the proxy opens and closes
	// upstream connections all the time.
	IdleConnsPerHost int
}

// NewBareProxy returns the baseline the benchmark holds Sluice against: an
// httputil.ReverseProxy that sends every request to target (a base URL
// whose path is prefixed to the request's) with target's Host, and does
// nothing else: no body reads, no policy, no logging.
func NewBareProxy(target *url.URL, opts BareProxyOptions) http.Handler {
	p := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.Out.Host = target.Host
	}}
	if n := opts.IdleConnsPerHost; n > 0 {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConns, t.MaxIdleConnsPerHost = max(n, t.MaxIdleConns), n
		p.Transport = t
	}
	return p
}
