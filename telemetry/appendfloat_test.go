package telemetry

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// strconvFloat is appendFloat without its fast path for hundredths.
func strconvFloat(f float64) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, &json.UnsupportedValueError{Str: strconv.FormatFloat(f, 'g', -1, 64)}
	}
	abs := math.Abs(f)
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		return strconv.AppendFloat(nil, f, 'e', -1, 64), nil
	}
	return strconv.AppendFloat(nil, f, 'f', -1, 64), nil
}

// TestAppendFloatHundredths: appendFloat's fast path writes what
// strconv does, for every hundredth up to past its bound, their
// neighbours, and random values.
func TestAppendFloatHundredths(t *testing.T) {
	check := func(f float64) {
		t.Helper()
		got, err := appendFloat(nil, f)
		want, werr := strconvFloat(f)
		if (err == nil) != (werr == nil) || string(got) != string(want) {
			t.Fatalf("appendFloat(%v) = %s (%v), want %s (%v)", f, got, err, want, werr)
		}
	}
	for k := range 100_000_200 {
		if k > 200_000 && k%997 != 0 && k < 99_999_800 {
			continue
		}
		f := float64(k) / 100
		check(f)
		check(math.Nextafter(f, 0))
		check(math.Nextafter(f, 2e6))
		check(-f)
	}
	for _, f := range []float64{0, math.Copysign(0, -1), 1e-7, 1e-6, 0.005, 0.015, 0.1 + 0.2, 0.6*0.7 + 0.4*0.3, 1e6, 1e6 + 0.01, 1e21, 5e-324, math.MaxFloat64, math.NaN(), math.Inf(1), math.Inf(-1)} {
		check(f)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200_000 {
		check(r.Float64())
		check(r.Float64() * 1e7)
		check(math.Float64frombits(r.Uint64()))
	}
}
