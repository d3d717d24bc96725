package jcs

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

func TestTooDeep(t *testing.T) {
	for _, c := range []struct {
		v    string
		n    int
		want bool
	}{
		{`{"a":[1,{"b":2}]}`, 3, false},
		{`{"a":[1,{"b":2}]}`, 2, true},
		{`["[[[[","{{{{"]`, 1, false},
		{`["\"[[[[\\","{{{{\\\""]`, 1, false},
		{`[[],[],[]]`, 2, false},
		{`[[[]]]`, 2, true},
		{``, 0, false},
	} {
		if got := TooDeep([]byte(c.v), c.n); got != c.want {
			t.Errorf("TooDeep(%s, %d) = %v, want %v", c.v, c.n, got, c.want)
		}
	}
}

// TestAttackDeepCanonical: jsontext's Canonicalize moves each object's
// members into order, all that is inside them with them, so objects
// nested thousands deep cost the depth times their size. Canonicalize
// refuses them, and costs about what a flat value of that size does.
func TestAttackDeepCanonical(t *testing.T) {
	const n, depth = 256 << 10, 2000
	deep := strings.Repeat(`{"b":1,"a":`, depth) + `"` + strings.Repeat("x", n) + `"` + strings.Repeat("}", depth)
	flat := `{"b":1,"a":"` + strings.Repeat("x", len(deep)-14) + `"}`
	took := func(s string) (time.Duration, error) {
		least, err := time.Duration(1<<63-1), error(nil)
		for range 3 {
			v := jsontext.Value(s).Clone()
			start := time.Now()
			err = Canonicalize(&v)
			least = min(least, time.Since(start))
		}
		return least, err
	}
	d, err := took(deep)
	if !errors.Is(err, ErrTooDeep) {
		t.Errorf("objects %d deep: got %v, want ErrTooDeep", depth, err)
	}
	f, err := took(flat)
	if err != nil {
		t.Fatal(err)
	}
	ratio := float64(d) / float64(f)
	t.Logf("%d deep: %v; flat: %v; ratio %.1f", depth, d, f, ratio)
	if ratio > 20 {
		t.Errorf("objects %d deep took %v, %.0f times the %v of a flat value as long", depth, d, ratio, f)
	}

	ok := strings.Repeat(`{"b":1,"a":`, MaxDepth-1) + `[]` + strings.Repeat("}", MaxDepth-1)
	v := jsontext.Value(ok).Clone()
	if err := Canonicalize(&v); err != nil || !strings.HasPrefix(string(v), `{"a":{"a":`) {
		t.Errorf("%d levels: got %v, %.20s…, want them put in order", MaxDepth, err, v)
	}
}
