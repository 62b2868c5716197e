//go:build !unix

package mcp

import "os/exec"

// Without process groups, the command itself is all that can be ended.
func ownGroup(*exec.Cmd) {}

// termGroup has no gentler signal to send here; killGroup ends the command.
// An error means it is gone already.
func termGroup(*exec.Cmd)     {}
func killGroup(cmd *exec.Cmd) { _ = cmd.Process.Kill() }
