package inventory

import "testing"

// TestScanBrailleTextNotInvisible: U+2800 is the blank cell of Braille
// text, the space between its words; a description with Braille in it (a
// Braille translator's example) is not hiding anything. U+2800 among
// Latin text still is (TestScanInvisibleBlanks).
func TestScanBrailleTextNotInvisible(t *testing.T) {
	for _, d := range []string{
		"Translates English text to Grade 2 Braille, e.g. ⠓⠑⠇⠇⠕⠀⠺⠕⠗⠇⠙ for hello world.",
		"Renders a Braille display line: ⠠⠞⠓⠑⠀⠟⠥⠊⠉⠅⠀⠃⠗⠕⠺⠝⠀⠋⠕⠭",
	} {
		if fs := Scan(sealed(t, Tool{Name: "braille", Description: d}), ScanOptions{}); Suspicious(fs) {
			t.Errorf("Scan(%q) = %+v, want not suspicious", d, fs)
		}
	}
}
