//go:build linux

// Package proctest tells tests whether processes are still alive, from
// /proc. Only tests import it.
package proctest

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// Alive reports whether pid is a running process (a zombie is dead).
func Alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// pid (comm) state ...: comm may hold spaces and ')'.
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// WaitGone waits until every pid is dead or the deadline passes, and
// returns those still alive.
func WaitGone(pids []int, deadline time.Time) []int {
	for {
		var left []int
		for _, p := range pids {
			if Alive(p) {
				left = append(left, p)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(5 * time.Millisecond)
	}
}
