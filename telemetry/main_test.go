package telemetry

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine outlives them: every
// exporter and reader must stop on Shutdown.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
