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
// own parent exits, so killDescendants finds it.
func becomeSubreaper() {
	const prSetChildSubreaper = 36
	// Linux has had it since 3.4. Without it an orphaned descendant goes to
	// init, where only the group kill can reach it: nothing to do but go on.
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
}

// killDescendants kills, with SIGKILL, every live descendant of this process,
// in the process group or out of it (a setsid'd daemon), until none is
// left. Killing only those outside the group, then the group, would let a
// member still running between the two start one more that leaves it;
// here each pass kills everything it sees, so whatever a process forked
// before it died is found by the next pass (it is re-parented to this
// subreaper), and the passes end once nothing is alive to fork.
//
// They end after two passes in a row find nothing, not one: a pass reads
// /proc one process at a time, so it can read a child (its parent still
// the one being killed) before that parent, and then read the parent as a
// zombie, which links nothing; the child is missed. Its parent was a
// zombie, so the child had been re-parented to this process already, and
// the next pass finds it. With pid_max at 32768 and a command forking
// fast, pids wrap and children with lower pids than their parents are
// common (TestNoEscapeWhileTheGroupEnds caught one in 15 runs).
func killDescendants() {
	me := os.Getpid()
	for pass, empty := 0, 0; pass < 1000 && empty < 2; pass++ {
		empty++
		for _, p := range descendants(me) {
			_ = syscall.Kill(p.pid, syscall.SIGKILL) // it may have exited meanwhile: the next pass sees
			empty = 0
		}
	}
	// Every one of them is now a zombie and, the supervisor being their
	// subreaper, its child: reap them, or they would go to whoever adopts
	// the supervisor's orphans (the kernel itself when it is PID 1 in a
	// container, which never reaps them).
	for {
		var ws syscall.WaitStatus
		if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 || err != nil {
			return
		}
	}
}

type procInfo struct{ pid, ppid int }

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
		// pid (comm) state ppid ...: comm may hold spaces and ')'.
		i := strings.LastIndexByte(string(data), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(data[i+1:]))
		if len(f) < 2 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		children[ppid] = append(children[ppid], procInfo{n, ppid})
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
