package a2a

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// The A2A 1.0 HTTP+JSON (REST) binding, served at /a2a/{name}/rest when
// the agent's card offers it. Each REST request is the JSON-RPC request of
// the same method, so it is decided, forwarded and recorded exactly as one
// (by the JSON-RPC path, to the agent's JSON-RPC interface), and the answer
// is turned back into REST: a result is the body, a JSON-RPC error an HTTP
// error with a google.rpc.Status body, a stream's events their results.

// restRoute maps a REST request to its JSON-RPC method and params; ok is
// false for a path the binding does not have.
func restRoute(r *http.Request, body []byte) (method string, params map[string]any, ok bool) {
	rest := strings.TrimPrefix(r.PathValue("rest"), "/")
	params = map[string]any{}
	if len(bytes.TrimSpace(body)) > 0 {
		if json.Unmarshal(body, &params) != nil {
			return "", nil, false
		}
	}
	q := r.URL.Query()
	for k, vs := range q {
		if len(vs) == 0 {
			continue
		}
		if n, err := strconv.Atoi(vs[0]); err == nil {
			params[k] = n
		} else if b, err := strconv.ParseBool(vs[0]); err == nil && (k == "includeArtifacts" || k == "returnImmediately") {
			params[k] = b
		} else {
			params[k] = vs[0]
		}
	}
	get, post, del := r.Method == http.MethodGet, r.Method == http.MethodPost, r.Method == http.MethodDelete
	switch {
	case post && rest == "message:send":
		return "SendMessage", params, true
	case post && rest == "message:stream":
		return "SendStreamingMessage", params, true
	case get && rest == "extendedAgentCard":
		return "GetExtendedAgentCard", params, true
	case get && rest == "tasks":
		return "ListTasks", params, true
	}
	seg := strings.Split(rest, "/")
	if len(seg) < 2 || seg[0] != "tasks" || seg[1] == "" {
		return "", nil, false
	}
	id, verb, _ := strings.Cut(seg[1], ":")
	params["id"] = id
	switch {
	case len(seg) == 2 && verb == "" && get:
		return "GetTask", params, true
	case len(seg) == 2 && verb == "cancel" && post:
		return "CancelTask", params, true
	case len(seg) == 2 && verb == "subscribe" && (get || post):
		return "SubscribeToTask", params, true
	case len(seg) >= 3 && verb == "" && seg[2] == "pushNotificationConfigs":
		delete(params, "id")
		params["taskId"] = id
		switch {
		case len(seg) == 3 && post:
			return "CreateTaskPushNotificationConfig", params, true
		case len(seg) == 3 && get:
			return "ListTaskPushNotificationConfigs", params, true
		case len(seg) == 4 && get:
			params["id"] = seg[3]
			return "GetTaskPushNotificationConfig", params, true
		case len(seg) == 4 && del:
			params["id"] = seg[3]
			return "DeleteTaskPushNotificationConfig", params, true
		}
	}
	return "", nil, false
}

func (g *Gateway) serveREST(w http.ResponseWriter, r *http.Request) {
	a := g.agent(w, r)
	if a == nil {
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, g.opts.MaxBody))
	if err != nil {
		restError(w, http.StatusRequestEntityTooLarge, "INVALID_ARGUMENT", "", "reading the request: "+err.Error(), nil)
		return
	}
	if !g.offersREST(r, a) {
		restError(w, http.StatusNotFound, "NOT_FOUND", "", "agent "+a.Name+" offers no HTTP+JSON interface", nil)
		return
	}
	method, params, ok := restRoute(r, body)
	if !ok {
		restError(w, http.StatusNotFound, "NOT_FOUND", "", r.Method+" "+r.URL.Path+" is not an A2A HTTP+JSON route (or its body is not a JSON object)", nil)
		return
	}
	rpc, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if err != nil {
		restError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "", err.Error(), nil)
		return
	}
	inner := r.Clone(r.Context())
	inner.Method = http.MethodPost
	inner.Body = io.NopCloser(bytes.NewReader(rpc))
	inner.ContentLength = int64(len(rpc))
	inner.Header.Set("Content-Type", "application/json")
	inner.Header.Set("A2A-Version", "1.0")
	inner.SetPathValue("name", a.Name)
	tw := &restWriter{w: w, h: http.Header{}}
	g.serveRPC(tw, inner)
	tw.finish()
}

// offersREST reports whether the agent's (1.0) card offers HTTP+JSON.
func (g *Gateway) offersREST(r *http.Request, a *agent) bool {
	card, err := g.card(r.Context(), a, true)
	if err != nil {
		return false
	}
	var c struct {
		SupportedInterfaces []struct {
			ProtocolBinding string `json:"protocolBinding"`
		} `json:"supportedInterfaces"`
	}
	if json.Unmarshal(card, &c) != nil {
		return false
	}
	for _, i := range c.SupportedInterfaces {
		if strings.EqualFold(i.ProtocolBinding, "HTTP+JSON") {
			return true
		}
	}
	return false
}

// restStatus maps a JSON-RPC error code to an HTTP status, a
// google.rpc.Code name and an A2A ErrorInfo reason.
func restStatus(code int) (int, string, string) {
	switch code {
	case codeTaskNotFound:
		return http.StatusNotFound, "NOT_FOUND", "TASK_NOT_FOUND"
	case -32002:
		return http.StatusConflict, "FAILED_PRECONDITION", "TASK_NOT_CANCELABLE"
	case -32003:
		return http.StatusBadRequest, "UNIMPLEMENTED", "PUSH_NOTIFICATION_NOT_SUPPORTED"
	case codeUnsupportedOperation:
		return http.StatusBadRequest, "UNIMPLEMENTED", "UNSUPPORTED_OPERATION"
	case codeVersionNotSupported:
		return http.StatusBadRequest, "INVALID_ARGUMENT", "VERSION_NOT_SUPPORTED"
	case codePolicyDenied:
		return http.StatusForbidden, "PERMISSION_DENIED", ""
	case codeApprovalRequired:
		return http.StatusForbidden, "PERMISSION_DENIED", ""
	case -32601:
		return http.StatusNotFound, "UNIMPLEMENTED", ""
	case -32602, -32600, -32700:
		return http.StatusBadRequest, "INVALID_ARGUMENT", ""
	}
	return http.StatusInternalServerError, "INTERNAL", ""
}

// restError writes a google.rpc.Status error body; data (the gateway's
// envelope of a denial, if any) goes into an ErrorInfo of Sluice's domain.
func restError(w http.ResponseWriter, status int, code, reason, msg string, data jsontext.Value) {
	var details []any
	if reason != "" {
		details = append(details, map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason, "domain": "a2a-protocol.org"})
	}
	if len(data) > 0 && string(data) != "null" {
		details = append(details, map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "SLUICE_DECISION", "domain": "sluice", "metadata": map[string]any{"envelope": string(data)}})
	}
	e := map[string]any{"code": status, "status": code, "message": msg}
	if details != nil {
		e["details"] = details
	}
	b, _ := json.Marshal(map[string]any{"error": e}, json.Deterministic(true))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// rpcAnswer is a JSON-RPC response as the REST side reads it.
type rpcAnswer struct {
	Result jsontext.Value `json:"result"`
	Error  *struct {
		Code    int            `json:"code"`
		Message string         `json:"message"`
		Data    jsontext.Value `json:"data"`
	} `json:"error"`
}

// restWriter takes what the JSON-RPC path writes and writes it to w as
// REST: a JSON answer when it is complete (finish), an SSE stream event by
// event.
type restWriter struct {
	w       http.ResponseWriter
	h       http.Header
	status  int
	stream  bool
	started bool
	body    bytes.Buffer
	line    []byte
	data    []byte
}

func (t *restWriter) Header() http.Header { return t.h }

func (t *restWriter) WriteHeader(code int) {
	if t.started {
		return
	}
	t.started, t.status = true, code
	if strings.HasPrefix(t.h.Get("Content-Type"), "text/event-stream") {
		t.stream = true
		for k, v := range t.h {
			t.w.Header()[k] = v
		}
		t.w.WriteHeader(code)
	}
}

func (t *restWriter) Write(p []byte) (int, error) {
	t.WriteHeader(http.StatusOK)
	if !t.stream {
		return t.body.Write(p)
	}
	for _, c := range p {
		if c != '\n' {
			t.line = append(t.line, c)
			continue
		}
		line := bytes.TrimSuffix(t.line, []byte("\r"))
		t.line = t.line[:0]
		switch {
		case len(line) == 0:
			if len(t.data) > 0 {
				if err := t.event(t.data); err != nil {
					return 0, err
				}
				t.data = t.data[:0]
			}
		case bytes.HasPrefix(line, []byte("data:")):
			t.data = append(t.data, bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))...)
		}
	}
	return len(p), nil
}

// event writes one stream event: its result, or its error as an "error"
// event.
func (t *restWriter) event(data []byte) error {
	var ans rpcAnswer
	if json.Unmarshal(data, &ans) != nil {
		return nil
	}
	var err error
	if ans.Error != nil {
		status, code, reason := restStatus(ans.Error.Code)
		e := map[string]any{"code": status, "status": code, "message": ans.Error.Message}
		if reason != "" {
			e["details"] = []any{map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason, "domain": "a2a-protocol.org"}}
		}
		b, _ := json.Marshal(map[string]any{"error": e}, json.Deterministic(true))
		_, err = io.WriteString(t.w, "event: error\ndata: "+string(b)+"\n\n")
	} else {
		_, err = io.WriteString(t.w, "data: "+string(ans.Result)+"\n\n")
	}
	if err == nil {
		err = http.NewResponseController(t.w).Flush()
	}
	return err
}

func (t *restWriter) Flush() {
	if t.stream {
		_ = http.NewResponseController(t.w).Flush()
	}
}

// finish writes a non-stream answer.
func (t *restWriter) finish() {
	if t.stream {
		return
	}
	var ans rpcAnswer
	if err := json.Unmarshal(t.body.Bytes(), &ans); err != nil {
		restError(t.w, http.StatusBadGateway, "INTERNAL", "", "the agent's answer is not JSON-RPC", nil)
		return
	}
	if ans.Error != nil {
		status, code, reason := restStatus(ans.Error.Code)
		data := ans.Error.Data
		if ans.Error.Code != codePolicyDenied && ans.Error.Code != codeApprovalRequired {
			data = nil // only a denial's or a hold's is the gateway's envelope
		}
		restError(t.w, status, code, reason, ans.Error.Message, data)
		return
	}
	t.w.Header().Set("Content-Type", "application/json")
	t.w.WriteHeader(http.StatusOK)
	_, _ = t.w.Write(ans.Result)
}
