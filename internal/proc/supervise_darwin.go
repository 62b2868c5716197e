package proc

import (
	"os"
	"syscall"
)

func self() (string, error) { return os.Executable() }

// sysProcAttr: macOS has no Pdeathsig; the lifeline pipe alone tells the
// supervisor that the kernel died.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// becomeSubreaper: macOS has no subreaper.
func becomeSubreaper() {}

// killDescendants: without /proc, a descendant that left the process group is
// not found; only the group is killed.
func killDescendants() {}
