package gateway

import (
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// writeJSONRPCError answers an HTTP request with a JSON-RPC error body.
func writeJSONRPCError(w http.ResponseWriter, status int, id jsontext.Value, err error) {
	writeJSON(w, status, intercept.ErrorResponse(id, err))
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// checkHostOrigin refuses requests whose Host or Origin is not allowed:
// DNS-rebinding protection for a gateway on loopback. Loopback names are
// always allowed; others must be configured.
func (g *Gateway) checkHostOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.hostAllowed(r.Host) {
			writeJSONRPCError(w, http.StatusForbidden, nil, &intercept.WireError{Code: intercept.CodeInvalidRequest,
				Message: "forbidden: host " + r.Host + " is not allowed (see allowed_hosts)"})
			return
		}
		if !g.originAllowed(r) {
			writeJSONRPCError(w, http.StatusForbidden, nil, &intercept.WireError{Code: intercept.CodeInvalidRequest,
				Message: "forbidden: origin " + r.Header.Get("Origin") + " is not allowed (see allowed_origins)"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

func isLoopbackHost(h string) bool {
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(h, "[]"))
	return ip != nil && ip.IsLoopback()
}

func stripPort(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.Trim(hostport, "[]")
}

func (g *Gateway) hostAllowed(hostport string) bool {
	return HostAllowed(g.opts.AllowedHosts, hostport)
}

// HostAllowed reports whether a request may name hostport (a Host header,
// or what a proxy forwards as one) under Options.AllowedHosts allowed:
// a loopback name always, any with "*", else one listed with or without
// its port.
func HostAllowed(allowed []string, hostport string) bool {
	h := stripPort(hostport)
	if isLoopbackHost(h) {
		return true
	}
	return slices.Contains(allowed, "*") ||
		slices.ContainsFunc(allowed, func(a string) bool { return strings.EqualFold(a, h) || strings.EqualFold(a, hostport) })
}

func (g *Gateway) originAllowed(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true // not a browser
	}
	if slices.Contains(g.opts.AllowedOrigins, "*") || slices.Contains(g.opts.AllowedOrigins, o) {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && isLoopbackHost(u.Hostname())
}

// sizedReadMax bounds the buffer readBody makes from a declared length
// before any of the body has come: past it, the buffer grows as bytes
// arrive.
const sizedReadMax = 1 << 20

// readBody is io.ReadAll of a body that declares size bytes (-1: not
// said), read into one buffer of that size where io.ReadAll would start at
// 512 bytes and grow, a new buffer and a copy at each step, for every
// body longer than that. The declared size only sizes the buffer: what is
// returned is what r gave up to its end, as io.ReadAll's.
func readBody(r io.Reader, size int64) ([]byte, error) {
	if size < 0 {
		return io.ReadAll(r)
	}
	// One byte more, so that the read which finds the end needs no room.
	b := make([]byte, 0, min(size, sizedReadMax)+1)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}
