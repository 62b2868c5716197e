//go:build unix

package cli

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/llmkernels/kernels/cmd/internal/cli/clitest"
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

// start runs the test binary as a kernel CLI with args.
func start(t *testing.T, args string) *clitest.Process {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "CLI_TEST_ARGS="+args)
	return clitest.Start(t, cmd)
}

// status is the exit status, or -signal when a signal killed the process.
func status(t *testing.T, state *os.ProcessState) int {
	t.Helper()
	ws := state.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		return -int(ws.Signal())
	}
	return ws.ExitStatus()
}

func TestSIGTERMAndSIGINTStopACommandAsCleanlyAsEachOther(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		name := map[syscall.Signal]string{syscall.SIGTERM: "SIGTERM", syscall.SIGINT: "SIGINT"}[sig]
		p := start(t, "wait")
		clitest.Until(t, p.Stdout, "resolving\n")
		stderr, state, _ := p.Stop(t, sig)
		status := status(t, state)
		want := "kernel: " + name + ": stopping cleanly (send it again to quit at once)\n" +
			"kernel: stopped by " + name + ": resolving node 3: context canceled\n"
		if status != ExitStopped || stderr != want {
			t.Errorf("%s: exit %d, stderr %q; want %d, %q", name, status, stderr, ExitStopped, want)
		}
	}
}

func TestASignalIsTheNormalEndOfAServer(t *testing.T) {
	p := start(t, "serve")
	clitest.Until(t, p.Stdout, "serving\n")
	stderr, state, _ := p.Stop(t, syscall.SIGTERM)
	if status(t, state) != ExitOK || !strings.Contains(stderr, "SIGTERM: stopping cleanly") {
		t.Fatalf("exit %d, stderr %q", status(t, state), stderr)
	}
}

func TestASecondSignalQuitsAtOnce(t *testing.T) {
	p := start(t, "stubborn")
	clitest.Until(t, p.Stdout, "ignoring signals\n")
	if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	clitest.Until(t, p.Stderr, "stopping cleanly (send it again to quit at once)\n")
	if _, state, _ := p.Stop(t, syscall.SIGTERM); status(t, state) != -int(syscall.SIGTERM) {
		t.Fatalf("exit %d, want killed by SIGTERM", status(t, state))
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
