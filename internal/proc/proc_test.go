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
	"sync"
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
	case "spawner":
		spawner()
	case "hello":
		os.Stdout.WriteString("hello from the test binary\n")
		os.Exit(0)
	case "reaper":
		reaper()
	case "dial":
		dial()
	case "nobody-kernel":
		nobodyKernel()
	case "confined-kernel":
		// A kernel running a confined command that says where its private
		// temporary directory is, until the kernel is killed.
		Run(context.Background(), Cmd{Name: "sh", Args: []string{"-c", `echo "$TMPDIR" > tmp.new && mv tmp.new tmp && sleep 300`}, Dir: os.Getenv("PROC_TEST_DIR"), Confine: &Confinement{}})
		os.Exit(3)
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

// spawner starts sleepers that leave the process group (setsid) as fast as
// it can, forever, to race the supervisor's sweep of escaped descendants.
func spawner() {
	for {
		c := exec.Command(os.Args[0])
		c.Env = append(os.Environ(), "PROC_TEST_ROLE=sleeper")
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		c.Start()
	}
}

// reaper is a kernel that adopts orphans, as PID 1 in a container does (a
// subreaper here): it runs commands that leave background children, one
// ending by itself and one stopped, and prints how many of the processes
// they started were left to it as zombies.
func reaper() {
	const prSetChildSubreaper = 36
	syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
	Run(context.Background(), Cmd{Name: "sh", Args: []string{"-c", "sleep 300 & sleep 300 & exit 0"}})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	Run(ctx, Cmd{Name: "sh", Args: []string{"-c", "sleep 300 & sleep 300"}})
	cancel()
	time.Sleep(200 * time.Millisecond)
	// Whatever this process can reap now is an orphan it adopted: Run has
	// reaped its supervisors.
	zombies := 0
	for {
		pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
		if pid == 0 {
			os.Stdout.WriteString("live orphans\n")
			os.Exit(1)
		}
		if pid < 0 || err != nil {
			break
		}
		zombies++
	}
	os.Stdout.WriteString(strconv.Itoa(zombies) + "\n")
	os.Exit(0)
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

// marked lists the live processes whose environment holds PROC_TEST_MARK=mark.
func marked(mark string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err == nil && bytes.Contains(env, []byte("\x00PROC_TEST_MARK="+mark+"\x00")) && proctest.Alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestNoEscapeWhileTheGroupEnds pins that a command starting setsid'd
// processes as fast as it can leaves none behind, whether it is stopped
// (deadline) or its own command ends while the spawner runs on in the
// background: no process of the group may outlive the sweep to escape
// after it.
func TestNoEscapeWhileTheGroupEnds(t *testing.T) {
	mark := strconv.Itoa(os.Getpid())
	env := []string{"PROC_TEST_ROLE=spawner", "PROC_TEST_MARK=" + mark}
	for round := range 6 {
		if round%2 == 0 {
			ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
			Run(ctx, Cmd{Name: os.Args[0], Env: env})
			cancel()
		} else {
			Run(context.Background(), Cmd{Name: "sh", Args: []string{"-c", `"$0" & sleep 0.4`, os.Args[0]}, Env: env})
		}
		// A process sent SIGKILL may take seconds to go on a loaded machine;
		// one that escaped the sweep sleeps forever, so a long wait still
		// tells the two apart.
		var left []int
		for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if left = marked(mark); len(left) == 0 {
				break
			}
		}
		if len(left) > 0 {
			for _, p := range left {
				syscall.Kill(p, syscall.SIGKILL)
			}
			t.Fatalf("round %d: %d processes of the command survived it: %v", round, len(left), left)
		}
	}
}

// TestACommandThatKillsItsSupervisorTakesItsGroupAlong pins that a command
// which kills its supervisor (kill -9 $PPID) does not escape that way: the
// runner ends the group itself, and says how the command ended.
func TestACommandThatKillsItsSupervisorTakesItsGroupAlong(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pid")
	res, err := Run(context.Background(), Cmd{Name: "sh", Args: []string{"-c", `sleep 300 & echo $! >"$0"; kill -9 $PPID; sleep 300`, file}, WaitDelay: 200 * time.Millisecond})
	data, _ := os.ReadFile(file)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	if pid == 0 {
		t.Fatalf("no pid in %s (%v, %s)", file, err, resultString(res))
	}
	if left := proctest.WaitGone([]int{pid}, time.Now().Add(10*time.Second)); len(left) > 0 {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("the background child %d outlived its supervisor", pid)
	}
	if err != nil || res.OK() || res.Signal != "killed" {
		t.Errorf("Run: %v, %s; want a command ended by SIGKILL", err, resultString(res))
	}
}

// TestSupervisorModeOnlyUnderTheRunner pins that the supervisor's marker in
// the environment of a program the runner did not start (exported by
// mistake, or set by a skill) does not turn that program into a
// supervisor: it runs as itself, and its process group (here a shell
// without job control and its background job) is left alone.
func TestSupervisorModeOnlyUnderTheRunner(t *testing.T) {
	sh := exec.Command("sh", "-c", `sleep 30 & pid=$!; "$0"; echo "status $?"; kill $pid && echo "the group lives"`, os.Args[0])
	sh.Env = append(os.Environ(), superviseVar+"=1", "PROC_TEST_ROLE=hello")
	sh.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := sh.CombinedOutput()
	if err != nil || string(out) != "hello from the test binary\nstatus 0\nthe group lives\n" {
		t.Fatalf("sh: %v: %q; want the program run as itself and the group alive", err, out)
	}
}

// TestNoZombiesLeftToAKernelThatReaps pins that the supervisor reaps what
// it killed: a kernel that adopts orphans (PID 1 in a container) is not
// left a zombie per background child, which would pile up over a long run.
func TestNoZombiesLeftToAKernelThatReaps(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "PROC_TEST_ROLE=reaper")
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "0" {
		t.Fatalf("zombies left to the kernel: %v %q; want 0", err, out)
	}
}

// TestStoppedBeforeItStarted pins that a context already done (a 1 ns
// deadline, a cancel racing the start) gives a Result saying the command
// was stopped, like a stop a moment later, not a start error: callers
// tell "cannot start" (a missing interpreter) from "stopped" by it.
func TestStoppedBeforeItStarted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := Run(ctx, Cmd{Name: "true"})
	if err != nil || !errors.Is(res.Stopped, context.Canceled) || res.OK() {
		t.Fatalf("cancelled: %v, %s; want Stopped = Canceled", err, resultString(res))
	}
	ctx, cancel = context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	res, err = Run(ctx, Cmd{Name: "true"})
	if err != nil || !errors.Is(res.Stopped, context.DeadlineExceeded) {
		t.Fatalf("1 ns deadline: %v, %s; want Stopped = DeadlineExceeded", err, resultString(res))
	}
	if _, err := Run(ctx, Cmd{Name: "no-such-command-here"}); err == nil {
		t.Fatal("a missing command is a start error even when the context is done")
	}
}

// TestManyConcurrentRunsRacingTheirDeadlines pins that a hundred runs at
// once, with deadlines from 1 ms (often past before the start) to 20 ms
// (during it), each end as done or stopped, never as an error, and leave
// no file descriptor open in the kernel.
func TestManyConcurrentRunsRacingTheirDeadlines(t *testing.T) {
	openFDs := func() int {
		entries, _ := os.ReadDir("/proc/self/fd")
		return len(entries)
	}
	before := openFDs()
	var wg sync.WaitGroup
	problems := make(chan string, 100)
	for i := range 100 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(1+i%20)*time.Millisecond)
			defer cancel()
			res, err := Run(ctx, Cmd{Name: "sh", Args: []string{"-c", "sleep 1 & echo hi; sleep 0.01"}})
			switch {
			case err != nil:
				problems <- err.Error()
			case !res.OK() && !errors.Is(res.Stopped, context.DeadlineExceeded):
				problems <- resultString(res)
			}
		})
	}
	wg.Wait()
	close(problems)
	for p := range problems {
		t.Error(p)
	}
	if after := openFDs(); after > before {
		t.Errorf("%d file descriptors open before the runs, %d after", before, after)
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
	t.Setenv("CURL_HEADER", "x-api-key: sk-ant-test-0123456789")
	t.Setenv("PROXY_URL", "https://me:sk-openai-test-0123456789@proxy.example")
	t.Setenv("MISTRAL_API_KEY", "mistral-test-0123456789")
	t.Setenv("PGPASSWORD", "pg-secret-0123456789")
	t.Setenv("DATABASE_URL", "postgres://solve:pg-secret-0123456789@db.example/solve")
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
	for _, k := range []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GROQ_API_KEY", "ANTHROPIC_AUTH_TOKEN", "LUMEN_EMBEDDING_KEY", "MY_COPY", "CURL_HEADER", "PROXY_URL", "PGPASSWORD", "DATABASE_URL"} {
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

// TestEnvironOddInput pins the scrub on names and lists a user may write
// oddly: lower-case names, spaces and empty items in the pass list, a
// secret too short to look for elsewhere, and a name passed that is not
// set.
func TestEnvironOddInput(t *testing.T) {
	got := Environ([]string{
		"anthropic_api_key=sk-lower-0123456789",
		"Groq_Api_Key=gsk-mixed-0123456789",
		"weather_api_key=wk-0123456789",
		"llmkernels_pass_env= , weather_API_KEY ,,NOT_SET,",
		"SHORT_API_KEY=abc",
		"TERM=abc",
		"NOTE=the key is gsk-mixed-0123456789, keep it safe",
		"EMPTY_AUTH_TOKEN=",
		"PATH=/usr/bin",
	})
	want := []string{
		"weather_api_key=wk-0123456789",
		"llmkernels_pass_env= , weather_API_KEY ,,NOT_SET,",
		"TERM=abc",
		"PATH=/usr/bin",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Environ kept\n%q\nwant\n%q", got, want)
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
