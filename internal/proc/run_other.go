//go:build !linux && !darwin

package proc

import (
	"context"
	"errors"
	"os/exec"
)

// run starts cmd itself: there is no process group to kill, so on cancel
// or deadline only the command is killed (its children may survive), and
// nothing ends it when the kernel is killed.
func run(ctx context.Context, cmd *exec.Cmd) (outcome, error) {
	c := exec.CommandContext(ctx, cmd.Path)
	c.Args, c.Dir, c.Env, c.Stdin, c.Stdout, c.Stderr, c.WaitDelay = cmd.Args, cmd.Dir, cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr, cmd.WaitDelay
	if err := c.Start(); err != nil {
		return outcome{}, err
	}
	err := c.Wait()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) && !errors.Is(err, exec.ErrWaitDelay) {
		return outcome{}, err
	}
	out := outcome{exitCode: c.ProcessState.ExitCode()}
	if ctx.Err() != nil && !c.ProcessState.Success() {
		out.stopped = true
	}
	return out, nil
}
