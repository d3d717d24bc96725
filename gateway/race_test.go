//go:build race

package gateway

// raceEnabled: the race detector is on, and a test that makes work in
// bulk to show a bound takes too long under it.
const raceEnabled = true
