//go:build !race

package govern

const raceEnabled = false
