package classifier

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-json-experiment/json"

	"github.com/sluicehq/sluice/intercept"
)

// ErrInvalidReply reports a model reply that is not a valid verdict: not
// JSON, unknown or missing members, values outside RFC-010 §5.1,
// confidences outside [0, 1]. The verdict returned with it has composite
// confidence 0.
var ErrInvalidReply = errors.New("LLM reply is not a valid verdict")

// Axis sources the LLM classifier writes into verdicts.
const (
	// SourceLLM marks an axis the model classified.
	SourceLLM = "llm_inference"
	// SourceLLMFallback marks an axis set to its conservative default
	// because the model gave no usable answer (timeout, open breaker,
	// inactive classifier, invalid reply).
	SourceLLMFallback = "llm_unavailable"
)

// llmReplyAxis and llmReply mirror AxisVerdict and Verdict with pointers,
// so a missing member can be told from a zero one.
type llmReplyAxis struct {
	Classified                 *string  `json:"classified"`
	Confidence                 *float64 `json:"confidence"`
	Source                     *string  `json:"source"`
	ConservativeDefaultApplied *bool    `json:"conservative_default_applied"`
}

type llmReply struct {
	SessionID                 *string                  `json:"session_id"`
	ToolName                  *string                  `json:"tool_name"`
	Axes                      map[string]*llmReplyAxis `json:"axes"`
	CapabilityClassVerdict    *string                  `json:"capability_class_verdict"`
	CapabilityClassConfidence *float64                 `json:"capability_class_confidence"`
	CompositeConfidence       *float64                 `json:"composite_confidence"`
	ConsistentWithDeclaration *bool                    `json:"consistent_with_declaration"`
	ClassifierID              *string                  `json:"classifier_id"`
	ClassifiedAt              *int64                   `json:"classified_at"`
}

// llmSchema turns replies into verdicts. It never changes after New.
type llmSchema struct {
	axes    []string // active axes, in taxonomy order
	scoring Options  // Profile, Weights and Floors only
}

// llmInvalid wraps ErrInvalidReply with what was wrong.
func llmInvalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidReply, fmt.Sprintf(format, args...))
}

// llmStripFence removes one Markdown code fence around the reply: models
// without a JSON mode (Anthropic's) add one despite the prompt, and it
// carries no meaning. Everything inside is still validated strictly.
func llmStripFence(s string) string {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "```") || !strings.HasSuffix(s, "```") || len(s) < 6 {
		return s
	}
	s = strings.TrimSuffix(s[3:], "```")
	if i := strings.IndexByte(s, '\n'); i >= 0 && !strings.ContainsAny(s[:i], "{[\"") {
		s = s[i+1:] // the info string ("json")
	}
	return strings.TrimSpace(s)
}

func llmInUnit(f *float64) bool { return f != nil && *f >= 0 && *f <= 1 }

// verdict validates the model's text against the verdict schema and builds
// the verdict from it. vocab is the capability class vocabulary the prompt
// offered. Session, classifier id and time are left for the caller.
func (s *llmSchema) verdict(text string, d *intercept.ActionDescriptor, vocab []string) (Verdict, error) {
	var r llmReply
	if err := json.Unmarshal([]byte(llmStripFence(text)), &r, json.RejectUnknownMembers(true)); err != nil {
		// Bounded: the decoder quotes member names, and a model can echo
		// anything from the descriptor into them.
		return Verdict{}, fmt.Errorf("%w: %s", ErrInvalidReply, llmTruncate(err.Error(), 200))
	}
	if r.ToolName != nil && *r.ToolName != d.ToolName {
		return Verdict{}, llmInvalid("tool_name %q is not the descriptor's", llmTruncate(*r.ToolName, 64))
	}
	if r.Axes == nil {
		return Verdict{}, llmInvalid("axes missing")
	}
	for name, a := range r.Axes {
		if ConservativeDefault(name) == "" {
			return Verdict{}, llmInvalid("unknown axis %q", llmTruncate(name, 64))
		}
		if a == nil {
			return Verdict{}, llmInvalid("axes.%s is null", name)
		}
	}
	if r.CapabilityClassVerdict == nil {
		return Verdict{}, llmInvalid("capability_class_verdict missing")
	}
	class := *r.CapabilityClassVerdict
	if class != "" && class != d.CapabilityClassDeclared && !slices.Contains(vocab, class) {
		return Verdict{}, llmInvalid("capability_class_verdict %q is not in the vocabulary", llmTruncate(class, 64))
	}
	if !llmInUnit(r.CapabilityClassConfidence) {
		return Verdict{}, llmInvalid("capability_class_confidence missing or outside [0, 1]")
	}
	if !llmInUnit(r.CompositeConfidence) {
		return Verdict{}, llmInvalid("composite_confidence missing or outside [0, 1]")
	}
	if r.ConsistentWithDeclaration == nil {
		return Verdict{}, llmInvalid("consistent_with_declaration missing")
	}

	v := Verdict{
		ToolName:                  d.ToolName,
		CapabilityClassVerdict:    class,
		CapabilityClassConfidence: *r.CapabilityClassConfidence,
	}
	for _, axis := range s.axes {
		a := r.Axes[axis]
		switch {
		case a == nil:
			return Verdict{}, llmInvalid("axes.%s missing", axis)
		case a.Classified == nil || !ValidValue(axis, *a.Classified):
			return Verdict{}, llmInvalid("axes.%s.classified missing or not a value of %s", axis, axis)
		case !llmInUnit(a.Confidence):
			return Verdict{}, llmInvalid("axes.%s.confidence missing or outside [0, 1]", axis)
		}
		v.Axes.Set(axis, AxisVerdict{
			Classified: *a.Classified,
			Confidence: *a.Confidence,
			Source:     SourceLLM,
			ConservativeDefaultApplied: a.ConservativeDefaultApplied != nil && *a.ConservativeDefaultApplied &&
				*a.Classified == ConservativeDefault(axis),
		})
	}
	// §5.3: an axis the model is unsure of takes the conservative default
	// whatever the model picked. The composite is the deployment's
	// weighted mean (§6.2), not the model's opinion, and consistency needs
	// both the model and the declarations to agree.
	ApplyConservativeDefaults(&v, s.scoring)
	v.CompositeConfidence = Composite(v, s.scoring)
	v.ConsistentWithDeclaration = *r.ConsistentWithDeclaration && llmConsistent(d, &v)
	return v, nil
}

// llmConsistent checks a verdict against the descriptor's declarations;
// absent declarations agree with anything.
func llmConsistent(d *intercept.ActionDescriptor, v *Verdict) bool {
	if d.CapabilityClassDeclared != "" && v.CapabilityClassVerdict != d.CapabilityClassDeclared {
		return false
	}
	if d.ActionTypeDeclared != "" && v.Axes.Get(AxisActionType).Classified != d.ActionTypeDeclared {
		return false
	}
	if d.BoundaryDeclared != "" && v.Axes.Get(AxisBoundary).Classified != d.BoundaryDeclared {
		return false
	}
	return true
}

// fallback is the verdict for a call the model did not classify: every
// active axis at its conservative default with no confidence, composite
// 0, inconsistent. Downstream that means mandatory escalation (§6.3) —
// never a deny, never an allow.
func (s *llmSchema) fallback(d *intercept.ActionDescriptor) Verdict {
	v := Verdict{
		ToolName: d.ToolName,
	}
	for _, axis := range s.axes {
		v.Axes.Set(axis, AxisVerdict{
			Classified:                 ConservativeDefault(axis),
			Source:                     SourceLLMFallback,
			ConservativeDefaultApplied: true,
		})
	}
	return v
}
