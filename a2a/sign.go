package a2a

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/sluicehq/sluice/internal/jcs"
)

// Agent card signatures (A2A: a JWS over the card's canonical JSON, the
// card without its signatures). The canonical form is the one the
// @a2a-js/sdk signs and verifies: the card read as the v1.0 AgentCard
// message (unknown members dropped, snake_case names read as camelCase,
// proto3 defaults left out), then every empty string, list and object
// removed, then RFC 8785. A gateway that rewrites the card's URLs breaks
// the upstream's signatures, so Sluice verifies them and signs the card it
// serves with its own key, published at /a2a/.well-known/jwks.json.

// fieldKind says how a card member is read.
type fieldKind uint8

const (
	fScalar  fieldKind = iota // string, number, optional bool: kept as is
	fBool                     // a bool whose default (false) is left out
	fList                     // list of scalars
	fObjects                  // list of objects of type t
	fObject                   // object of type t
	fMap                      // object whose values are objects of type t ("" : scalars)
	fFree                     // any JSON, kept as is (extension params, JWS header)
)

type field struct {
	kind fieldKind
	t    string
}

// cardSchema is the v1.0 AgentCard message and the messages in it, as
// @a2a-js/sdk 1.x reads them (its generated AgentCard.fromJSON).
var cardSchema = map[string]map[string]field{
	"AgentCard": {"name": {}, "description": {}, "supportedInterfaces": {fObjects, "AgentInterface"}, "provider": {fObject, "AgentProvider"},
		"version": {}, "documentationUrl": {}, "capabilities": {fObject, "AgentCapabilities"}, "securitySchemes": {fMap, "SecurityScheme"},
		"securityRequirements": {fObjects, "SecurityRequirement"}, "defaultInputModes": {kind: fList}, "defaultOutputModes": {kind: fList},
		"skills": {fObjects, "AgentSkill"}, "signatures": {fObjects, "AgentCardSignature"}, "iconUrl": {}},
	"AgentInterface":    {"url": {}, "protocolBinding": {}, "tenant": {}, "protocolVersion": {}},
	"AgentProvider":     {"url": {}, "organization": {}},
	"AgentCapabilities": {"streaming": {}, "pushNotifications": {}, "extensions": {fObjects, "AgentExtension"}, "extendedAgentCard": {}},
	"AgentExtension":    {"uri": {}, "description": {}, "required": {kind: fBool}, "params": {kind: fFree}},
	"AgentSkill": {"id": {}, "name": {}, "description": {}, "tags": {kind: fList}, "examples": {kind: fList}, "inputModes": {kind: fList},
		"outputModes": {kind: fList}, "securityRequirements": {fObjects, "SecurityRequirement"}},
	"AgentCardSignature":          {"protected": {}, "signature": {}, "header": {kind: fFree}},
	"SecurityRequirement":         {"schemes": {fMap, "StringList"}},
	"StringList":                  {"list": {kind: fList}},
	"APIKeySecurityScheme":        {"description": {}, "location": {}, "name": {}},
	"HTTPAuthSecurityScheme":      {"description": {}, "scheme": {}, "bearerFormat": {}},
	"OAuth2SecurityScheme":        {"description": {}, "flows": {fObject, "OAuthFlows"}, "oauth2MetadataUrl": {}},
	"OpenIdConnectSecurityScheme": {"description": {}, "openIdConnectUrl": {}},
	"MutualTlsSecurityScheme":     {"description": {}},
	"AuthorizationCodeOAuthFlow":  {"authorizationUrl": {}, "tokenUrl": {}, "refreshUrl": {}, "scopes": {kind: fMap}, "pkceRequired": {kind: fBool}},
	"ClientCredentialsOAuthFlow":  {"tokenUrl": {}, "refreshUrl": {}, "scopes": {kind: fMap}},
	"ImplicitOAuthFlow":           {"authorizationUrl": {}, "refreshUrl": {}, "scopes": {kind: fMap}},
	"PasswordOAuthFlow":           {"tokenUrl": {}, "refreshUrl": {}, "scopes": {kind: fMap}},
	"DeviceCodeOAuthFlow":         {"deviceAuthorizationUrl": {}, "tokenUrl": {}, "refreshUrl": {}, "scopes": {kind: fMap}},
}

// cardOneofs are the messages that hold one of several members, in the
// order the SDK tries them.
var cardOneofs = map[string][][2]string{
	"SecurityScheme": {{"apiKeySecurityScheme", "APIKeySecurityScheme"}, {"httpAuthSecurityScheme", "HTTPAuthSecurityScheme"},
		{"oauth2SecurityScheme", "OAuth2SecurityScheme"}, {"openIdConnectSecurityScheme", "OpenIdConnectSecurityScheme"},
		{"mtlsSecurityScheme", "MutualTlsSecurityScheme"}},
	"OAuthFlows": {{"authorizationCode", "AuthorizationCodeOAuthFlow"}, {"clientCredentials", "ClientCredentialsOAuthFlow"},
		{"implicit", "ImplicitOAuthFlow"}, {"password", "PasswordOAuthFlow"}, {"deviceCode", "DeviceCodeOAuthFlow"}},
}

// snake is the snake_case spelling the SDK also accepts.
func snake(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

func member(m map[string]any, name string) (any, bool) {
	if v, ok := m[name]; ok && v != nil {
		return v, true
	}
	v, ok := m[snake(name)]
	return v, ok && v != nil
}

// normalize reads v as a message of type t.
func normalize(v any, t string) any {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	out := map[string]any{}
	if alts, ok := cardOneofs[t]; ok {
		for _, alt := range alts {
			if x, ok := member(m, alt[0]); ok {
				out[alt[0]] = normalize(x, alt[1])
				break
			}
		}
		return out
	}
	for name, f := range cardSchema[t] {
		x, ok := member(m, name)
		if !ok {
			continue
		}
		switch f.kind {
		case fScalar, fFree, fList:
			out[name] = x
		case fBool:
			if b, ok := x.(bool); !ok || b {
				out[name] = x
			}
		case fObjects:
			xs, _ := x.([]any)
			var l []any
			for _, e := range xs {
				l = append(l, normalize(e, f.t))
			}
			out[name] = l
		case fObject:
			out[name] = normalize(x, f.t)
		case fMap:
			xm, _ := x.(map[string]any)
			mm := map[string]any{}
			for k, e := range xm {
				if f.t == "" {
					mm[k] = e
				} else {
					mm[k] = normalize(e, f.t)
				}
			}
			out[name] = mm
		}
	}
	return out
}

// cleanEmpty drops empty strings, nulls, and lists and objects that are
// or become empty, as the SDK does before it serialises.
func cleanEmpty(v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case string:
		if x == "" {
			return nil
		}
		return x
	case []any:
		var l []any
		for _, e := range x {
			if c := cleanEmpty(e); c != nil {
				l = append(l, c)
			}
		}
		if len(l) == 0 {
			return nil
		}
		return l
	case map[string]any:
		m := map[string]any{}
		for k, e := range x {
			if c := cleanEmpty(e); c != nil {
				m[k] = c
			}
		}
		if len(m) == 0 {
			return nil
		}
		return m
	}
	return v
}

// signedContent is what a card's signatures cover: the card read as the
// 1.0 AgentCard, without its signatures and empty values.
func signedContent(card map[string]any) map[string]any {
	n, _ := normalize(card, "AgentCard").(map[string]any)
	delete(n, "signatures")
	c, _ := cleanEmpty(n).(map[string]any)
	if c == nil {
		c = map[string]any{}
	}
	return c
}

// signedView is card as far as verified signatures vouch for it, covered
// being what they cover (signedContent of the card that verified): with
// require_signed_card the gateway serves nothing else under its own
// signature. Each member is taken from covered, except the 0.3
// interfaces (url, preferredTransport, additionalInterfaces), which the
// gateway rewrites to itself, and empty members, which say nothing. A
// 0.3 client reads some members in another shape than 1.0's, so for it
// they are spelt from what covered says: the security schemes and
// requirements, the extended card flag; its protocolVersion is the 0.3
// the gateway speaks to it. A 0.3 member nothing signed (a scheme only in
// the 0.3 shape, which the 1.0 form does not read) is left out.
func signedView(card, covered map[string]any, v1 bool) map[string]any {
	out := covered
	for k, v := range card {
		switch k {
		case "url", "preferredTransport", "additionalInterfaces":
			out[k] = v
		default:
			if _, ok := out[k]; !ok && k != "signatures" && v != nil && cleanEmpty(v) == nil {
				out[k] = v
			}
		}
	}
	if v1 {
		return out
	}
	schemes, reqs := schemesV03(covered["securitySchemes"]), requirementsV03(covered["securityRequirements"])
	caps, _ := covered["capabilities"].(map[string]any)
	delete(out, "securitySchemes")
	delete(out, "security")
	delete(out, "supportsAuthenticatedExtendedCard")
	if pv, _ := card["protocolVersion"].(string); strings.HasPrefix(pv, "0.3") {
		out["protocolVersion"] = pv
	} else {
		out["protocolVersion"] = "0.3.0"
	}
	if len(schemes) > 0 {
		out["securitySchemes"] = schemes
	}
	if len(reqs) > 0 {
		out["security"] = reqs
	}
	if caps["extendedAgentCard"] == true {
		out["supportsAuthenticatedExtendedCard"] = true
	}
	return out
}

// schemesV03 spells 1.0 security schemes (one member naming the kind) in
// A2A 0.3's OpenAPI shape (a "type" member).
func schemesV03(v any) map[string]any {
	in, _ := v.(map[string]any)
	out := map[string]any{}
	for name, x := range in {
		m, _ := x.(map[string]any)
		for kind, body := range m {
			b, _ := body.(map[string]any)
			s := map[string]any{}
			copyMembers(s, b, "description")
			switch kind {
			case "apiKeySecurityScheme":
				s["type"] = "apiKey"
				copyMembers(s, b, "name")
				if l, ok := b["location"]; ok {
					s["in"] = l
				}
			case "httpAuthSecurityScheme":
				s["type"] = "http"
				copyMembers(s, b, "scheme", "bearerFormat")
			case "oauth2SecurityScheme":
				s["type"] = "oauth2"
				copyMembers(s, b, "oauth2MetadataUrl")
				flows := map[string]any{}
				f, _ := b["flows"].(map[string]any)
				for _, k := range []string{"authorizationCode", "clientCredentials", "implicit", "password"} {
					if fl, ok := f[k].(map[string]any); ok {
						g := map[string]any{"scopes": map[string]any{}}
						copyMembers(g, fl, "authorizationUrl", "tokenUrl", "refreshUrl", "scopes")
						flows[k] = g
					}
				}
				s["flows"] = flows
			case "openIdConnectSecurityScheme":
				s["type"] = "openIdConnect"
				copyMembers(s, b, "openIdConnectUrl")
			case "mtlsSecurityScheme":
				s["type"] = "mutualTLS"
			default:
				continue
			}
			out[name] = s
		}
	}
	return out
}

// requirementsV03 spells 1.0 security requirements ({"schemes": {name:
// {"list": scopes}}}) as 0.3's ({name: scopes}).
func requirementsV03(v any) []any {
	in, _ := v.([]any)
	var out []any
	for _, x := range in {
		m, _ := x.(map[string]any)
		schemes, _ := m["schemes"].(map[string]any)
		r := map[string]any{}
		for name, l := range schemes {
			lm, _ := l.(map[string]any)
			scopes, _ := lm["list"].([]any)
			if scopes == nil {
				scopes = []any{}
			}
			r[name] = scopes
		}
		if len(r) > 0 {
			out = append(out, r)
		}
	}
	return out
}

func copyMembers(dst, src map[string]any, names ...string) {
	for _, k := range names {
		if v, ok := src[k]; ok {
			dst[k] = v
		}
	}
}

// canonicalCard is the payload a card's signatures sign.
func canonicalCard(card map[string]any) ([]byte, error) {
	b, err := json.Marshal(signedContent(card))
	if err != nil {
		return nil, err
	}
	v := jsontext.Value(b)
	if err := jcs.Canonicalize(&v); err != nil {
		return nil, err
	}
	return v, nil
}

var b64 = base64.RawURLEncoding

// signer signs the cards the gateway serves.
type signer struct {
	key ed25519.PrivateKey
	kid string
}

func newSigner(key ed25519.PrivateKey) *signer {
	if key == nil {
		return nil
	}
	sum := sha256.Sum256(key.Public().(ed25519.PublicKey))
	return &signer{key: key, kid: "sluice-" + hex.EncodeToString(sum[:8])}
}

// sign replaces the card's signatures with the gateway's, whose header
// names the gateway's JWKS (jku).
func (s *signer) sign(card map[string]any, jku string) error {
	payload, err := canonicalCard(card)
	if err != nil {
		return err
	}
	hdr, err := json.Marshal(map[string]string{"alg": "EdDSA", "typ": "JOSE", "kid": s.kid, "jku": jku}, json.Deterministic(true))
	if err != nil {
		return err
	}
	protected := b64.EncodeToString(hdr)
	sig := ed25519.Sign(s.key, []byte(protected+"."+b64.EncodeToString(payload)))
	card["signatures"] = []any{map[string]any{"protected": protected, "signature": b64.EncodeToString(sig)}}
	return nil
}

// jwks is the gateway's public key as a JWK set.
func (s *signer) jwks() []byte {
	b, _ := json.Marshal(map[string]any{"keys": []any{map[string]any{
		"kty": "OKP", "crv": "Ed25519", "x": b64.EncodeToString(s.key.Public().(ed25519.PublicKey)),
		"kid": s.kid, "alg": "EdDSA", "use": "sig",
	}}}, json.Deterministic(true))
	return b
}

func (g *Gateway) serveJWKS(w http.ResponseWriter, _ *http.Request) {
	if g.signer == nil {
		writeJSON(w, http.StatusNotFound, []byte(`{"error":"this gateway does not sign agent cards"}`))
		return
	}
	w.Header().Set("Cache-Control", "max-age=300")
	w.Header().Set("Content-Type", "application/jwk-set+json")
	_, _ = w.Write(g.signer.jwks())
}

// cardAlgs are the JWS algorithms accepted on upstream cards.
var cardAlgs = []jose.SignatureAlgorithm{jose.EdDSA, jose.ES256, jose.ES384, jose.ES512, jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512}

// errUnsigned is a card without signatures from an agent that must sign.
var errUnsigned = errors.New("the card is not signed and require_signed_card is set")

// verifyCard checks the card's signatures when it has any (one valid
// signature is enough), with the agent's configured keys (card_keys) or,
// without them, the JWKS its jku names on the agent's own origin. A
// signature nobody can check is a failure: the card is refused.
func (g *Gateway) verifyCard(ctx context.Context, a *agent, card map[string]any) error {
	sigs, _ := card["signatures"].([]any)
	if len(sigs) == 0 {
		if a.RequireSignedCard {
			return errUnsigned
		}
		return nil
	}
	payload, err := canonicalCard(card)
	if err != nil {
		return err
	}
	var errs []error
	for i, s := range sigs {
		m, _ := s.(map[string]any)
		protected, _ := m["protected"].(string)
		signature, _ := m["signature"].(string)
		raw, err := b64.DecodeString(protected)
		var hdr struct {
			Alg, Kid, Typ, Jku string
		}
		if err != nil || json.Unmarshal(raw, &hdr, json.MatchCaseInsensitiveNames(true)) != nil || hdr.Alg == "" || hdr.Kid == "" {
			errs = append(errs, fmt.Errorf("signature %d: a protected header with alg and kid is required", i))
			continue
		}
		key, err := g.cardKey(ctx, a, hdr.Kid, hdr.Jku)
		if err != nil {
			errs = append(errs, fmt.Errorf("signature %d: %w", i, err))
			continue
		}
		jm := map[string]any{"protected": protected, "payload": b64.EncodeToString(payload), "signature": signature}
		if h, ok := m["header"].(map[string]any); ok && len(h) > 0 {
			jm["header"] = h
		}
		flat, _ := json.Marshal(jm)
		jws, err := jose.ParseSigned(string(flat), cardAlgs)
		if err == nil {
			_, err = jws.Verify(key)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("signature %d (kid %s): %v", i, hdr.Kid, err))
			continue
		}
		return nil
	}
	return fmt.Errorf("the card's signatures do not verify: %w", errors.Join(errs...))
}

// cardKeys caches fetched JWKS for a while.
type keyCache struct {
	mu   sync.Mutex
	sets map[string]keyEntry
}

type keyEntry struct {
	set     jose.JSONWebKeySet
	fetched time.Time
}

func (g *Gateway) cardKey(ctx context.Context, a *agent, kid, jku string) (any, error) {
	src := a.CardKeys
	if src == "" {
		if jku == "" {
			return nil, errors.New("no jku in the header and no card_keys configured for the agent")
		}
		u, err := url.Parse(jku)
		if err != nil || !sameOrigin(u, a.base) {
			return nil, fmt.Errorf("jku %q is not on the agent's origin; configure card_keys to trust another key source", jku)
		}
		src = jku
	}
	set, err := g.keySet(ctx, a, src)
	if err != nil {
		return nil, err
	}
	keys := set.Key(kid)
	if len(keys) == 0 {
		return nil, fmt.Errorf("no key %q in %s", kid, src)
	}
	return keys[0].Key, nil
}

func (g *Gateway) keySet(ctx context.Context, a *agent, src string) (jose.JSONWebKeySet, error) {
	g.keys.mu.Lock()
	e, ok := g.keys.sets[src]
	g.keys.mu.Unlock()
	if ok && time.Since(e.fetched) < g.opts.CardTTL {
		return e.set, nil
	}
	var b []byte
	var err error
	if strings.HasPrefix(src, "http://") || strings.HasPrefix(src, "https://") {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		req, rerr := http.NewRequestWithContext(ctx, http.MethodGet, src, nil)
		if rerr != nil {
			return jose.JSONWebKeySet{}, rerr
		}
		resp, rerr := g.opts.Client.Do(req)
		if rerr != nil {
			return jose.JSONWebKeySet{}, fmt.Errorf("fetching %s: %v", src, rerr)
		}
		b, err = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("fetching %s: status %d", src, resp.StatusCode)
		}
	} else {
		b, err = os.ReadFile(src)
	}
	if err != nil {
		return jose.JSONWebKeySet{}, err
	}
	var set jose.JSONWebKeySet
	if err := stdjson.Unmarshal(b, &set); err != nil {
		return jose.JSONWebKeySet{}, fmt.Errorf("%s is not a JWK set: %v", src, err)
	}
	g.keys.mu.Lock()
	g.keys.sets[src] = keyEntry{set: set, fetched: time.Now()}
	g.keys.mu.Unlock()
	return set, nil
}
