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
	RSS  int64 `json:"rss"`  // bytes resident now (VmRSS)
	Anon int64 `json:"anon"` // of which anonymous memory: the Go heap, stacks (RssAnon)
	File int64 `json:"file"` // of which mapped file pages: Badger's tables and logs (RssFile)
	Peak int64 `json:"peak"` // the most ever resident (VmHWM)
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
		field := map[string]*int64{"VmRSS": &m.RSS, "VmHWM": &m.Peak, "RssAnon": &m.Anon, "RssFile": &m.File}[name]
		if !ok || field == nil {
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
		*field = kb << 10
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
