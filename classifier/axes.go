package classifier

import (
	"fmt"
	"iter"
	"maps"
	"math/bits"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// axisNames are the five axes in the order of their names, which is the
// order of the members of the verdict's JSON "axes" object.
var axisNames = [...]string{AxisActionType, AxisBoundary, AxisReversibility, AxisScale, AxisSensitivity}

// axisIndex is axis's place in axisNames, or -1.
func axisIndex(axis string) int {
	switch axis {
	case AxisActionType:
		return 0
	case AxisBoundary:
		return 1
	case AxisReversibility:
		return 2
	case AxisScale:
		return 3
	case AxisSensitivity:
		return 4
	}
	return -1
}

// Axes is a verdict's classification of each axis it classified, at most
// one per axis. It is a value, not a map: a call's verdict costs no
// allocation for it, and copying a Verdict copies its axes. The zero value
// has no axes. It marshals to the JSON object a map of axis names would
// (members in the order of their names; none is null with encoding/json,
// {} with go-json-experiment's defaults).
type Axes struct {
	set uint8 // bit i: v[i] is axisNames[i]'s
	v   [len(axisNames)]AxisVerdict
}

// Lookup returns axis's verdict and whether it has one.
func (a Axes) Lookup(axis string) (AxisVerdict, bool) {
	i := axisIndex(axis)
	if i < 0 || a.set&(1<<i) == 0 {
		return AxisVerdict{}, false
	}
	return a.v[i], true
}

// Get returns axis's verdict, the zero AxisVerdict if it has none.
func (a Axes) Get(axis string) AxisVerdict {
	av, _ := a.Lookup(axis)
	return av
}

// Set sets axis's verdict. It panics if axis is not one of the five axes
// (AxisActionType ... AxisReversibility): names come from the constants.
func (a *Axes) Set(axis string, av AxisVerdict) {
	i := axisIndex(axis)
	if i < 0 {
		panic(fmt.Sprintf("classifier: Axes.Set of unknown axis %q", axis))
	}
	a.set |= 1 << i
	a.v[i] = av
}

// Len is the number of axes with a verdict.
func (a Axes) Len() int { return bits.OnesCount8(a.set) }

// All yields each axis with a verdict and its verdict, in the order of
// the axes' names.
func (a Axes) All() iter.Seq2[string, AxisVerdict] {
	return func(yield func(string, AxisVerdict) bool) {
		for i, name := range axisNames {
			if a.set&(1<<i) != 0 && !yield(name, a.v[i]) {
				return
			}
		}
	}
}

// String formats a as the map of axis names it stands for.
func (a Axes) String() string { return fmt.Sprint(maps.Collect(a.All())) }

// MarshalJSONTo writes a as a JSON object (go-json-experiment); no axes
// is {}, or null under json.FormatNilMapAsNull, as a nil map would be.
func (a Axes) MarshalJSONTo(enc *jsontext.Encoder) error {
	if a.set == 0 {
		if null, _ := json.GetOption(enc.Options(), json.FormatNilMapAsNull); null {
			return enc.WriteToken(jsontext.Null)
		}
	}
	if err := enc.WriteToken(jsontext.BeginObject); err != nil {
		return err
	}
	for name, av := range a.All() {
		if err := enc.WriteToken(jsontext.String(name)); err != nil {
			return err
		}
		if err := json.MarshalEncode(enc, av); err != nil {
			return err
		}
	}
	return enc.WriteToken(jsontext.EndObject)
}

// MarshalJSON writes a as a JSON object (encoding/json); no axes is
// null, as a nil map is there.
func (a Axes) MarshalJSON() ([]byte, error) {
	if a.set == 0 {
		return []byte("null"), nil
	}
	return json.Marshal(a)
}

// UnmarshalJSONFrom reads a JSON object of axis names; an unknown axis
// is an error.
func (a *Axes) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	var m map[string]AxisVerdict
	if err := json.UnmarshalDecode(dec, &m); err != nil {
		return err
	}
	*a = Axes{}
	for name, av := range m {
		if axisIndex(name) < 0 {
			return fmt.Errorf("classifier: unknown axis %q", name)
		}
		a.Set(name, av)
	}
	return nil
}

// UnmarshalJSON is UnmarshalJSONFrom for encoding/json.
func (a *Axes) UnmarshalJSON(b []byte) error { return json.Unmarshal(b, a) }
