package classifier

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	stdjson "encoding/json"
	"errors"
	"hash/maphash"
	"net/url"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/sluicehq/sluice/intercept"
	"github.com/sluicehq/sluice/telemetry"
)

// cacheKey is the SHA-256 of a descriptor's canonical JSON.
type cacheKey [sha256.Size]byte

// cacheCanonical returns the descriptor as RFC 8785 canonical JSON without
// the fields that differ between otherwise identical calls (txn_id,
// session_id, call_id), and its hash. The same bytes are what the model is
// shown, so a cached verdict is always the answer to exactly that input.
//
// secretKeys are more key fragments redacted (LLMOptions.SecretKeys).
func cacheCanonical(d *intercept.ActionDescriptor, secretKeys []string) (jsontext.Value, cacheKey, error) {
	stable := *d
	stable.TxnID, stable.SessionID, stable.CallID = "", "", nil
	// The provider is a third party: secrets in the arguments (a
	// password, a bearer token) are not sent to it, redacted as the audit
	// store redacts them.
	if !jsontext.Value(d.Parameters).IsValid() && len(d.Parameters) > 0 {
		return nil, cacheKey{}, errors.New("classifier: the call's parameters are not valid JSON")
	}
	stable.Parameters = redactedParameters(d.Parameters, secretKeys)
	stable.TargetEndpoint = withoutCredentials(d.TargetEndpoint)
	if p := d.Principal; p != nil {
		// The agent's credential's claims (a JWT's email, name, whatever
		// its issuer adds) say nothing of what the call does, and the
		// audit record keeps none of them: the provider gets the agent's
		// id and how it signed in.
		stable.Principal = &intercept.Principal{ID: p.ID, Method: p.Method, ClientName: p.ClientName}
	}
	b, err := json.Marshal(&stable)
	if err != nil {
		return nil, cacheKey{}, err
	}
	v := jsontext.Value(b)
	// Numbers as written: in RFC 8785 form, account 9007199254740993
	// would read as ...992, sharing its key and shown to the model so.
	if err := v.Canonicalize(jsontext.CanonicalizeRawInts(false), jsontext.CanonicalizeRawFloats(false)); err != nil {
		return nil, cacheKey{}, err
	}
	// Canonical form has them as written: escaping is one to one.
	v = llmEscapeMarkup(v)
	return v, sha256.Sum256(v), nil
}

// cacheRaw appends the same fields as cacheCanonical as they are —
// length-prefixed strings and raw JSON bytes, in struct order — to buf.
// Equal raw forms mean equal canonical forms, so the raw form can stand in
// front of the canonical key as a memo: canonicalising costs microseconds,
// hashing the raw form with maphash tens of nanoseconds.
// TestCacheKeysCoverDescriptor fails when a descriptor field is added and
// not appended here.
func cacheRaw(buf []byte, d *intercept.ActionDescriptor) []byte {
	str := func(s string) {
		buf = binary.AppendUvarint(buf, uint64(len(s)))
		buf = append(buf, s...)
	}
	raw := func(v jsontext.Value) {
		buf = binary.AppendUvarint(buf, uint64(len(v)))
		buf = append(buf, v...)
	}
	str(d.ToolName)
	str(d.ToolDescription)
	str(d.CapabilityClassDeclared)
	str(d.ActionTypeDeclared)
	str(d.BoundaryDeclared)
	raw(d.Parameters)
	str(d.TargetEndpoint)
	str(d.ToolInventoryHash)
	str(d.Upstream)
	str(d.Agent)
	str(d.ProtocolVersion)
	raw(d.Annotations)
	raw(d.InputSchema)
	str(d.Method)
	str(d.ClientName)
	if p := d.Principal; p != nil {
		// Its claims are not sent (cacheCanonical).
		str(p.ID)
		str(p.Method)
		str(p.ClientName)
	}
	return buf
}

// cacheRawInventory appends the inventory snapshot's hash, which the
// system prompt depends on, to a raw form.
func cacheRawInventory(buf []byte, hash string) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(hash)))
	return append(buf, hash...)
}

// cacheKeyInventory is a descriptor's canonical key bound to the inventory
// snapshot's hash: the key of what the model is shown, system prompt and
// user message.
func cacheKeyInventory(key cacheKey, hash string) cacheKey {
	if hash == "" {
		return key
	}
	h := sha256.New()
	h.Write(key[:])
	h.Write([]byte(hash))
	return cacheKey(h.Sum(nil))
}

// cacheRawMax bounds the raw forms the memo keeps; larger descriptors (a
// file's content as an argument) go by canonical key alone.
const cacheRawMax = 4 << 10

// cacheRawEntry is a memo entry: the raw form, compared in full on a hit
// so a maphash collision is a miss, never a wrong verdict.
type cacheRawEntry struct {
	raw string
	v   Verdict
}

// verdictCache holds verdicts of valid replies only: a fallback verdict is
// never cached, so a call classified during an outage is asked again once
// the provider is back. It is keyed by the canonical hash, with a memo by
// raw form in front so that a repeated call skips canonicalisation. A nil
// *verdictCache caches nothing.
type verdictCache struct {
	canon *lru.Cache[cacheKey, Verdict]
	raw   *lru.Cache[uint64, cacheRawEntry]
	seed  maphash.Seed
}

func newVerdictCache(size int) (*verdictCache, error) {
	if size < 0 {
		return nil, nil
	}
	canon, err := lru.New[cacheKey, Verdict](size)
	if err != nil {
		return nil, err
	}
	raw, err := lru.New[uint64, cacheRawEntry](size)
	if err != nil {
		return nil, err
	}
	return &verdictCache{canon: canon, raw: raw, seed: maphash.MakeSeed()}, nil
}

// getRaw looks a verdict up by raw form. Verdicts returned by getRaw and
// get are copies the caller may change.
func (c *verdictCache) getRaw(raw []byte) (Verdict, bool) {
	if c == nil || len(raw) > cacheRawMax {
		return Verdict{}, false
	}
	e, ok := c.raw.Get(maphash.Bytes(c.seed, raw))
	if !ok || e.raw != string(raw) {
		return Verdict{}, false
	}
	return e.v, true
}

// addRaw remembers v under raw.
func (c *verdictCache) addRaw(raw []byte, v Verdict) {
	if len(raw) <= cacheRawMax {
		c.raw.Add(maphash.Bytes(c.seed, raw), cacheRawEntry{raw: string(raw), v: v})
	}
}

// get looks a verdict up by canonical key and, on a hit, remembers it
// under raw too.
func (c *verdictCache) get(key cacheKey, raw []byte) (Verdict, bool) {
	if c == nil {
		return Verdict{}, false
	}
	v, ok := c.canon.Get(key)
	if !ok {
		return Verdict{}, false
	}
	c.addRaw(raw, v)
	return v, true
}

// add stores a copy of v under both keys.
func (c *verdictCache) add(key cacheKey, raw []byte, v Verdict) {
	if c == nil {
		return
	}
	c.canon.Add(key, v)
	c.addRaw(raw, v)
}

// len is the number of cached verdicts.
func (c *verdictCache) len() int {
	if c == nil {
		return 0
	}
	return c.canon.Len()
}

// redactedParameters is params with the values of secret-looking keys
// (and of those secretKeys name) and credentials inside strings replaced
// (telemetry.Redactor); numbers stay as written. Params that cannot be
// read are kept out whole.
func redactedParameters(params jsontext.Value, secretKeys []string) jsontext.Value {
	if len(params) == 0 {
		return params
	}
	dec := stdjson.NewDecoder(bytes.NewReader(params))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return jsontext.Value(`"(unreadable arguments left out)"`)
	}
	out, err := stdjson.Marshal(telemetry.Redactor{SecretKeys: secretKeys}.Redact(v))
	if err != nil {
		return jsontext.Value(`"(unreadable arguments left out)"`)
	}
	return out
}

// withoutCredentials is a target URL without userinfo, query or fragment
// (the gateway's own targets carry none; a descriptor made elsewhere may).
func withoutCredentials(target string) string {
	u, err := url.Parse(target)
	if err != nil || u.Scheme == "" || u.Scheme == "stdio" {
		return telemetry.Scrub(target)
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	return u.String()
}
