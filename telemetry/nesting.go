package telemetry

// Nesting returns how deeply the JSON text b nests arrays and objects:
// 0 for a scalar, 1 for [] or {"a":1}. Brackets inside strings do not
// count. b need not be valid; only brackets and strings are looked at.
func Nesting(b []byte) int {
	depth, most := 0, 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case '[', '{':
			depth++
			most = max(most, depth)
		case ']', '}':
			depth--
		}
	}
	return most
}
