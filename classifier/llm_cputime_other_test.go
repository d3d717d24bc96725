//go:build !unix

package classifier

import (
	"testing"
	"time"
)

func llmCPUTime() time.Duration { return 0 }

func llmReportCPU(*testing.B, time.Duration) {}
