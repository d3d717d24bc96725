package intercept

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// ReasonNotReadable is the reason code of a subscription refused because
// no read of a resource it names could be allowed to the client.
const ReasonNotReadable = "resource_not_readable"

// maxSubscribedURIs bounds the resources one subscriptions/listen names
// (each is decided with Readable).
const maxSubscribedURIs = 1000

// checkSubscription refuses m, a client's resources/subscribe (2025) or
// subscriptions/listen (2026-07-28), when it names a resource no read of
// which could be allowed to the client of cc (Readable), as its read
// would be refused: its updates, and what an upstream puts beside them,
// are about a resource the client may not see. Nil lets m go on. A
// virtual server leaves such a resource out of the subscriptions it
// opens on its upstreams, so they pass here; a client of a route is told
// which resource was refused and may subscribe without it.
func (i *Interceptor) checkSubscription(ctx context.Context, m *Message, cc CallContext) []byte {
	if m.Kind != KindRequest || (m.Method != "resources/subscribe" && m.Method != "subscriptions/listen") {
		return nil
	}
	uris, err := subscribedURIs(m)
	if err != nil {
		return ErrorResponse(m.ID, &WireError{Code: CodeInvalidParams, Message: "invalid params: " + m.Method + ": " + err.Error()})
	}
	var refused []string
	first := ""
	for _, uri := range uris {
		if !i.Readable(ctx, cc, uri) {
			refused = append(refused, fmt.Sprintf("%q", uri))
			if first == "" {
				first = uri
			}
		}
	}
	if len(refused) == 0 {
		return nil
	}
	what := "resource " + refused[0]
	if len(refused) > 1 {
		what = "resources " + strings.Join(refused, ", ")
	}
	dec := Decision{Verdict: Deny, Reason: ReasonNotReadable,
		PublicReason: m.Method + " refused: no read of " + what + " is allowed to this client, and so no subscription to its updates"}
	// On record as a denied read of the (first) resource would be.
	d := askedDescriptor(ctx, cc, m.Method, ResourcePrefix+first)
	d.TxnID, d.Parameters = NewTxnID(), m.Params
	if i.OnDecision != nil {
		i.OnDecision(d, dec)
	}
	return renderDecision(m.ID, dec, d.TxnID, cc.ProtocolVersion, false)
}

// subscribedURIs returns the resources m, a resources/subscribe or a
// subscriptions/listen, subscribes to, read as an upstream reading names
// case-insensitively (Go's encoding/json) would: a member spelt as one
// the gateway reads in another case is refused.
func subscribedURIs(m *Message) ([]string, error) {
	if m.Method == "resources/subscribe" {
		// A case variant of uri was refused at decoding (callKeys).
		uri := Member(m.Params, "uri")
		if uri == nil {
			// Names no resource: the upstream answers it (a 2026-07-28
			// server has no resources/subscribe, and says so with 404
			// and -32601, which the conformance suite checks).
			return nil, nil
		}
		if uri.Kind() != '"' || stringOf(uri) == "" {
			return nil, fmt.Errorf("uri must be a non-empty string")
		}
		return []string{stringOf(uri)}, nil
	}
	if why, found := CaseVariant(m.Params, []string{"notifications"}); found {
		return nil, fmt.Errorf("%s", why)
	}
	n := Member(m.Params, "notifications")
	if n.Kind() != '{' {
		return nil, nil // asks for no resource
	}
	if why, found := CaseVariant(n, []string{"resourceSubscriptions"}); found {
		return nil, fmt.Errorf("notifications: %s", why)
	}
	list := Member(n, "resourceSubscriptions")
	if list == nil || list.Kind() == 'n' {
		return nil, nil
	}
	if list.Kind() != '[' {
		return nil, fmt.Errorf("notifications.resourceSubscriptions must be an array of URIs")
	}
	var vals []jsontext.Value
	if err := json.Unmarshal(list, &vals); err != nil {
		return nil, fmt.Errorf("notifications.resourceSubscriptions: %v", err)
	}
	if len(vals) > maxSubscribedURIs {
		return nil, fmt.Errorf("%d resource subscriptions, more than the %d one subscription may name", len(vals), maxSubscribedURIs)
	}
	uris := make([]string, len(vals))
	for k, v := range vals {
		if v.Kind() != '"' {
			return nil, fmt.Errorf("notifications.resourceSubscriptions must be an array of URIs")
		}
		uris[k] = stringOf(v)
	}
	return uris, nil
}
