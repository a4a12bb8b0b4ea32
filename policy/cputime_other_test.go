//go:build !linux

package policy

import "time"

// processCPU is not measured outside Linux.
func processCPU() time.Duration { return 0 }
