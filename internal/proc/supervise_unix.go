//go:build linux || darwin

package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// superviseVar, when set (to the parent's pid), makes this executable a
// supervisor instead of whatever it usually is.
const superviseVar = "LLMKERNELS_PROC_SUPERVISOR"

// killBackstop is how long the runner lets the supervisor take to end the
// group on cancel before it kills the group itself. It only matters when
// the supervisor cannot act (the command stopped it with SIGSTOP), and it
// must be long: killing the supervisor in the middle of its sweep leaves the
// descendants that left the group (setsid) to init, beyond anyone's reach.
// Under load a sweep of a fast-forking command took over 500 ms here.
const killBackstop = 5 * time.Second

// deathSignal is what the kernel arms as the supervisor's Pdeathsig
// (Linux); the supervisor acts on it only if its parent really changed.
const deathSignal = syscall.SIGUSR1

// The supervisor's extra file descriptors.
const (
	statusFD   = 3 // supervisor → runner: one line saying how the command ended
	lifelineFD = 4 // runner → supervisor: never written; EOF means the runner died
)

func init() {
	maybeLaunch()
	ppid := os.Getenv(superviseVar)
	switch {
	case ppid == "":
	case startedByRunner():
		os.Exit(supervise(ppid))
	default:
		// The marker reached a program the runner did not start (exported
		// by mistake, or set by a command): it runs as itself, and the
		// marker goes no further.
		_ = os.Unsetenv(superviseVar) // fails only for an invalid name, and this one is valid
	}
}

// startedByRunner reports whether this process has what run gives the
// supervisor and nothing else has by chance: a command after "--", a
// process group of its own (so that ending the group ends no one else's),
// and the status and lifeline pipes.
func startedByRunner() bool {
	return len(os.Args) >= 3 && os.Args[1] == "--" && syscall.Getpgrp() == os.Getpid() &&
		isPipe(statusFD) && isPipe(lifelineFD)
}

func isPipe(fd int) bool {
	var st syscall.Stat_t
	return syscall.Fstat(fd, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFIFO
}

// run starts the supervisor for cmd and waits for it.
func run(ctx context.Context, cmd *exec.Cmd) (outcome, error) {
	exe, err := self()
	if err != nil {
		return outcome{}, fmt.Errorf("cannot find this program to supervise the command: %w", err)
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return outcome{}, err
	}
	defer func() { _ = statusR.Close() }() // a pipe's read end: what it held is read below
	lifeR, lifeW, err := os.Pipe()
	if err != nil {
		_ = statusW.Close() // the pipe's error is the one to report
		return outcome{}, err
	}
	// The write end must stay open until the supervisor is gone: its EOF
	// tells the supervisor that this process died. Closing it afterwards
	// can report nothing that matters.
	defer func() { _ = lifeW.Close() }()

	sup := exec.CommandContext(ctx, exe, append([]string{"--", cmd.Path}, cmd.Args[1:]...)...)
	sup.Args[0] = cmd.Args[0] + " (supervisor)"
	sup.Dir, sup.Stdin, sup.Stdout, sup.Stderr, sup.WaitDelay = cmd.Dir, cmd.Stdin, cmd.Stdout, cmd.Stderr, cmd.WaitDelay
	sup.Env = append(cmd.Env, superviseVar+"="+strconv.Itoa(os.Getpid()))
	sup.ExtraFiles = []*os.File{statusW, lifeR}
	sup.SysProcAttr = sysProcAttr()
	var waited atomic.Bool
	sup.Cancel = func() error {
		pid := sup.Process.Pid
		time.AfterFunc(killBackstop, func() {
			if !waited.Load() {
				_ = syscall.Kill(-pid, syscall.SIGKILL) // ESRCH: the group is gone already, which is the aim
			}
		})
		return syscall.Kill(pid, syscall.SIGTERM)
	}
	err = sup.Start()
	// The supervisor has its own copies; ours only have to go, so that its
	// exit shows as EOF.
	_ = statusW.Close()
	_ = lifeR.Close()
	if err != nil {
		return outcome{}, err
	}
	werr := sup.Wait()
	waited.Store(true)
	// The supervisor ends the group before it exits, unless it was killed
	// from outside (a command can kill -9 its parent): then the group
	// lives on, and only this process can still end it. The group's id
	// stays reserved while any member lives, so this reaches no one else.
	_ = syscall.Kill(-sup.Process.Pid, syscall.SIGKILL) // ESRCH: the supervisor had ended it
	// Every copy of the status pipe's write end is closed by now (the
	// supervisor's is close-on-exec for the command); the deadline only
	// guards against the impossible.
	_ = statusR.SetReadDeadline(time.Now().Add(time.Second)) // pipes take deadlines; see above
	line, _ := io.ReadAll(io.LimitReader(statusR, 4096))
	status := strings.TrimSpace(string(line))
	verb, arg, _ := strings.Cut(status, " ")
	switch verb {
	case "exit":
		code, _ := strconv.Atoi(arg)
		return outcome{exitCode: code}, nil
	case "signal":
		n, _ := strconv.Atoi(arg)
		return outcome{exitCode: -1, signal: syscall.Signal(n).String()}, nil
	case "start":
		return outcome{}, errors.New(arg)
	case "stopped":
		return outcome{exitCode: -1, signal: syscall.SIGKILL.String(), stopped: true}, nil
	case "limit":
		return outcome{exitCode: -1, signal: syscall.SIGKILL.String(), stopped: true, limit: arg}, nil
	}
	// No status: the supervisor was killed before it could say (by the
	// backstop, or from outside), and the group with it.
	if ctx.Err() != nil {
		return outcome{exitCode: -1, signal: syscall.SIGKILL.String(), stopped: true}, nil
	}
	if ws, ok := sup.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return outcome{exitCode: -1, signal: ws.Signal().String()}, nil
	}
	return outcome{}, fmt.Errorf("its supervisor ended without saying how the command ended (%v)", werr)
}

// supervise is the supervisor's whole life: start the command, wait for
// it, the runner's request or the runner's death, then end the group.
func supervise(ppidText string) int {
	ppid, _ := strconv.Atoi(ppidText)
	_ = os.Unsetenv(superviseVar) // fails only for an invalid name, and this one is valid
	syscall.CloseOnExec(statusFD)
	syscall.CloseOnExec(lifelineFD)
	status := os.NewFile(statusFD, "status")
	lifeline := os.NewFile(lifelineFD, "lifeline")
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, deathSignal)
	becomeSubreaper()
	if os.Getppid() != ppid {
		endGroup(ppid) // the runner died before the supervisor could watch it
	}
	cmd, overLimit, err := startSupervised(strings.TrimSuffix(os.Args[0], " (supervisor)"), os.Args[2], os.Args[3:])
	if err != nil {
		_, _ = fmt.Fprintf(status, "start %v", err)
		return 127
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait() // how it ended is read from cmd.ProcessState
		close(exited)
	}()
	orphaned := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, lifeline) // EOF or an error: the runner is gone either way
		close(orphaned)
	}()
	for {
		select {
		case <-exited:
			ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
			if ws.Signaled() {
				_, _ = fmt.Fprintf(status, "signal %d", ws.Signal())
			} else {
				_, _ = fmt.Fprintf(status, "exit %d", ws.ExitStatus())
			}
		case sig := <-signals:
			if sig == deathSignal && os.Getppid() == ppid {
				continue // a thread of the runner ended, not the runner
			}
			_, _ = fmt.Fprintf(status, "stopped")
		case <-overLimit:
			_, _ = fmt.Fprintf(status, "limit %s", LimitProcesses)
		case <-orphaned:
		}
		endGroup(ppid)
	}
}

// endGroup kills every descendant, in the process group or out of it, then
// the group, the supervisor included. A confined command's private
// temporary directory goes with it, and its pids cgroup when the runner
// (pid runner) is gone, so that neither outlives a kernel killed with
// SIGKILL.
func endGroup(runner int) {
	killDescendants()
	cleanUpConfinement(runner)
	// This kills the supervisor too; should it fail, os.Exit ends it.
	_ = syscall.Kill(0, syscall.SIGKILL)
	os.Exit(1)
}
