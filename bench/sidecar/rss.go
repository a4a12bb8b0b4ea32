package sidecar

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Memory is a process's resident set as the kernel reports it.
type Memory struct {
	RSS  int64 // bytes resident now (VmRSS)
	Peak int64 // the most ever resident (VmHWM)
}

// MemoryOf reads /proc/<pid>/status (Linux only).
func MemoryOf(pid int) (Memory, error) {
	var m Memory
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return m, fmt.Errorf("process memory: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		fields := strings.Fields(rest) // "12345 kB"
		if len(fields) != 2 || fields[1] != "kB" {
			return m, fmt.Errorf("process memory: unexpected %s line %q", name, sc.Text())
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return m, fmt.Errorf("process memory: %s: %w", name, err)
		}
		if name == "VmRSS" {
			m.RSS = kb << 10
		} else {
			m.Peak = kb << 10
		}
	}
	if err := sc.Err(); err != nil {
		return m, fmt.Errorf("process memory: %w", err)
	}
	if m.RSS == 0 {
		return m, fmt.Errorf("process memory: no VmRSS for pid %d", pid)
	}
	return m, nil
}

// Memory reads the process's resident set.
func (p *Process) Memory() (Memory, error) { return MemoryOf(p.PID()) }
