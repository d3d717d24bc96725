//go:build !linux

package classifier

import "time"

func threadCPU() (time.Duration, bool) { return 0, false }
