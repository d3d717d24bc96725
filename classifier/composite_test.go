package classifier

import (
	"math"
	"strings"
	"testing"
)

func axes(confs ...float64) Axes {
	var v Axes
	for i, c := range confs {
		a := extendedAxes[i]
		v.Set(a, AxisVerdict{Classified: axisValues[a][0], Confidence: c})
	}
	return v
}

// axesOf is m as Axes.
func axesOf(m map[string]AxisVerdict) Axes {
	var v Axes
	for a, av := range m {
		v.Set(a, av)
	}
	return v
}

func TestComposite(t *testing.T) {
	tests := []struct {
		name string
		v    Verdict
		opts Options
		want float64
	}{
		{"default profile redistributes", Verdict{Axes: axes(1, 0.5)}, Options{}, (0.4*1 + 0.3*0.5) / 0.7},
		{"default profile ignores extended axes", Verdict{Axes: axes(1, 1, 0, 0, 0)}, Options{}, 1},
		{"extended, all certain", Verdict{Axes: axes(1, 1, 1, 1, 1)}, Options{Profile: ProfileExtended}, 1},
		{"extended weights", Verdict{Axes: axes(1, 1, 0, 0, 0)}, Options{Profile: ProfileExtended}, 0.7},
		{"missing axis counts as zero", Verdict{Axes: axes(1)}, Options{}, 0.4 / 0.7},
		{"no axes", Verdict{}, Options{}, 0},
		{"custom weights", Verdict{Axes: axes(1, 0)}, Options{Weights: PerAxis{ActionType: 1, Boundary: 1}}, 0.5},
		{"out-of-range confidences are clamped", Verdict{Axes: axes(7, -3)}, Options{}, 0.4 / 0.7},
		{"NaN counts as zero", Verdict{Axes: axes(math.NaN(), 1)}, Options{}, 0.3 / 0.7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Composite(tt.v, tt.opts); !near(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRoute(t *testing.T) {
	tests := []struct {
		c    float64
		th   Thresholds
		want Disposition
	}{
		{1, Thresholds{}, Proceed},
		{0.85, Thresholds{}, Proceed},
		{0.8499, Thresholds{}, ProceedLog},
		{0.70, Thresholds{}, ProceedLog},
		{0.6999, Thresholds{}, Escalate},
		{0.50, Thresholds{}, Escalate},
		{0.4999, Thresholds{}, MandatoryEscalate},
		{0, Thresholds{}, MandatoryEscalate},
		{math.NaN(), Thresholds{}, MandatoryEscalate},
		{0.75, Thresholds{Proceed: 0.95, Log: 0.8, Escalate: 0.6}, Escalate},
		{0.55, Thresholds{Proceed: 0.95, Log: 0.8, Escalate: 0.6}, MandatoryEscalate},
	}
	for _, tt := range tests {
		if got := tt.th.Route(tt.c); got != tt.want {
			t.Errorf("%+v.Route(%v): got %v, want %v", tt.th, tt.c, got, tt.want)
		}
	}
	var zero Disposition
	if zero != MandatoryEscalate {
		t.Errorf("zero Disposition: got %v, want mandatory_escalate", zero)
	}
}

func TestApplyConservativeDefaults(t *testing.T) {
	v := Verdict{Axes: axesOf(map[string]AxisVerdict{
		AxisActionType:  {Classified: Read, Confidence: 0.95, Source: "x"},
		AxisBoundary:    {Classified: "Intranet", Confidence: 0.99, Source: "x"},
		AxisSensitivity: {Classified: Public, Confidence: 0.59, Source: "x"},
		AxisScale:       {Classified: Targeted, Confidence: 0.6, Source: "x"},
		// reversibility missing
	})}
	ApplyConservativeDefaults(&v, Options{Profile: ProfileExtended})
	want := map[string]AxisVerdict{
		AxisActionType:    {Classified: Read, Confidence: 0.95, Source: "x"},
		AxisBoundary:      {Classified: External, Confidence: 0, Source: "x", ConservativeDefaultApplied: true},
		AxisSensitivity:   {Classified: Restricted, Confidence: 0.59, Source: "x", ConservativeDefaultApplied: true},
		AxisScale:         {Classified: Targeted, Confidence: 0.6, Source: "x"},
		AxisReversibility: {Classified: Irreversible, Confidence: 0, Source: SourceNone, ConservativeDefaultApplied: true},
	}
	for a, w := range want {
		if got := v.Axes.Get(a); got != w {
			t.Errorf("%s: got %+v, want %+v", a, got, w)
		}
	}
}

func TestAssess(t *testing.T) {
	good := Verdict{Axes: axes(1, 1), CompositeConfidence: 1, ConsistentWithDeclaration: true}
	tests := []struct {
		name string
		v    Verdict
		want Assessment
	}{
		{"confident", good, Assessment{Composite: 1, Disposition: Proceed}},
		{"a verdict cannot raise its own score", Verdict{Axes: axes(0.5, 0.5), CompositeConfidence: 0.99, ConsistentWithDeclaration: true},
			Assessment{Composite: 0.5, Disposition: Escalate}},
		{"a provider failure lowers it", Verdict{Axes: axes(1, 1), CompositeConfidence: 0, ConsistentWithDeclaration: false},
			Assessment{Composite: 0, Disposition: MandatoryEscalate, Mismatch: []string{ReasonLowConfidence, ReasonDeclarationMismatch}}},
		{"mismatch", Verdict{Axes: axes(1, 1), CompositeConfidence: 1}, Assessment{Composite: 1, Disposition: Proceed, Mismatch: []string{ReasonDeclarationMismatch}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Assess(tt.v, Options{})
			if !near(got.Composite, tt.want.Composite) || got.Disposition != tt.want.Disposition || strings.Join(got.Mismatch, ",") != strings.Join(tt.want.Mismatch, ",") {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want string // substring of the error; "" for none
	}{
		{"zero value", Options{}, ""},
		{"full", Options{Profile: ProfileExtended, Weights: PerAxis{ActionType: 2, Boundary: 1}, Thresholds: Thresholds{Proceed: 0.9},
			InternalDomains: []string{"*.corp.example.com"}, InternalCIDRs: []string{"10.0.0.0/8", "fd00::/8"},
			Sensitivity: []SensitivityRule{{Match: "/srv/**", Tier: Confidential}},
			Tools:       map[string]ToolConfig{"a/b": {ActionType: Read, Boundary: Local}}}, ""},
		{"profile", Options{Profile: "everything"}, `profile: "everything" is not`},
		{"tool action", Options{Tools: map[string]ToolConfig{"x": {ActionType: "Reed"}}}, `tools["x"].action_type: "Reed" is not one of Read, Write`},
		{"zone", Options{Upstreams: map[string]UpstreamConfig{"u": {Zone: "DMZ"}}}, `upstreams["u"].zone`},
		{"cidr", Options{InternalCIDRs: []string{"10.0.0.0/33"}}, `internal_cidrs[0]: "10.0.0.0/33" is not a CIDR`},
		{"domain", Options{InternalDomains: []string{"https://corp.example.com"}}, `internal_domains[0]`},
		{"tier", Options{Sensitivity: []SensitivityRule{{Match: "/x", Tier: "Secret"}}}, `sensitivity[0].tier`},
		{"glob", Options{Sensitivity: []SensitivityRule{{Tier: Public}}}, `sensitivity[0].match: empty glob`},
		{"thresholds order", Options{Thresholds: Thresholds{Proceed: 0.6, Log: 0.7}}, `need escalate`},
		{"weight range", Options{Weights: PerAxis{ActionType: -1, Boundary: 1}}, `weights.action_type: -1 is not a finite number >= 0`},
		{"active weights zero", Options{Weights: PerAxis{Scale: 1}}, `the active axes (action_type, boundary) all weigh 0`},
		{"floor range", Options{Floors: PerAxis{Boundary: -1}}, `floors.boundary`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("got %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestGlobRegexp(t *testing.T) {
	tests := []struct {
		glob, s string
		want    bool
	}{
		{"/srv/hr/**", "/srv/hr/a/b.pdf", true},
		{"/srv/hr/*", "/srv/hr/a/b.pdf", false},
		{"/srv/hr/*.pdf", "/SRV/HR/x.pdf", true},
		{"payroll_?", "payroll_1", true},
		{"s3://bucket-(prod)/**", "s3://bucket-(prod)/k", true},
		{"**/.env", "/app/.env", true},
		{"/données/**", "/données/x", true},
	}
	for _, tt := range tests {
		if got := globRegexp(tt.glob).MatchString(tt.s); got != tt.want {
			t.Errorf("glob %q on %q: got %v, want %v", tt.glob, tt.s, got, tt.want)
		}
	}
}
