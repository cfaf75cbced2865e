package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTick is Linux's USER_HZ, the unit of /proc/PID/stat's CPU times;
// it is 100 on every architecture Go runs on.
const clockTick = 100

// procStat is what the tool reads of a process: its CPU time (user +
// system, and that of its reaped children when asked) and resident set.
type procStat struct {
	CPU time.Duration
	RSS int64 // bytes
}

// readStat reads /proc/PID/stat. With children, the CPU of the process's
// waited-for children is added (PostgreSQL's postmaster reaps a backend
// when its connection ends).
func readStat(pid int, children bool) (procStat, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, fmt.Errorf("read stat of %d: %w", pid, err)
	}
	return parseStat(data, children)
}

// parseStat parses one /proc/PID/stat line. The command name (field 2)
// may hold spaces and parentheses, so fields are counted from its last ')'.
func parseStat(data []byte, children bool) (procStat, error) {
	end := bytes.LastIndexByte(data, ')')
	if end < 0 {
		return procStat{}, fmt.Errorf("stat: no command name in %q", data)
	}
	f := strings.Fields(string(data[end+1:]))
	// f[0] is field 3 (state): field n is f[n-3].
	if len(f) < 22 {
		return procStat{}, fmt.Errorf("stat: %d fields after the name", len(f))
	}
	num := func(n int) (int64, error) { return strconv.ParseInt(f[n-3], 10, 64) }
	var ticks int64
	fields := []int{14, 15}
	if children {
		fields = append(fields, 16, 17)
	}
	for _, n := range fields {
		v, err := num(n)
		if err != nil {
			return procStat{}, fmt.Errorf("stat field %d: %w", n, err)
		}
		ticks += v
	}
	pages, err := num(24)
	if err != nil {
		return procStat{}, fmt.Errorf("stat field 24: %w", err)
	}
	return procStat{
		CPU: time.Duration(ticks) * time.Second / clockTick,
		RSS: pages * int64(os.Getpagesize()),
	}, nil
}

// pgCPU is the CPU time of a PostgreSQL cluster: its postmaster (with the
// backends it reaped) and its live children.
func pgCPU(dataDir string) (time.Duration, error) {
	raw, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return 0, fmt.Errorf("postgres pid: %w", err)
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	pm, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		return 0, fmt.Errorf("postgres pid %q: %w", line, err)
	}
	st, err := readStat(pm, true)
	if err != nil {
		return 0, err
	}
	total := st.CPU
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, fmt.Errorf("postgres children: %w", err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == pm {
			continue
		}
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue // gone meanwhile
		}
		end := bytes.LastIndexByte(data, ')')
		if end < 0 {
			continue
		}
		f := strings.Fields(string(data[end+1:]))
		if len(f) < 2 || f[1] != strconv.Itoa(pm) {
			continue
		}
		if st, err := parseStat(data, false); err == nil {
			total += st.CPU
		}
	}
	return total, nil
}

// loadAverage is the machine's 1-minute load average, as /proc/loadavg
// gives it ("?" when unreadable).
func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(raw))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}
