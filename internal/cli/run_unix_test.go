//go:build unix

package cli

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets a test run this test binary as a kernel CLI: with
// CLI_TEST_ARGS set it runs testApp through App.Run, signals and exit
// status included, and never returns.
func TestMain(m *testing.M) {
	if args, ok := os.LookupEnv("CLI_TEST_ARGS"); ok {
		os.Args = append([]string{"kernel"}, strings.Fields(args)...)
		testApp().Run()
	}
	os.Exit(m.Run())
}

// process is the test binary running as a kernel CLI.
type process struct {
	cmd    *exec.Cmd
	stdout *bufio.Reader
	stderr *bufio.Reader
}

func start(t *testing.T, args string) *process {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "CLI_TEST_ARGS="+args)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errOut, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() }) // already gone when the test passed
	return &process{cmd: cmd, stdout: bufio.NewReader(out), stderr: bufio.NewReader(errOut)}
}

// line reads one line, failing the test if none comes within a minute.
func line(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		s, _ := r.ReadString('\n') // a read error leaves s short, which the caller sees
		got <- s
	}()
	select {
	case s := <-got:
		return s
	case <-time.After(time.Minute):
		t.Fatal("no line within a minute")
		return ""
	}
}

// wait waits for the process and returns its exit status, or -signal when a
// signal killed it.
func (p *process) wait(t *testing.T) (status int, stderr string) {
	t.Helper()
	rest, _ := bufio.NewReader(p.stderr).ReadString(0) // until EOF
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatal(err)
		}
		ws := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			return -int(ws.Signal()), rest
		}
		return ws.ExitStatus(), rest
	case <-time.After(time.Minute):
		t.Fatal("the process did not end within a minute")
		return 0, ""
	}
}

func TestSIGTERMAndSIGINTStopACommandAsCleanlyAsEachOther(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		name := map[syscall.Signal]string{syscall.SIGTERM: "SIGTERM", syscall.SIGINT: "SIGINT"}[sig]
		p := start(t, "wait")
		if got := line(t, p.stdout); got != "resolving\n" {
			t.Fatalf("stdout %q", got)
		}
		if err := p.cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		status, stderr := p.wait(t)
		want := "kernel: " + name + ": stopping cleanly (send it again to quit at once)\n" +
			"kernel: stopped by " + name + ": resolving node 3: context canceled\n"
		if status != ExitStopped || stderr != want {
			t.Errorf("%s: exit %d, stderr %q; want %d, %q", name, status, stderr, ExitStopped, want)
		}
	}
}

func TestASignalIsTheNormalEndOfAServer(t *testing.T) {
	p := start(t, "serve")
	line(t, p.stdout)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if status, stderr := p.wait(t); status != ExitOK || !strings.Contains(stderr, "SIGTERM: stopping cleanly") {
		t.Fatalf("exit %d, stderr %q", status, stderr)
	}
}

func TestASecondSignalQuitsAtOnce(t *testing.T) {
	p := start(t, "stubborn")
	line(t, p.stdout)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if got := line(t, p.stderr); !strings.Contains(got, "stopping cleanly") {
		t.Fatalf("stderr %q", got)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if status, _ := p.wait(t); status != -int(syscall.SIGTERM) {
		t.Fatalf("exit %d, want killed by SIGTERM", status)
	}
}

func TestAFailedWriteToStandardOutputIsAFailure(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip("no /dev/full here:", err)
	}
	defer full.Close()
	// "hello" ignores the write error; "blocks show" returns it.
	for args, want := range map[string]string{
		"hello":               "kernel: writing standard output: write /dev/stdout: no space left on device\n",
		"blocks show purpose": "kernel: write /dev/stdout: no space left on device\n",
	} {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "CLI_TEST_ARGS="+args)
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = full, &stderr
		err := cmd.Run()
		if cmd.ProcessState.ExitCode() != ExitFailure || stderr.String() != want {
			t.Errorf("%s: exit %v, stderr %q, want %q", args, err, stderr.String(), want)
		}
	}
}
