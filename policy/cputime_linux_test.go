package policy

import (
	"syscall"
	"time"
)

// processCPU is the CPU time the process used so far (all threads, GC
// included), to report a benchmark's cost independently of other load.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
