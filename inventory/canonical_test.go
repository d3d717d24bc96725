package inventory

import (
	"encoding/binary"
	"encoding/hex"
	"math"
	"strconv"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// The examples of RFC 8785 section 3.2.2 (serialization of primitives) and
// section 3.2.3 (sorting of properties), and the number table of its
// Appendix B, run through jsontext's Canonicalize. Inventory hashes are
// only portable if these hold.
func TestCanonicalRFC8785Examples(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{
			name: "section 3.2.2 primitives",
			in: `{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`,
			want: `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`,
		},
		{
			name: "section 3.2.3 sorting by UTF-16 code units",
			in: `{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
}`,
			want: "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"ö\":\"Latin Small Letter O With Diaeresis\",\"€\":\"Euro Sign\",\"😀\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}",
		},
		{
			// U+1F600 is the surrogate pair D83D DE00, which sorts before
			// U+E000 in UTF-16 although it sorts after it by code point
			// (and so in UTF-8 byte order).
			name: "surrogate pair before upper BMP",
			in:   `{"\uffff":1,"\ue000":3,"\ud83d\ude00":2}`,
			want: "{\"😀\":2,\"\ue000\":3,\"\uffff\":1}",
		},
		{name: "1e30", in: `1e30`, want: `1e+30`},
		{name: "4.50", in: `4.50`, want: `4.5`},
		{name: "0.002", in: `0.002`, want: `0.002`},
		{name: "2e-3", in: `2e-3`, want: `0.002`},
		{name: "minus zero", in: `-0`, want: `0`},
		{name: "minus zero float", in: `-0.0`, want: `0`},
		{name: "integer with exponent", in: `1.0E2`, want: `100`},
		{name: "1e21 switches to exponent", in: `1e21`, want: `1e+21`},
		{name: "1e-7 switches to exponent", in: `0.0000001`, want: `1e-7`},
		{name: "beyond 2^53 loses precision", in: `9007199254740993`, want: `9007199254740992`},
		{name: "control characters", in: `"\u0000\u0008\u0009\u000a\u000c\u000d\u001f"`, want: `"\u0000\b\t\n\f\r\u001f"`},
		{name: "no escaping of html or js specials", in: `"<>&\u2028\u2029"`, want: "\"<>&\u2028\u2029\""},
		{name: "escaped solidus is unescaped", in: `"\/"`, want: `"/"`},
		{name: "unicode escapes become UTF-8", in: `"\u00e9\u4e2d"`, want: `"é中"`},
		{name: "DEL is not escaped", in: "\"\u007f\"", want: "\"\u007f\""},
		{name: "nested objects sorted", in: `{"b":{"z":1,"a":2},"a":[{"y":1,"x":2}]}`, want: `{"a":[{"x":2,"y":1}],"b":{"a":2,"z":1}}`},
		{name: "whitespace removed", in: " [ 1 , { \"a\" : true } ]\n", want: `[1,{"a":true}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := canonical(jsontext.Value(tt.in))
			if err != nil {
				t.Fatalf("canonical(%s): %v", tt.in, err)
			}
			if string(got) != tt.want {
				t.Errorf("canonical(%s)\n got %s\nwant %s", tt.in, got, tt.want)
			}
		})
	}
}

// TestCanonicalRFC8785Numbers checks the IEEE 754 table of RFC 8785
// Appendix B. Each double goes in both as its shortest form and as a
// 17-digit exponent form, which must canonicalize to the same text.
func TestCanonicalRFC8785Numbers(t *testing.T) {
	tests := []struct{ bits, want string }{
		{"0000000000000000", "0"},
		{"8000000000000000", "0"},
		{"0000000000000001", "5e-324"},
		{"8000000000000001", "-5e-324"},
		{"7fefffffffffffff", "1.7976931348623157e+308"},
		{"ffefffffffffffff", "-1.7976931348623157e+308"},
		{"4340000000000000", "9007199254740992"},
		{"c340000000000000", "-9007199254740992"},
		{"4430000000000000", "295147905179352830000"},
		{"44b52d02c7e14af5", "9.999999999999997e+22"},
		{"44b52d02c7e14af6", "1e+23"},
		{"44b52d02c7e14af7", "1.0000000000000001e+23"},
		{"444b1ae4d6e2ef4e", "999999999999999700000"},
		{"444b1ae4d6e2ef4f", "999999999999999900000"},
		{"444b1ae4d6e2ef50", "1e+21"},
		{"3eb0c6f7a0b5ed8c", "9.999999999999997e-7"},
		{"3eb0c6f7a0b5ed8d", "0.000001"},
		{"41b3de4355555553", "333333333.3333332"},
		{"41b3de4355555554", "333333333.33333325"},
		{"41b3de4355555555", "333333333.3333333"},
		{"41b3de4355555556", "333333333.3333334"},
		{"41b3de4355555557", "333333333.33333343"},
		{"becbf647612f3696", "-0.0000033333333333333333"},
		{"43143ff3c1cb0959", "1424953923781206.2"},
	}
	for _, tt := range tests {
		t.Run(tt.bits, func(t *testing.T) {
			raw, err := hex.DecodeString(tt.bits)
			if err != nil {
				t.Fatal(err)
			}
			f := math.Float64frombits(binary.BigEndian.Uint64(raw))
			for _, in := range []string{
				strconv.FormatFloat(f, 'g', -1, 64),
				strconv.FormatFloat(f, 'e', 16, 64),
			} {
				got, err := canonical(jsontext.Value(in))
				if err != nil {
					t.Fatalf("canonical(%s): %v", in, err)
				}
				if string(got) != tt.want {
					t.Errorf("canonical(%s) = %s, want %s", in, got, tt.want)
				}
			}
		})
	}
}

// RFC 8785 builds on I-JSON (RFC 7493): duplicate names and invalid UTF-8
// must be rejected rather than hashed in some arbitrary form.
func TestCanonicalRejectsNonIJSON(t *testing.T) {
	for _, in := range []string{
		`{"a":1,"a":2}`,
		"\"\xff\"",
		`"\ud800"`,
		`{"a":`,
		`[1,]`,
		`NaN`,
	} {
		if got, err := canonical(jsontext.Value(in)); err == nil {
			t.Errorf("canonical(%q) = %s, want an error", in, got)
		}
	}
}
