// Package classifier classifies every tools/call on RFC-010's five axes
// (action type, boundary, sensitivity, scale, reversibility) from its
// action descriptor alone. It is advisory: a verdict can route a call to
// escalation, never deny or allow it by itself.
package classifier

import (
	"context"

	"github.com/sluicehq/sluice/intercept"
)

// Axis names, as used in verdict JSON (RFC-010 §7.5).
const (
	AxisActionType    = "action_type"
	AxisBoundary      = "boundary"
	AxisSensitivity   = "sensitivity"
	AxisScale         = "scale"
	AxisReversibility = "reversibility"
)

// Axis values (RFC-010 §5.1).
const (
	Read, Write, Execute, Orchestrate, Provision = "Read", "Write", "Execute", "Orchestrate", "Provision"
	Local, IntraOrg, External                    = "Local", "Intra-org", "External"
	Public, Internal, Confidential               = "Public", "Internal", "Confidential"
	Restricted, Regulated                        = "Restricted", "Regulated"
	Targeted, Bounded, Unbounded                 = "Targeted", "Bounded", "Unbounded"
	Reversible, Recoverable, Irreversible        = "Reversible", "Recoverable", "Irreversible"
)

// AxisVerdict is the classification of one axis.
type AxisVerdict struct {
	Classified                 string  `json:"classified"`
	Confidence                 float64 `json:"confidence"`
	Source                     string  `json:"source"`
	ConservativeDefaultApplied bool    `json:"conservative_default_applied"`
}

// Verdict is RFC-010 §7.5's classification verdict, with the same JSON
// field names (classifier_did is classifier_id: Sluice's own URN scheme).
type Verdict struct {
	SessionID                 string  `json:"session_id"`
	ToolName                  string  `json:"tool_name"`
	Axes                      Axes    `json:"axes"`
	CapabilityClassVerdict    string  `json:"capability_class_verdict"`
	CapabilityClassConfidence float64 `json:"capability_class_confidence"`
	CompositeConfidence       float64 `json:"composite_confidence"`
	ConsistentWithDeclaration bool    `json:"consistent_with_declaration"`
	ClassifierID              string  `json:"classifier_id"`
	ClassifiedAt              int64   `json:"classified_at"`

	// argTier is the sensitivity tier the built-in classifier's argument
	// scan found with no catalog rules configured (as NewIntentRecord's
	// own scan would), when argTierKnown: the intent record then need not
	// scan the arguments again.
	argTier      string
	argTierKnown bool
}

// A Classifier classifies one call. It sees only the descriptor, never
// conversation content. Implementations must be safe for concurrent use
// and must return a (low-confidence) verdict rather than block when they
// cannot classify: errors are for the caller's logs, never a reason to
// stop a call.
type Classifier interface {
	Classify(ctx context.Context, d *intercept.ActionDescriptor) (Verdict, error)
}

// Immediate reports whether c answers without waiting on anything (the
// built-in rules, in memory): a caller may then classify in line instead
// of beside its other work, which would cost a goroutine and a wake-up
// per call for nothing. A classifier that may block (a provider call)
// is not immediate.
func Immediate(c Classifier) bool {
	i, ok := c.(interface{ immediate() bool })
	return ok && i.immediate()
}
