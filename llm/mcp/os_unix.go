//go:build unix

package mcp

import (
	"os/exec"
	"syscall"
)

// ownGroup starts cmd as the leader of a new process group.
func ownGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// termGroup and killGroup signal cmd's whole group. An error means the
// group is gone already, which is what they are for.
func termGroup(cmd *exec.Cmd) { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
func killGroup(cmd *exec.Cmd) { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
