//go:build linux

package proc

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmkernels/kernels/internal/proc/proctest"
)

// TestMain lets this test binary play the processes the tests need
// (PROC_TEST_ROLE); the supervisor mode is handled by the package's init.
func TestMain(m *testing.M) {
	switch os.Getenv("PROC_TEST_ROLE") {
	case "":
		os.Exit(m.Run())
	case "stubborn":
		stubborn()
	case "sleeper":
		signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
		sleepForever()
	case "kernel":
		// A kernel running a stubborn command, until it is killed.
		res, err := Run(context.Background(), Cmd{Name: os.Args[0], Env: []string{"PROC_TEST_ROLE=stubborn"}})
		os.Stderr.WriteString("the kernel's command ended: " + errString(err) + " " + resultString(res))
		os.Exit(3)
	}
	os.Exit(2)
}

// stubborn ignores SIGTERM, starts a grandchild in its process group and
// another that leaves it (setsid), writes the three pids to PROC_TEST_PIDS
// and waits forever.
func stubborn() {
	signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	pids := []string{strconv.Itoa(os.Getpid())}
	for _, setsid := range []bool{false, true} {
		c := exec.Command(os.Args[0])
		c.Env = append(os.Environ(), "PROC_TEST_ROLE=sleeper")
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: setsid}
		if err := c.Start(); err != nil {
			os.Stderr.WriteString(err.Error())
			os.Exit(1)
		}
		pids = append(pids, strconv.Itoa(c.Process.Pid))
	}
	file := os.Getenv("PROC_TEST_PIDS")
	os.WriteFile(file+".tmp", []byte(strings.Join(pids, " ")), 0o644)
	os.Rename(file+".tmp", file) // whole or absent
	sleepForever()
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func resultString(r *Result) string {
	if r == nil {
		return "<nil>"
	}
	return strconv.Itoa(r.ExitCode) + " " + r.Signal + " " + errString(r.Stopped)
}

// waitPids waits for the stubborn command's pid file.
func waitPids(t *testing.T, file string) []int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if data, err := os.ReadFile(file); err == nil {
			var pids []int
			for _, f := range strings.Fields(string(data)) {
				n, _ := strconv.Atoi(f)
				pids = append(pids, n)
			}
			return pids
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("the command never wrote its pids")
	return nil
}

// TestCancelEndsTheWholeGroup pins that cancelling the context ends a
// command that ignores SIGTERM, its grandchild in the group and the one
// that left the group (setsid), all within 1 s.
func TestCancelEndsTheWholeGroup(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pids")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type ran struct {
		res *Result
		err error
	}
	done := make(chan ran, 1)
	go func() {
		res, err := Run(ctx, Cmd{Name: os.Args[0], Env: []string{"PROC_TEST_ROLE=stubborn", "PROC_TEST_PIDS=" + file}})
		done <- ran{res, err}
	}()
	pids := waitPids(t, file)
	cancel()
	at := time.Now()
	var r ran
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return within 30 s of cancel")
	}
	if left := proctest.WaitGone(pids, at.Add(time.Second)); len(left) > 0 {
		t.Fatalf("alive 1 s after cancel: %v of %v (command, grandchild, setsid grandchild)", left, pids)
	}
	t.Logf("Run returned %v after cancel", time.Since(at))
	if r.err != nil || !errors.Is(r.res.Stopped, context.Canceled) || r.res.OK() {
		t.Fatalf("Run: %v, %s; want Stopped = context.Canceled", r.err, resultString(r.res))
	}
}

// TestDeadlineStopsTheCommand pins that a deadline ends the command and
// says so.
func TestDeadlineStopsTheCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	res, err := Run(ctx, Cmd{Name: "sleep", Args: []string{"60"}})
	if err != nil || !errors.Is(res.Stopped, context.DeadlineExceeded) || res.Duration > 30*time.Second {
		t.Fatalf("Run: %v, %s after %v; want Stopped = DeadlineExceeded", err, resultString(res), res.Duration)
	}
	if !strings.Contains(res.Err().Error(), "deadline") {
		t.Fatalf("Err() = %v", res.Err())
	}
}

// TestKill9OfTheKernelLeavesNoDescendant pins that when the kernel process
// is killed with SIGKILL while a command runs, every process it started
// (supervisor, command, grandchildren in and out of the group) dies too.
func TestKill9OfTheKernelLeavesNoDescendant(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pids")
	kernel := exec.Command(os.Args[0])
	kernel.Env = append(os.Environ(), "PROC_TEST_ROLE=kernel", "PROC_TEST_PIDS="+file)
	var stderr bytes.Buffer
	kernel.Stderr = &stderr
	if err := kernel.Start(); err != nil {
		t.Fatal(err)
	}
	pids := waitPids(t, file)
	var all []int
	for _, p := range descendants(kernel.Process.Pid) {
		all = append(all, p.pid)
	}
	for _, p := range pids {
		if !slices.Contains(all, p) {
			t.Fatalf("pid %d is not a descendant of the kernel %d (%v)", p, kernel.Process.Pid, all)
		}
	}
	if len(all) < 4 {
		t.Fatalf("descendants %v: want the supervisor, the command and two grandchildren", all)
	}
	kernel.Process.Signal(syscall.SIGKILL)
	kernel.Wait()
	if left := proctest.WaitGone(all, time.Now().Add(10*time.Second)); len(left) > 0 {
		for _, p := range left {
			syscall.Kill(p, syscall.SIGKILL)
		}
		t.Fatalf("alive 10 s after kill -9 of the kernel: %v of its descendants %v (%s)", left, all, stderr.String())
	}
}

// TestEnvironmentScrubbed pins that the command sees no provider secret,
// nor a copy of one under another name, unless the user passes it on by
// name, and that it sees what the kernel sets and everything else.
func TestEnvironmentScrubbed(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")
	t.Setenv("OPENAI_API_KEY", "sk-openai-test-0123456789")
	t.Setenv("GROQ_API_KEY", "gsk-test-0123456789")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "token-test-0123456789")
	t.Setenv("LUMEN_EMBEDDING_KEY", "embed-test-0123456789")
	t.Setenv("MY_COPY", "sk-ant-test-0123456789")
	t.Setenv("MISTRAL_API_KEY", "mistral-test-0123456789")
	t.Setenv("HARMLESS", "kept")
	t.Setenv(PassEnvVar, "mistral_api_key, GITHUB_TOKEN")
	res, err := Run(context.Background(), Cmd{Name: "env", Env: []string{"LUMEN_SKILL=chat"}})
	if err != nil || !res.OK() {
		t.Fatalf("env: %v %v", err, res.Err())
	}
	got := map[string]string{}
	for _, line := range strings.Split(string(res.Stdout), "\n") {
		k, v, _ := strings.Cut(line, "=")
		got[k] = v
	}
	for _, k := range []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GROQ_API_KEY", "ANTHROPIC_AUTH_TOKEN", "LUMEN_EMBEDDING_KEY", "MY_COPY"} {
		if v, ok := got[k]; ok {
			t.Errorf("the command sees %s=%s", k, v)
		}
	}
	if strings.Contains(string(res.Stdout), "sk-ant-test") {
		t.Error("the Anthropic key's value reached the command")
	}
	for k, want := range map[string]string{"MISTRAL_API_KEY": "mistral-test-0123456789", "HARMLESS": "kept", "LUMEN_SKILL": "chat", "PATH": os.Getenv("PATH")} {
		if got[k] != want {
			t.Errorf("the command sees %s=%q, want %q", k, got[k], want)
		}
	}
	if _, ok := got[superviseVar]; ok {
		t.Error("the supervisor's marker reached the command")
	}
}

// TestAnswerKeptWhenABackgroundChildHoldsStdout pins that a command which
// writes its answer and exits, leaving a background child holding stdout,
// gives its answer at once and leaves no child behind.
func TestAnswerKeptWhenABackgroundChildHoldsStdout(t *testing.T) {
	res, err := Run(context.Background(), Cmd{Name: "sh", Args: []string{"-c", `sleep 60 & echo "$!"; echo answer; exit 0`}})
	if err != nil || !res.OK() {
		t.Fatalf("Run: %v %v", err, res.Err())
	}
	lines := strings.Fields(string(res.Stdout))
	if len(lines) != 2 || lines[1] != "answer" {
		t.Fatalf("stdout %q, want the pid and the answer", res.Stdout)
	}
	if res.Duration > 30*time.Second {
		t.Fatalf("Run waited %v for the background child", res.Duration)
	}
	pid, _ := strconv.Atoi(lines[0])
	if left := proctest.WaitGone([]int{pid}, time.Now().Add(10*time.Second)); len(left) > 0 {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("the background child %d outlived the command", pid)
	}
}

// TestOutputCaps pins the caps: the first bytes of stdout with the rest
// counted, the last bytes of stderr, stderr merged in order, and a command
// stopped when it overflows and StopOnOverflow is set.
func TestOutputCaps(t *testing.T) {
	ctx := context.Background()
	res, err := Run(ctx, Cmd{Name: "sh", Args: []string{"-c", `head -c 100000 /dev/zero | tr '\0' a; printf '%05000d' 0 >&2; echo END >&2`}, MaxOutput: 1000})
	if err != nil || !res.OK() {
		t.Fatalf("Run: %v %v", err, res.Err())
	}
	if len(res.Stdout) != 1000 || res.StdoutDropped != 99000 || res.Stdout[0] != 'a' {
		t.Fatalf("stdout kept %d bytes, dropped %d; want 1000 and 99000", len(res.Stdout), res.StdoutDropped)
	}
	if len(res.Stderr) != 1000 || !strings.HasSuffix(string(res.Stderr), "0END\n") {
		t.Fatalf("stderr kept %d bytes ending %q; want the last 1000", len(res.Stderr), res.Stderr[max(0, len(res.Stderr)-10):])
	}

	res, err = Run(ctx, Cmd{Name: "sh", Args: []string{"-c", `echo a; echo b >&2; echo c`}, MergeStderr: true})
	if err != nil || string(res.Stdout) != "a\nb\nc\n" || len(res.Stderr) != 0 {
		t.Fatalf("merged output %q (stderr %q), %v; want a, b, c in order", res.Stdout, res.Stderr, err)
	}

	res, err = Run(ctx, Cmd{Name: "yes", MaxOutput: 4096, StopOnOverflow: true})
	if err != nil || !errors.Is(res.Stopped, ErrOutputLimit) || len(res.Stdout) != 4096 {
		t.Fatalf("an endless writer: %v, %s, %d bytes; want it stopped at the cap", err, resultString(res), len(res.Stdout))
	}
}

// TestExitStatusesAndStartErrors pins how a command's end is reported.
func TestExitStatusesAndStartErrors(t *testing.T) {
	ctx := context.Background()
	res, err := Run(ctx, Cmd{Name: "sh", Args: []string{"-c", "exit 3"}})
	if err != nil || res.ExitCode != 3 || res.OK() || res.Err().Error() != "exit status 3" {
		t.Fatalf("exit 3: %v, %s", err, resultString(res))
	}
	res, err = Run(ctx, Cmd{Name: "sh", Args: []string{"-c", "kill -KILL $$"}})
	if err != nil || res.ExitCode != -1 || res.Signal != "killed" || res.Stopped != nil {
		t.Fatalf("killed by itself: %v, %s", err, resultString(res))
	}
	res, err = Run(ctx, Cmd{Name: "pwd", Dir: "/"})
	if err != nil || string(res.Stdout) != "/\n" {
		t.Fatalf("pwd in /: %v, %q", err, res.Stdout)
	}
	if _, err := Run(ctx, Cmd{Name: "no-such-command-here"}); err == nil || !strings.Contains(err.Error(), "no-such-command-here") {
		t.Fatalf("a missing command: %v", err)
	}
	if _, err := Run(ctx, Cmd{Name: "./missing.py", Dir: t.TempDir()}); err == nil {
		t.Fatal("a missing relative program started")
	}
	if _, err := Run(ctx, Cmd{Name: "true", Dir: "/no/such/dir"}); err == nil {
		t.Fatal("a missing directory started")
	}
	in := strings.NewReader("from stdin")
	if res, err := Run(ctx, Cmd{Name: "cat", Stdin: in}); err != nil || string(res.Stdout) != "from stdin" {
		t.Fatalf("cat: %v %q", err, res.Stdout)
	}
}

// sleepForever blocks (select {} would be reported as a deadlock).
func sleepForever() {
	for {
		time.Sleep(time.Hour)
	}
}

// BenchmarkRun measures a short command through the runner (supervisor
// included); BenchmarkExec the same command started directly, for the
// supervisor's cost.
func BenchmarkRun(b *testing.B) {
	for b.Loop() {
		if res, err := Run(context.Background(), Cmd{Name: "true"}); err != nil || !res.OK() {
			b.Fatal(err, res.Err())
		}
	}
}

func BenchmarkExec(b *testing.B) {
	for b.Loop() {
		if err := exec.Command("true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}
