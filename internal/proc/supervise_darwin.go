package proc

import (
	"os"
	"os/exec"
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

// startSupervised starts the supervisor's command (never confined here:
// the runner refuses a confined command on macOS).
func startSupervised(argv0, path string, args []string) (*exec.Cmd, <-chan struct{}, error) {
	cmd := exec.Command(path, args...)
	cmd.Args[0] = argv0
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	return cmd, nil, cmd.Start()
}

// maybeLaunch: there is no launcher on macOS.
func maybeLaunch() {}

// cleanUpConfinement: nothing is confined on macOS.
func cleanUpConfinement(int) {}
