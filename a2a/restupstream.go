package a2a

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/intercept"
)

// An agent whose card offers only the A2A 1.0 HTTP+JSON (REST) binding is
// still served on the gateway's JSON-RPC endpoint (and its /rest one): the
// call is decided as the JSON-RPC request it is, then sent to the agent as
// the REST request of the same method, and the agent's answer is turned
// back into JSON-RPC before anything else reads it — the inverse of
// rest.go. A 0.3 client cannot be served this way (0.3 has no such
// binding to translate to) and is told so.

// restCall is the HTTP+JSON request for an A2A 1.0 JSON-RPC method: its
// HTTP method, path (with query) under the interface URL, body, and
// whether the answer is an event stream.
func restCall(method string, params jsontext.Value) (verb, path string, body []byte, stream bool, err error) {
	p := map[string]jsontext.Value{}
	if len(params) > 0 && string(params) != "null" {
		if err := json.Unmarshal(params, &p); err != nil {
			return "", "", nil, false, fmt.Errorf("params of %s: %v", method, err)
		}
	}
	str := func(k string) string {
		var s string
		_ = json.Unmarshal(p[k], &s)
		return s
	}
	// seg escapes a path segment; "." and ".." would move the request
	// elsewhere on the agent's origin once the path is cleaned.
	var bad string
	seg := func(v string) string {
		if v == "." || v == ".." {
			bad = v
		}
		return url.PathEscape(v)
	}
	prefix := ""
	if t := str("tenant"); t != "" {
		prefix = "/" + seg(t)
	}
	delete(p, "tenant")
	// query turns the named scalar params into a query string.
	query := func(keys ...string) string {
		q := url.Values{}
		for _, k := range keys {
			v, ok := p[k]
			if !ok {
				continue
			}
			var s string
			if json.Unmarshal(v, &s) != nil {
				s = string(v) // a number or a boolean, as written
			}
			q.Set(k, s)
		}
		if len(q) == 0 {
			return ""
		}
		return "?" + q.Encode()
	}
	rest := func() []byte {
		if len(p) == 0 {
			return nil
		}
		b, _ := json.Marshal(p, json.Deterministic(true))
		return b
	}
	task := func(k string) (string, error) {
		id := str(k)
		if id == "" || id == "." || id == ".." {
			return "", &intercept.WireError{Code: intercept.CodeInvalidParams, Message: fmt.Sprintf("%s needs a valid params.%s", method, k)}
		}
		delete(p, k)
		return "/tasks/" + seg(id), nil
	}
	if bad != "" {
		return "", "", nil, false, &intercept.WireError{Code: intercept.CodeInvalidParams, Message: fmt.Sprintf("%s: %q is not a valid tenant", method, bad)}
	}
	switch method {
	case "SendMessage":
		return http.MethodPost, prefix + "/message:send", rest(), false, nil
	case "SendStreamingMessage":
		return http.MethodPost, prefix + "/message:stream", rest(), true, nil
	case "GetExtendedAgentCard":
		return http.MethodGet, prefix + "/extendedAgentCard", nil, false, nil
	case "ListTasks":
		return http.MethodGet, prefix + "/tasks" + query("contextId", "status", "pageSize", "pageToken", "historyLength", "statusTimestampAfter", "includeArtifacts"), nil, false, nil
	case "GetTask", "CancelTask", "SubscribeToTask":
		t, err := task("id")
		if err != nil {
			return "", "", nil, false, err
		}
		switch method {
		case "GetTask":
			return http.MethodGet, prefix + t + query("historyLength"), nil, false, nil
		case "CancelTask":
			return http.MethodPost, prefix + t + ":cancel", rest(), false, nil
		}
		return http.MethodPost, prefix + t + ":subscribe", nil, true, nil
	case "CreateTaskPushNotificationConfig", "ListTaskPushNotificationConfigs", "ListTaskPushNotificationConfig",
		"GetTaskPushNotificationConfig", "DeleteTaskPushNotificationConfig":
		t, err := task("taskId")
		if err != nil {
			return "", "", nil, false, err
		}
		t += "/pushNotificationConfigs"
		switch method {
		case "CreateTaskPushNotificationConfig":
			return http.MethodPost, prefix + t, rest(), false, nil
		case "ListTaskPushNotificationConfigs", "ListTaskPushNotificationConfig":
			return http.MethodGet, prefix + t + query("pageSize", "pageToken"), nil, false, nil
		}
		id := str("id")
		if id == "" {
			return "", "", nil, false, fmt.Errorf("%s needs params.id", method)
		}
		if id = seg(id); bad != "" {
			return "", "", nil, false, &intercept.WireError{Code: intercept.CodeInvalidParams, Message: fmt.Sprintf("%s: %q is not a valid id", method, bad)}
		}
		if method == "GetTaskPushNotificationConfig" {
			return http.MethodGet, prefix + t + "/" + id, nil, false, nil
		}
		return http.MethodDelete, prefix + t + "/" + id, nil, false, nil
	}
	return "", "", nil, false, &intercept.WireError{Code: intercept.CodeMethodNotFound, Message: method + " has no HTTP+JSON form"}
}

// restReasons maps A2A ErrorInfo reasons to JSON-RPC error codes.
var restReasons = map[string]int{
	"TASK_NOT_FOUND":                     codeTaskNotFound,
	"TASK_NOT_CANCELABLE":                -32002,
	"PUSH_NOTIFICATION_NOT_SUPPORTED":    -32003,
	"UNSUPPORTED_OPERATION":              codeUnsupportedOperation,
	"CONTENT_TYPE_NOT_SUPPORTED":         -32005,
	"INVALID_AGENT_RESPONSE":             -32006,
	"EXTENDED_AGENT_CARD_NOT_CONFIGURED": -32007,
	"VERSION_NOT_SUPPORTED":              codeVersionNotSupported,
}

// restStatusBody is a google.rpc.Status error body.
type restStatusBody struct {
	Error *struct {
		Code    int    `json:"code"`
		Status  string `json:"status"`
		Message string `json:"message"`
		Details []struct {
			Reason string `json:"reason"`
		} `json:"details"`
	} `json:"error"`
}

// restErrorRPC turns an agent's REST error (HTTP status and body) into a
// JSON-RPC error object.
func restErrorRPC(status int, body []byte) *intercept.WireError {
	var s restStatusBody
	_ = json.Unmarshal(body, &s)
	we := &intercept.WireError{Code: intercept.CodeInternalError, Message: fmt.Sprintf("agent answered HTTP %d", status)}
	if s.Error == nil {
		return we
	}
	if s.Error.Message != "" {
		we.Message = s.Error.Message
	}
	for _, d := range s.Error.Details {
		if c, ok := restReasons[d.Reason]; ok {
			we.Code = c
			return we
		}
	}
	switch {
	case s.Error.Status == "NOT_FOUND" || status == http.StatusNotFound:
		we.Code = codeTaskNotFound
	case s.Error.Status == "INVALID_ARGUMENT" || status == http.StatusBadRequest:
		we.Code = intercept.CodeInvalidParams
	case s.Error.Status == "UNIMPLEMENTED":
		we.Code = codeUnsupportedOperation
	}
	return we
}

// restToRPC turns an agent's REST answer into the JSON-RPC answer to id,
// in place: a body becomes the result, an error the error, and a stream's
// events JSON-RPC responses (an "error" event an error response), event by
// event as they come. limit bounds a non-stream body and an event.
func restToRPC(resp *http.Response, id jsontext.Value, limit int64) error {
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		pr, pw := io.Pipe()
		src := resp.Body
		resp.Body = struct {
			io.Reader
			io.Closer
		}{pr, closers{pr, src}}
		go func() { pw.CloseWithError(translateEvents(pw, src, id, limit)) }()
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	resp.Body.Close()
	if err != nil {
		return err
	}
	if int64(len(b)) > limit {
		return fmt.Errorf("answer larger than %d bytes", limit)
	}
	var out []byte
	if resp.StatusCode/100 == 2 {
		result := jsontext.Value(bytes.TrimSpace(b))
		if len(result) == 0 {
			result = jsontext.Value(`{}`) // 204: DeleteTaskPushNotificationConfig
		}
		if !result.IsValid() {
			return errors.New("its answer is not JSON")
		}
		out, err = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": result}, json.Deterministic(true))
		if err != nil {
			return err
		}
	} else {
		out = intercept.ErrorResponse(id, restErrorRPC(resp.StatusCode, b))
	}
	resp.StatusCode = http.StatusOK
	resp.Header = http.Header{"Content-Type": {"application/json"}}
	resp.ContentLength = int64(len(out))
	resp.Body = io.NopCloser(bytes.NewReader(out))
	return nil
}

type closers []io.Closer

func (c closers) Close() error {
	for _, x := range c {
		x.Close()
	}
	return nil
}

// translateEvents copies an HTTP+JSON event stream to w as JSON-RPC
// events answering id; an event whose data is longer than limit ends it
// with an error.
func translateEvents(w io.Writer, r io.Reader, id jsontext.Value, limit int64) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var data []byte
	kind := ""
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) && int64(len(long)) <= limit {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		trimmed := bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0:
		case len(trimmed) == 0 && len(data) > 0: // end of an event
			var msg []byte
			if kind == "error" {
				msg = intercept.ErrorResponse(id, restErrorRPC(http.StatusInternalServerError, data))
			} else {
				m, merr := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": jsontext.Value(data)}, json.Deterministic(true))
				if merr != nil {
					msg = intercept.ErrorResponse(id, &intercept.WireError{Code: intercept.CodeInternalError, Message: "agent sent an event that is not JSON"})
				} else {
					msg = m
				}
			}
			if _, werr := fmt.Fprintf(w, "data: %s\n\n", msg); werr != nil {
				return werr
			}
			data, kind = data[:0], ""
		case bytes.HasPrefix(trimmed, []byte("data:")):
			data = append(data, bytes.TrimPrefix(trimmed[5:], []byte(" "))...)
		case bytes.HasPrefix(trimmed, []byte("event:")):
			kind = strings.TrimSpace(string(trimmed[6:]))
		}
		if int64(len(data)) > limit {
			return fmt.Errorf("event larger than %d bytes, the most the gateway reads", limit)
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// restAccept is what the gateway accepts from a REST agent.
func restAccept(stream bool) string {
	if stream {
		return "text/event-stream"
	}
	return "application/a2a+json, application/json"
}
