package telemetry

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/internal/idrand"
)

// Event types. Every event about one tools/call carries the call's txn_id.
const (
	// TypePolicyEnforced is the gateway's decision about one call
	// ([PolicyEnforcement]).
	TypePolicyEnforced = "sluice.policy_enforced"
	// TypeIntentClassified is the classifier's verdict on one call
	// ([IntentClassification], RFC-010 §9.2).
	TypeIntentClassified = "sluice.intent_classified"
	// TypeIntentMismatch is a classification that disagrees with the
	// declaration or is too unsure ([IntentMismatch], RFC-010 §9.3).
	TypeIntentMismatch = "sluice.intent_mismatch"
	// TypeSoleDenyViolation is a deny that rested on classifier output
	// alone ([SoleDenyViolation], RFC-010 §12.3).
	TypeSoleDenyViolation = "sluice.classifier_sole_deny_violation"
	// TypeClassifierLifecycle is a classifier session starting, closing or
	// failing ([ClassifierLifecycle]).
	TypeClassifierLifecycle = "sluice.classifier_lifecycle"
	// TypeApproval is a human approval requested, granted, declined or
	// expired ([Approval]).
	TypeApproval = "sluice.approval"
	// TypeInventoryDrift is a tool that changed, appeared or disappeared
	// since its pinned version ([InventoryDrift]).
	TypeInventoryDrift = "sluice.inventory_drift"
	// TypeInventoryRejected is an inventory snapshot that failed its
	// signature check or could not be loaded ([InventoryRejection]).
	TypeInventoryRejected = "sluice.inventory_rejected"
	// TypeToolPoisoning is a suspicious tool description or schema
	// ([PoisoningFinding]).
	TypeToolPoisoning = "sluice.tool_poisoning"
	// TypeToolCollision is one tool name offered by several upstreams
	// ([ToolCollision]).
	TypeToolCollision = "sluice.tool_name_collision"
	// TypeBreakerStateChanged is an upstream's circuit breaker changing
	// state ([BreakerChange]).
	TypeBreakerStateChanged = "sluice.breaker_state_changed"
)

// Event is one audit record. The top-level fields are the ones the store
// indexes and filters on; everything else about the event is in Attrs,
// whose keys are documented by the typed builders ([PolicyEnforcement] and
// the rest) as their JSON field names. An Event is a value; the store
// never changes one it is given.
//
// As JSON (the JSONL export, one per line):
//
//	{"id":"0190b2…","seq":42,"type":"sluice.policy_enforced","time":"2025-05-01T12:00:00.123456789Z",
//	 "txn_id":"9f…","agent":"claude-code","session":"s-1","upstream":"github","tool":"create_issue",
//	 "decision":"deny","reason":"tool_denied","attrs":{"call_id":"7","public_reason":"…",
//	 "rule_id":"static.deny","latency_ns":41000,"arguments_sha256":"…","evidence":{…}}}
type Event struct {
	// ID is unique per event; empty means the store assigns one with
	// [NewEventID].
	ID string `json:"id"`
	// Seq is the store's append order, set on events read back; zero
	// otherwise.
	Seq int64 `json:"seq,omitempty"`
	// Type is one of the Type… constants.
	Type string `json:"type"`
	// Time is when the event happened; zero means the store stamps it on
	// append.
	Time time.Time `json:"time"`
	// TxnID correlates all events about one call.
	TxnID    string `json:"txn_id,omitempty"`
	Agent    string `json:"agent,omitempty"`
	Session  string `json:"session,omitempty"`
	Upstream string `json:"upstream,omitempty"`
	Tool     string `json:"tool,omitempty"`
	// Decision is the verdict for policy events: allow, deny,
	// require_approval.
	Decision string `json:"decision,omitempty"`
	// Reason is the machine-readable reason code.
	Reason string `json:"reason,omitempty"`
	// Attrs holds the rest. Values must encode as JSON; read back from
	// the store they are the generic encoding/json types, with numbers as
	// json.Number so none loses precision (string, json.Number, bool,
	// []any, map[string]any). [Event.Decode] turns them back into a
	// typed builder.
	Attrs map[string]any `json:"attrs,omitempty"`
}

// Decode fills v, a pointer to one of the typed builders such as
// *[PolicyEnforcement], from e: the top-level fields and Attrs together,
// matched by JSON name. It is how replay turns stored events back into
// typed values.
func (e Event) Decode(v any) error {
	m := make(map[string]any, len(e.Attrs)+8)
	for k, x := range e.Attrs {
		m[k] = x
	}
	set := func(k, x string) {
		if x != "" {
			m[k] = x
		}
	}
	if !e.Time.IsZero() {
		m["time"] = e.Time
	}
	set("txn_id", e.TxnID)
	set("agent", e.Agent)
	set("session", e.Session)
	set("upstream", e.Upstream)
	set("tool", e.Tool)
	set("decision", e.Decision)
	set("reason", e.Reason)
	raw, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("decoding %s event %s: %w", e.Type, e.ID, err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("decoding %s event %s: %w", e.Type, e.ID, err)
	}
	return nil
}

// NewEventID returns a UUIDv7 (RFC 9562): 48 bits of Unix milliseconds
// then random bits, so ids sort roughly by time.
func NewEventID(t time.Time) string {
	var b [16]byte
	idrand.Read(b[6:])
	ms := uint64(t.UnixMilli())
	binary.BigEndian.PutUint16(b[0:2], uint16(ms>>32))
	binary.BigEndian.PutUint32(b[2:6], uint32(ms))
	b[6] = b[6]&0x0f | 0x70 // version 7
	b[8] = b[8]&0x3f | 0x80 // variant 10
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:], b[10:])
	return string(s[:])
}

// An attrSink receives an event's attributes: into the Attrs map m
// builds, or as the JSON the audit store keeps (j, when set), from the
// same code. str, strs and num leave out empty values so stored events
// stay small; float and flag are always recorded, zero too, and typed,
// not passed as values, so that no call boxes them. A struct, not an
// interface of the two: a jsonAttrs passed as an interface escaped to the
// heap, an allocation for each event of every call.
type attrSink struct {
	m attrs
	j *jsonAttrs
}

func (a attrSink) str(k, v string) {
	if a.j != nil {
		a.j.str(k, v)
		return
	}
	a.m.str(k, v)
}

func (a attrSink) strs(k string, v []string) {
	if a.j != nil {
		a.j.strs(k, v)
		return
	}
	a.m.strs(k, v)
}

func (a attrSink) num(k string, v int64) {
	if a.j != nil {
		a.j.num(k, v)
		return
	}
	a.m.num(k, v)
}

func (a attrSink) float(k string, v float64) {
	if a.j != nil {
		a.j.float(k, v)
		return
	}
	a.m.float(k, v)
}

func (a attrSink) flag(k string, v bool) {
	if a.j != nil {
		a.j.flag(k, v)
		return
	}
	a.m.flag(k, v)
}

func (a attrSink) evidence(k string, v Evidence) {
	if a.j != nil {
		a.j.evidence(k, v)
		return
	}
	a.m.evidence(k, v)
}

func (a attrSink) value(k string, v any) {
	if a.j != nil {
		a.j.value(k, v)
		return
	}
	a.m.value(k, v)
}

// attrs builds an Attrs map.
type attrs map[string]any

func (a attrs) value(k string, v any) { a[k] = v }

func (a attrs) str(k, v string) {
	if v != "" {
		a[k] = Bound(v, MaxRecordedText)
	}
}

func (a attrs) strs(k string, v []string) {
	if len(v) > 0 {
		a[k] = v
	}
}

func (a attrs) num(k string, v int64) {
	if v != 0 {
		a[k] = v
	}
}

func (a attrs) float(k string, v float64)     { a[k] = v }
func (a attrs) flag(k string, v bool)         { a[k] = v }
func (a attrs) evidence(k string, v Evidence) { a[k] = v.bounded() }

// jsonAttrs appends attributes as JSON object members.
type jsonAttrs struct {
	b   []byte
	n   int
	err error
}

// key appends k, an attribute's name: a constant of this package, never
// in need of escaping, so copied as it is.
func (j *jsonAttrs) key(k string) {
	if j.n > 0 {
		j.b = append(j.b, ',')
	}
	j.n++
	j.b = append(j.b, '"')
	j.b = append(j.b, k...)
	j.b = append(j.b, '"', ':')
}

func (j *jsonAttrs) str(k, v string) {
	if v != "" {
		j.key(k)
		j.b = appendString(j.b, Bound(v, MaxRecordedText))
	}
}

func (j *jsonAttrs) strs(k string, v []string) {
	if len(v) > 0 {
		j.value(k, v)
	}
}

func (j *jsonAttrs) num(k string, v int64) {
	if v != 0 {
		j.key(k)
		j.b = strconv.AppendInt(j.b, v, 10)
	}
}

func (j *jsonAttrs) float(k string, v float64) {
	if j.err != nil {
		return
	}
	j.key(k)
	j.b, j.err = appendFloat(j.b, v)
}

func (j *jsonAttrs) flag(k string, v bool) {
	j.key(k)
	j.b = strconv.AppendBool(j.b, v)
}

func (j *jsonAttrs) evidence(k string, v Evidence) {
	j.key(k)
	j.b = appendEvidence(j.b, v.bounded())
}

func (j *jsonAttrs) value(k string, v any) {
	if j.err != nil {
		return
	}
	j.key(k)
	j.b, j.err = appendValue(j.b, v)
}
