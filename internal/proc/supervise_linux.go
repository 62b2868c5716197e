package proc

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// self is this program, even if its file was replaced since it started.
func self() (string, error) { return "/proc/self/exe", nil }

func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: deathSignal}
}

// becomeSubreaper makes the supervisor the parent of any descendant whose
// own parent exits, so killEscaped finds it.
func becomeSubreaper() {
	const prSetChildSubreaper = 36
	// Linux has had it since 3.4. Without it an orphaned descendant goes to
	// init, where only the group kill can reach it: nothing to do but go on.
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
}

// killEscaped kills, with SIGKILL, every live descendant of this process
// outside its process group (a setsid'd daemon), and their descendants,
// until none is left: a process forked meanwhile is found on the next pass.
func killEscaped() {
	me := os.Getpid()
	group := syscall.Getpgrp()
	for pass := 0; pass < 1000; pass++ {
		found := false
		for _, p := range descendants(me) {
			if p.pgrp != group {
				_ = syscall.Kill(p.pid, syscall.SIGKILL) // it may have exited meanwhile: the next pass sees
				found = true
			}
		}
		if !found {
			return
		}
	}
}

type procInfo struct{ pid, ppid, pgrp int }

// descendants lists the live (not zombie) descendants of pid, from /proc.
func descendants(pid int) []procInfo {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]procInfo{}
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces and ')'.
		i := strings.LastIndexByte(string(data), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(data[i+1:]))
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		pgrp, _ := strconv.Atoi(f[2])
		children[ppid] = append(children[ppid], procInfo{n, ppid, pgrp})
	}
	var out []procInfo
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c.pid)
		}
	}
	return out
}
