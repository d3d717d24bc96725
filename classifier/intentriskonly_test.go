package classifier

import (
	"context"
	"slices"
	"testing"
)

// RiskOnly builds the same risk as the full record, on every call of the
// real-world corpus, under both profiles.
func TestIntentRiskOnlySameRisk(t *testing.T) {
	calls := loadCorpus(t)
	for _, run := range []struct {
		profile Profile
		catalog bool
	}{{ProfileDefault, false}, {ProfileExtended, false}, {ProfileDefault, true}, {ProfileExtended, true}} {
		profile := run.profile
		opts := corpusOptions(calls)
		opts.Profile = profile
		if run.catalog {
			// Configured rules raise the classifier's tier; the intent
			// record's is worked out without them, as before.
			opts.Sensitivity = []SensitivityRule{{Match: "**", Tier: Restricted}}
		}
		b, err := NewBuiltin(opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range calls {
			v, err := b.Classify(context.Background(), c.d)
			if err != nil {
				t.Fatal(err)
			}
			o := IntentOptions{Options: opts, ToolPoisoning: []string{"instruction_tag"}}
			full := NewIntentRecord(c.d, v, o)
			o.RiskOnly = true
			lite := NewIntentRecord(c.d, v, o)
			if lite.RiskLevel != full.RiskLevel || !slices.Equal(lite.RiskFactors, full.RiskFactors) ||
				lite.InjectionSuspected != full.InjectionSuspected || lite.ClarificationNeeded != full.ClarificationNeeded ||
				lite.EntityID != full.EntityID || lite.Confidence != full.Confidence {
				t.Fatalf("%s/%s (%s): risk-only %s %v, full %s %v", c.server, c.d.ToolName, profile, lite.RiskLevel, lite.RiskFactors, full.RiskLevel, full.RiskFactors)
			}
			if lite.IntentID != "" || full.IntentID == "" {
				t.Fatalf("ids: risk-only %q, full %q", lite.IntentID, full.IntentID)
			}
		}
	}
}
