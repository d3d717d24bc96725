package transport

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"unicode"
)

// UpstreamErrorCode is the JSON-RPC error code of the responses that the
// HTTP client Conns make up themselves when an upstream fails a request at
// the HTTP level (an error status, an unreachable server, a stream that
// ended before the response), so that the caller never waits forever.
const UpstreamErrorCode = -32003

// An HTTPStatusError reports an error status that an upstream gave to a
// POST carrying no request, only notifications or responses, so there was
// no request id to answer with a JSON-RPC error; Write returns it.
type HTTPStatusError struct {
	// URL is the endpoint without credentials or query.
	URL string
	// StatusCode is the HTTP status code, e.g. 400.
	StatusCode int
	// Message is the JSON-RPC error message (or a short plain-text body)
	// of the response, or empty.
	Message string
}

func (e *HTTPStatusError) Error() string {
	s := fmt.Sprintf("transport: %s returned HTTP %d %s", e.URL, e.StatusCode, http.StatusText(e.StatusCode))
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// httpEnvelope holds the members of a JSON-RPC message that framing needs.
type httpEnvelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
}

func (e httpEnvelope) hasID() bool {
	return len(e.ID) > 0 && !bytes.Equal(e.ID, []byte("null"))
}

func (e httpEnvelope) isRequest() bool  { return e.Method != "" && e.hasID() }
func (e httpEnvelope) isResponse() bool { return e.Method == "" && e.hasID() }

// httpIDKey returns a comparable form of a JSON-RPC id.
func httpIDKey(id json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, id) != nil {
		return string(id)
	}
	return b.String()
}

// httpParseMessage decodes one message or a batch. Batch members that are
// not objects yield zero envelopes rather than an error: only a message
// that is not JSON at all, or not an object or array, is refused.
func httpParseMessage(msg []byte) (envs []httpEnvelope, batch bool, err error) {
	trimmed := bytes.TrimLeft(msg, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var raws []json.RawMessage
		if err := json.Unmarshal(msg, &raws); err != nil {
			return nil, true, err
		}
		envs = make([]httpEnvelope, len(raws))
		for i, raw := range raws {
			_ = json.Unmarshal(raw, &envs[i])
		}
		return envs, true, nil
	}
	var env httpEnvelope
	if err := json.Unmarshal(msg, &env); err != nil {
		return nil, false, err
	}
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, false, errors.New("not a JSON object or array")
	}
	return []httpEnvelope{env}, false, nil
}

// httpRequestIDs returns the ids of the requests among envs.
func httpRequestIDs(envs []httpEnvelope) []json.RawMessage {
	var ids []json.RawMessage
	for _, e := range envs {
		if e.isRequest() {
			ids = append(ids, e.ID)
		}
	}
	return ids
}

// httpErrorResponses builds the message answering each of ids with a
// JSON-RPC error: one response, or a batch of them when batch is set.
func httpErrorResponses(ids []json.RawMessage, batch bool, message string, data any) []byte {
	type rpcError struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    any    `json:"data,omitempty"`
	}
	type response struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   rpcError        `json:"error"`
	}
	rs := make([]response, len(ids))
	for i, id := range ids {
		rs[i] = response{JSONRPC: "2.0", ID: id, Error: rpcError{Code: UpstreamErrorCode, Message: message, Data: data}}
	}
	var b []byte
	var err error
	if batch {
		b, err = json.Marshal(rs)
	} else {
		b, err = json.Marshal(rs[0])
	}
	if err != nil {
		// Only data could fail to marshal, and callers pass plain values.
		panic("transport: marshalling an error response: " + err.Error())
	}
	return b
}

// httpStatusFailure describes an HTTP error response: the message for a
// made-up JSON-RPC error, and its data, which keeps the upstream's own
// JSON-RPC error object when the body had one.
func httpStatusFailure(endpoint string, resp *http.Response, body []byte) (*HTTPStatusError, map[string]any) {
	e := &HTTPStatusError{URL: endpoint, StatusCode: resp.StatusCode}
	data := map[string]any{"url": endpoint, "httpStatus": resp.StatusCode}
	var rpc struct {
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	var rawErr struct {
		Error json.RawMessage `json:"error"`
	}
	switch {
	case json.Unmarshal(body, &rpc) == nil && rpc.Error != nil:
		e.Message = rpc.Error.Message
		_ = json.Unmarshal(body, &rawErr)
		data["upstreamError"] = rawErr.Error
	case strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain"):
		e.Message = httpShortText(body)
	}
	return e, data
}

// httpShortText returns a one-line, printable excerpt of a plain-text body.
func httpShortText(b []byte) string {
	const max = 200
	s := strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return ' '
	}, string(b))
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > max {
		s = string(r[:max]) + "…"
	}
	return s
}

// httpRedactURL returns u without credentials, query or fragment, for use in
// messages that travel to the downstream client.
func httpRedactURL(u *url.URL) string {
	v := *u
	v.User, v.RawQuery, v.ForceQuery, v.Fragment, v.RawFragment = nil, "", false, "", ""
	return v.String()
}

// httpCause returns the cause of a failed request without the
// *url.Error wrapper, whose text repeats the full URL.
func httpCause(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// httpCopyHeader copies the values of src into dst.
func httpCopyHeader(dst, src http.Header) {
	for k, vs := range src {
		dst[k] = append([]string(nil), vs...)
	}
}
