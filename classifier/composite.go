package classifier

import (
	"fmt"
	"math"
)

// Disposition is where a composite confidence routes a call (RFC-010 §6.3).
// None of them denies: escalation goes to the approval hold or the
// configured escalation action. The zero value is MandatoryEscalate, so a
// disposition nobody set fails towards a human.
type Disposition int

const (
	// MandatoryEscalate: composite below the escalate threshold; emit
	// INTENT_CLASSIFICATION_MISMATCH with reason LOW_CONFIDENCE.
	MandatoryEscalate Disposition = iota
	// Escalate: the classification is uncertain.
	Escalate
	// ProceedLog: proceed and log; low-confidence axes carry their
	// conservative defaults.
	ProceedLog
	// Proceed: high confidence.
	Proceed
)

var dispositionNames = [...]string{"mandatory_escalate", "escalate", "proceed_log", "proceed"}

func (d Disposition) String() string {
	if d < 0 || int(d) >= len(dispositionNames) {
		return fmt.Sprintf("Disposition(%d)", int(d))
	}
	return dispositionNames[d]
}

// MarshalText writes the disposition's name.
func (d Disposition) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// Event and reason codes of RFC-010 §6.3 and §7.5.
const (
	EventIntentClassificationMismatch = "INTENT_CLASSIFICATION_MISMATCH"
	// ReasonLowConfidence: the composite is below the escalate threshold.
	ReasonLowConfidence = "LOW_CONFIDENCE"
	// ReasonDeclarationMismatch: the verdict contradicts what was declared
	// (consistent_with_declaration is false).
	ReasonDeclarationMismatch = "DECLARATION_MISMATCH"
)

// Route maps a composite confidence to a disposition. Zero fields of t mean
// their defaults, so Thresholds{}.Route applies §6.3 as written. NaN routes
// to MandatoryEscalate.
func (t Thresholds) Route(composite float64) Disposition {
	t = t.resolved()
	switch {
	case math.IsNaN(composite) || composite < t.Escalate:
		return MandatoryEscalate
	case composite < t.Log:
		return Escalate
	case composite < t.Proceed:
		return ProceedLog
	}
	return Proceed
}

// Composite is the weighted mean of the active axes' confidences (§6.2)
// under opts' profile and weights. An active axis missing from v counts
// as confidence 0; confidences outside [0, 1] are clamped. It ignores
// v.CompositeConfidence: a classifier cannot vouch for itself.
func Composite(v Verdict, opts Options) float64 {
	w := opts.weights()
	var sum float64
	for _, a := range opts.Profile.Axes() {
		if av, ok := v.Axes.Lookup(a); ok {
			sum += w.Get(a) * unitClamp(av.Confidence)
		}
	}
	return unitClamp(sum)
}

func unitClamp(x float64) float64 {
	switch {
	case math.IsNaN(x) || x < 0:
		return 0
	case x > 1:
		return 1
	}
	return x
}

// ConservativeDefault returns an axis's conservative default (§5.3), or ""
// for an unknown axis.
func ConservativeDefault(axis string) string {
	switch axis {
	case AxisActionType:
		return Write
	case AxisBoundary:
		return External
	case AxisSensitivity:
		return Restricted
	case AxisScale:
		return Unbounded
	case AxisReversibility:
		return Irreversible
	}
	return ""
}

// ApplyConservativeDefaults puts the conservative default on every active
// axis of v that is missing, has a value outside §5.1, or has a confidence
// below its floor, and marks it conservative_default_applied. Confidences
// are left as classified, so the composite still shows how unsure the
// classifier was. It works on any classifier's verdict.
func ApplyConservativeDefaults(v *Verdict, opts Options) {
	floors := opts.floors()
	for _, a := range opts.Profile.Axes() {
		av, ok := v.Axes.Lookup(a)
		if !ok {
			av = AxisVerdict{Source: SourceNone}
		}
		if !ValidValue(a, av.Classified) {
			av.Confidence = 0
		}
		av.Confidence = unitClamp(av.Confidence)
		if av.Confidence < floors.Get(a) {
			av.Classified = ConservativeDefault(a)
			av.ConservativeDefaultApplied = true
		}
		v.Axes.Set(a, av)
	}
}

// Assessment is what the decision point does with a verdict.
type Assessment struct {
	// Composite is the lower of the recomputed composite and the one the
	// verdict reports: a verdict can lower its own score (a provider
	// signalling failure with 0.0) but never raise it.
	Composite   float64     `json:"composite_confidence"`
	Disposition Disposition `json:"disposition"`
	// Mismatch lists the INTENT_CLASSIFICATION_MISMATCH reasons to emit:
	// LOW_CONFIDENCE and/or DECLARATION_MISMATCH. Empty: emit nothing.
	Mismatch []string `json:"mismatch_reasons,omitempty"`
}

// Assess scores and routes a verdict under opts.
func Assess(v Verdict, opts Options) Assessment {
	c := Composite(v, opts)
	if reported := unitClamp(v.CompositeConfidence); reported < c {
		c = reported
	}
	a := Assessment{Composite: c, Disposition: opts.Thresholds.Route(c)}
	if a.Disposition == MandatoryEscalate {
		a.Mismatch = append(a.Mismatch, ReasonLowConfidence)
	}
	if !v.ConsistentWithDeclaration {
		a.Mismatch = append(a.Mismatch, ReasonDeclarationMismatch)
	}
	return a
}
