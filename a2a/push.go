package a2a

import (
	"context"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/sluicehq/sluice/intercept"
)

// Push notifications: without the relay (Options.PushRelay,
// pushrelay.go), the agent POSTs each update of a task straight to the
// URL its caller registered (a push config: message/send's
// configuration.pushNotificationConfig, tasks/pushNotificationConfig/set,
// CreateTaskPushNotificationConfig, REST POST
// /tasks/{id}/pushNotificationConfigs), for as long as the agent keeps the
// config. So the gateway can check the URL when it is registered
// (checkPushURLs), but cannot withhold a push once the caller's
// credential stops holding (an API key revoked, a token expired), as it
// withholds a stream's events and an answer (intercept.Principal.Gone).
// Without the relay, a caller whose credential can stop holding therefore
// registers no push config: the request is refused with
// PushNotificationNotSupported (-32003; 400 PUSH_NOTIFICATION_NOT_SUPPORTED
// on REST), and the caller polls (tasks/get) or subscribes (message/stream,
// tasks/resubscribe) through the gateway instead. Getting, listing and
// deleting configs stays open, so a caller can remove one it registered
// before. With the relay, the agent is given the gateway's URL instead,
// and the gateway delivers each push while the credential holds.

// codePushNotSupported is A2A's PushNotificationNotSupportedError.
const codePushNotSupported = -32003

// registersPush reports whether a request of method with params
// registers a push config with the agent.
func registersPush(method string, params jsontext.Value) bool {
	switch method {
	case "tasks/pushNotificationConfig/set", "CreateTaskPushNotificationConfig":
		return true
	}
	spec, ok := methods[method]
	if !ok || spec.kind != send {
		return false
	}
	// A message's configuration registers one in pushNotificationConfig
	// (1.0's taskPushNotificationConfig, as @a2a-js/sdk sends it; snake
	// case for Python agents; whatever a later version calls it):
	// any member naming a push, and any URL, which nothing else there
	// carries (checkPushURLs reads every one as a push URL).
	conf := intercept.Member(params, "configuration")
	if conf.Kind() != '{' {
		return false
	}
	found := false
	_ = intercept.EachMember(conf, func(name string, v jsontext.Value) error {
		if strings.Contains(strings.ToLower(name), "push") && !intercept.EmptyValue(v) {
			found = true
		}
		return nil
	})
	walkStrings(conf, "", func(key, _ string) {
		if strings.EqualFold(key, "url") {
			found = true
		}
	})
	return found
}

// ungovernedPush refuses a push config registered for the principal in
// ctx if its credential can stop holding: the gateway could not stop the
// agent's pushes then. A request without a credential, or one that
// cannot lapse, has nothing to lose.
func ungovernedPush(ctx context.Context) error {
	p := intercept.PrincipalFrom(ctx)
	if p == nil || (p.Check == nil && p.Expires.IsZero()) {
		return nil
	}
	return &intercept.WireError{Code: codePushNotSupported,
		Message: "push notifications are not supported through the gateway for a caller authenticated with a credential: the agent would deliver them straight to the URL, past the gateway, which could not stop them once the credential no longer holds; poll tasks/get or subscribe (message/stream, tasks/resubscribe) instead"}
}

// unknownRegistersPush reports whether params of a method the gateway
// does not know (Options.AllowUnknownMethods) may register a push
// config: agents take one under names the gateway's table lacks (drafts'
// SetTaskPushNotificationConfig, a .../create alias, another case), so
// any member naming a push, a webhook or a callback, any URL or URI
// member, and any string holding a URL counts.
func unknownRegistersPush(params jsontext.Value) bool {
	found := false
	walkStrings(params, "", func(key, s string) {
		k := strings.ToLower(key)
		for _, w := range []string{"push", "webhook", "callback", "url", "uri"} {
			if strings.Contains(k, w) {
				found = true
			}
		}
		if strings.Contains(s, "://") || webURL(s) != "" {
			found = true
		}
	})
	return found
}

// webURL is s as a WHATWG URL parser (Node's, a browser's) reads it
// when it is an http(s) URL, written so that url.Parse reads the same
// host; "" when s is not one. Such parsers drop leading and trailing
// spaces and control characters and every tab and newline, take any case
// of the scheme, a backslash for a slash and any number of slashes
// (none too) after it: " HT\ttPs:evil.example" is https://evil.example.
func webURL(s string) string {
	s = strings.Trim(s, "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f ")
	if strings.ContainsAny(s, "\t\n\r") {
		s = strings.NewReplacer("\t", "", "\n", "", "\r", "").Replace(s)
	}
	scheme, rest, ok := strings.Cut(s, ":")
	if !ok {
		return ""
	}
	scheme = strings.ToLower(scheme)
	if scheme != "http" && scheme != "https" {
		return ""
	}
	rest = strings.TrimLeft(strings.ReplaceAll(rest, `\`, "/"), "/")
	// No host, or one with a space (which such a parser refuses): not a
	// URL anything fetches, such as "HTTPS: required".
	if host, _, _ := strings.Cut(rest, "/"); host == "" || strings.ContainsAny(host, " ") {
		return ""
	}
	return scheme + "://" + rest
}
