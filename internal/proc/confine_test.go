//go:build linux

package proc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmkernels/kernels/internal/proc/proctest"
)

// requireConfinement skips where this machine cannot confine (the tests
// below are about confinement that holds; TestUnavailableRefuses covers
// the refusal).
func requireConfinement(t testing.TB) {
	t.Helper()
	if s := Probe(); !s.Available {
		t.Skipf("confinement not available here: %s", s.Reason)
	}
}

// withProbe changes what the runner believes this machine gives, for one
// test.
func withProbe(t *testing.T, change func(p *probed)) {
	t.Helper()
	saved := probeOnce2()
	changed := saved
	change(&changed)
	probeResult = changed
	t.Cleanup(func() { probeResult = saved })
}

// confinedSh runs sh -c script confined in dir.
func confinedSh(t *testing.T, ctx context.Context, dir string, conf Confinement, script string, env ...string) *Result {
	t.Helper()
	res, err := Run(ctx, Cmd{Name: "sh", Args: []string{"-c", script}, Dir: dir, Env: env, Confine: &conf, MergeStderr: true})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !res.Confined {
		t.Fatal("the result says the command was not confined")
	}
	return res
}

// secrets makes a home with an SSH key and an API key file, and another
// directory outside the command's, and returns (home, outside).
func secrets(t *testing.T) (string, string) {
	t.Helper()
	home, outside := t.TempDir(), t.TempDir()
	for p, content := range map[string]string{
		filepath.Join(home, ".ssh", "id_ed25519"):              "SSH-PRIVATE-KEY",
		filepath.Join(home, ".config", "anthropic", "api_key"): "sk-ant-FILE-KEY-0123456789",
		filepath.Join(outside, "secret.txt"):                   "OUTSIDE-SECRET",
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", home)
	return home, outside
}

// TestConfinedFilesystem pins what a confined command may touch: it reads
// and writes its own directory and its private temporary directory, reads
// system files and runs programs; it cannot read an SSH key, an API key
// file, a file outside through a symbolic link, or the kernel's
// environment through /proc, nor write outside its directory.
func TestConfinedFilesystem(t *testing.T) {
	requireConfinement(t)
	home, outside := secrets(t)
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-ENV-KEY-0123456789")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "input.txt"), []byte("MY-INPUT"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A link planted before the run, pointing out.
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "planted")); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`
cat input.txt; echo
echo written > output.txt && cat output.txt
echo temp > "$TMPDIR/t" && cat "$TMPDIR/t"
head -c 4 /etc/passwd; echo
cat %[1]s/.ssh/id_ed25519
cat %[1]s/.config/anthropic/api_key
cat %[2]s/secret.txt
echo leak > %[2]s/written.txt
cat planted
ln -s %[2]s/secret.txt made && cat made
ln -s %[2]s escape && echo leak > escape/through-link.txt
cat /proc/%[3]d/environ
ls -a %[1]s
echo done`, home, outside, os.Getpid())
	res := confinedSh(t, context.Background(), dir, Confinement{}, script)
	out := string(res.Stdout)
	t.Logf("output:\n%s", out)
	for _, want := range []string{"MY-INPUT", "written", "temp", "root", "done"} {
		if !strings.Contains(out, want) {
			t.Errorf("an allowed access failed: %q missing", want)
		}
	}
	for _, leaked := range []string{"SSH-PRIVATE-KEY", "FILE-KEY", "OUTSIDE-SECRET", "ENV-KEY", "\n.ssh\n"} {
		if strings.Contains(out, leaked) {
			t.Errorf("the command read %q", leaked)
		}
	}
	for _, f := range []string{"written.txt", "through-link.txt"} {
		if _, err := os.Stat(filepath.Join(outside, f)); err == nil {
			t.Errorf("the command wrote %s outside its directory", f)
		}
	}
	if strings.Count(out, "Permission denied") < 9 {
		t.Errorf("want a refusal (Permission denied) for each forbidden access, got:\n%s", out)
	}
}

// TestConfinedPrivateTempGoesAway pins that the private temporary
// directory is the command's own and is removed after it.
func TestConfinedPrivateTempGoesAway(t *testing.T) {
	requireConfinement(t)
	res := confinedSh(t, context.Background(), t.TempDir(), Confinement{}, `echo $TMPDIR; echo $HOME; mkdir -p "$TMPDIR/d" && chmod 500 "$TMPDIR/d"`)
	lines := strings.Fields(string(res.Stdout))
	if !res.OK() || len(lines) != 2 || lines[0] != lines[1] || !strings.Contains(lines[0], "llmkernels-confined-") {
		t.Fatalf("TMPDIR and HOME: %q (%v)", res.Stdout, res.Err())
	}
	if _, err := os.Stat(lines[0]); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the private temporary directory %s is still there (%v)", lines[0], err)
	}
}

// TestKill9OfTheKernelLeavesNoConfinementBehind pins that when the kernel
// is killed with SIGKILL while a confined command runs, the command's
// private temporary directory and its pids cgroup go with it.
func TestKill9OfTheKernelLeavesNoConfinementBehind(t *testing.T) {
	requireConfinement(t)
	dir := t.TempDir()
	kernel := exec.Command(os.Args[0])
	kernel.Env = append(os.Environ(), "PROC_TEST_ROLE=confined-kernel", "PROC_TEST_DIR="+dir)
	if err := kernel.Start(); err != nil {
		t.Fatal(err)
	}
	defer kernel.Process.Kill()
	var tmp string
	for deadline := time.Now().Add(30 * time.Second); tmp == ""; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the command never said where its temporary directory is")
		}
		data, _ := os.ReadFile(filepath.Join(dir, "tmp"))
		tmp = strings.TrimSpace(string(data))
	}
	cgroups := func() []string {
		p := probeOnce2().pidsParent
		if p == "" {
			return nil
		}
		found, _ := filepath.Glob(filepath.Join(p, fmt.Sprintf("llmkernels-%d-*", kernel.Process.Pid)))
		return found
	}
	if _, err := os.Stat(tmp); err != nil {
		t.Fatalf("the temporary directory %s: %v", tmp, err)
	}
	if probeOnce2().pidsParent != "" && len(cgroups()) != 1 {
		t.Fatalf("the kernel's pids cgroups: %v", cgroups())
	}
	kernel.Process.Signal(syscall.SIGKILL)
	kernel.Wait()
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, err := os.Stat(tmp)
		if errors.Is(err, os.ErrNotExist) && len(cgroups()) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("15 s after kill -9 of the kernel: temporary directory %v, cgroups %v", err, cgroups())
		}
	}
}

// TestConfinedSignalsAndSockets pins that a confined command cannot signal
// the kernel nor connect to a UNIX socket outside its directory (a
// docker.sock).
func TestConfinedSignalsAndSockets(t *testing.T) {
	requireConfinement(t)
	if Probe().Landlock < 6 {
		t.Skip("Landlock before ABI 6 does not scope signals")
	}
	sock := filepath.Join(t.TempDir(), "docker.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan bool, 1)
	go func() {
		c, err := l.Accept()
		if err == nil {
			c.Close()
		}
		accepted <- err == nil
	}()
	res := confinedSh(t, context.Background(), t.TempDir(), Confinement{}, fmt.Sprintf(`kill -0 %d && echo SIGNALLED
python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.connect("%s"); print("CONNECTED")'`, os.Getpid(), sock))
	if strings.Contains(string(res.Stdout), "SIGNALLED") || strings.Contains(string(res.Stdout), "CONNECTED") {
		t.Fatalf("the command reached outside:\n%s", res.Stdout)
	}
	select {
	case <-accepted:
		t.Fatal("the socket accepted a connection")
	case <-time.After(100 * time.Millisecond):
	}
}

// dial is a command that connects to each address in its arguments and
// prints what happened. It refuses to dial an address off this machine
// unless it is in another network namespace than PROC_TEST_NETNS (the
// test's): a broken confinement must fail the test, never send a packet.
func dial() {
	mine, _ := os.Readlink("/proc/self/ns/net")
	for _, addr := range os.Args[1:] {
		host, _, _ := net.SplitHostPort(addr)
		if ip := net.ParseIP(host); ip != nil && !ip.IsLoopback() && mine == os.Getenv("PROC_TEST_NETNS") {
			fmt.Printf("%s: NOT DIALLED: same network namespace as the kernel\n", addr)
			continue
		}
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err == nil {
			c.Close()
			fmt.Printf("%s: CONNECTED\n", addr)
			continue
		}
		fmt.Printf("%s: refused: %v\n", addr, err)
	}
	os.Exit(0)
}

func dialConfined(t *testing.T, conf Confinement, addrs ...string) string {
	t.Helper()
	netns, _ := os.Readlink("/proc/self/ns/net")
	res, err := Run(context.Background(), Cmd{Name: os.Args[0], Args: addrs, Dir: t.TempDir(), Confine: &conf,
		Env: []string{"PROC_TEST_ROLE=dial", "PROC_TEST_NETNS=" + netns}, MergeStderr: true})
	if err != nil || !res.OK() {
		t.Fatalf("dial: %v %v: %s", err, res.Err(), res.Stdout)
	}
	t.Logf("%s", res.Stdout)
	return string(res.Stdout)
}

// TestConfinedNetwork pins that a confined command reaches nothing by
// default (a server on the kernel's loopback, the cloud metadata address),
// that a server of its own on its own loopback works, and that an
// allowance opens the network: all of it, or TCP to the ports named.
func TestConfinedNetwork(t *testing.T) {
	requireConfinement(t)
	server := proctest.LoopbackServer(t)
	_, port, _ := net.SplitHostPort(server)
	t.Run("none", func(t *testing.T) {
		if !probeOnce2().netns {
			t.Skip("no network namespace here: the Landlock case below covers it")
		}
		out := dialConfined(t, Confinement{}, server, "169.254.169.254:80")
		if strings.Contains(out, "CONNECTED") || strings.Contains(out, "NOT DIALLED") || strings.Count(out, ": refused: ") != 2 {
			t.Fatalf("want both refused:\n%s", out)
		}
		res := confinedSh(t, context.Background(), t.TempDir(), Confinement{}, `python3 -c '
import socket, threading
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
c = socket.create_connection(s.getsockname()); print("OWN LOOPBACK OK")'`)
		if !strings.Contains(string(res.Stdout), "OWN LOOPBACK OK") {
			t.Fatalf("a server of its own on its loopback: %s", res.Stdout)
		}
	})
	t.Run("none without a network namespace", func(t *testing.T) {
		withProbe(t, func(p *probed) { p.netns = false })
		out := dialConfined(t, Confinement{}, server)
		if !strings.Contains(out, "permission denied") {
			t.Fatalf("want refused by Landlock:\n%s", out)
		}
	})
	t.Run("all", func(t *testing.T) {
		out := dialConfined(t, Confinement{Network: []string{AllNetwork}}, server)
		if !strings.Contains(out, "CONNECTED") {
			t.Fatalf("want connected:\n%s", out)
		}
	})
	t.Run("ports", func(t *testing.T) {
		other := proctest.LoopbackServer(t)
		out := dialConfined(t, Confinement{Network: []string{"localhost:" + port}}, server, other)
		if !strings.Contains(out, server+": CONNECTED") || !strings.Contains(out, other+": refused") {
			t.Fatalf("want the allowed port connected and the other refused:\n%s", out)
		}
	})
	t.Run("bad entry", func(t *testing.T) {
		_, err := Run(context.Background(), Cmd{Name: "true", Dir: t.TempDir(), Confine: &Confinement{Network: []string{"example.org"}}})
		if err == nil || !strings.Contains(err.Error(), "host:port") {
			t.Fatalf("Run: %v; want the entry refused", err)
		}
	})
}

// forkScript tries to start as many sleeping children as its argument
// asks, and says how many it could start. It gives up after 100 refused
// forks: each costs the kernel a copy of its memory map, and 10,000 of
// them would only make the test slow.
const forkScript = `
import os, sys, time
started = refused = 0
kids = []
for i in range(int(sys.argv[1])):
    try:
        pid = os.fork()
    except OSError:
        refused += 1
        if refused == 100:
            break
        continue
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    started += 1
    kids.append(pid)
print("started", started, "refused", refused, flush=True)
for k in kids:
    os.kill(k, 9)
sys.exit(1 if refused else 0)
`

func forkConfined(t *testing.T, n, limit int) *Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := Run(ctx, Cmd{Name: "python3", Args: []string{"-c", forkScript, strconv.Itoa(n)}, Dir: t.TempDir(),
		Confine: &Confinement{Limits: Limits{Processes: limit}}, MergeStderr: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s %v limit %q", res.Stdout, res.Err(), res.Limit)
	return res
}

// TestConfinedProcessCap pins that a command trying to start 10,000
// processes is held to its cap, for root too, and that the result says
// which limit it met: forks refused by a pids cgroup, or the command
// stopped where the runner counts.
func TestConfinedProcessCap(t *testing.T) {
	requireConfinement(t)
	t.Run(Probe().Processes, func(t *testing.T) {
		res := forkConfined(t, 10000, 64)
		if res.OK() || res.Limit != LimitProcesses || !strings.Contains(res.Err().Error(), "processes") {
			t.Fatalf("want refused forks and the process limit named: %v %q", res.Err(), res.Limit)
		}
		var started, refused int
		fmt.Sscanf(string(res.Stdout), "started %d refused %d", &started, &refused)
		if started > 64 || refused != 100 {
			t.Fatalf("started %d, refused %d; want at most 64 started, then 100 refused", started, refused)
		}
	})
	t.Run("counted by the runner", func(t *testing.T) {
		forceCount = true
		t.Cleanup(func() { forceCount = false })
		res := forkConfined(t, 10000, 64)
		if !errors.Is(res.Stopped, ErrProcessLimit) || res.Limit != LimitProcesses {
			t.Fatalf("want stopped for the process limit: %v %q", res.Err(), res.Limit)
		}
	})
	t.Run("within the cap", func(t *testing.T) {
		if res := forkConfined(t, 10, 64); !res.OK() || res.Limit != "" {
			t.Fatalf("10 processes under a cap of 64: %v %q", res.Err(), res.Limit)
		}
	})
}

// nobodyKernel is a kernel running as an ordinary user: it runs the
// forker confined and prints its result.
func nobodyKernel() {
	res, err := Run(context.Background(), Cmd{Name: "python3", Args: []string{"-c", forkScript, "10000"}, Dir: os.Getenv("PROC_TEST_DIR"),
		Confine: &Confinement{Limits: Limits{Processes: 64}}, MergeStderr: true})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Printf("%s|%s|%s\n", strings.TrimSpace(string(res.Stdout)), Probe().Processes, errString(res.Err()))
	os.Exit(0)
}

// TestConfinedProcessCapForAUser pins the cap for a kernel run by an
// ordinary user (nobody), where it is RLIMIT_NPROC counted in a user
// namespace of the command's own: the user's other processes do not count.
// (The runner cannot tell that RLIMIT_NPROC refused a fork: the command
// says so, as the forker does.)
func TestConfinedProcessCapForAUser(t *testing.T) {
	requireConfinement(t)
	if os.Getuid() != 0 {
		t.Skip("needs root to run a kernel as nobody")
	}
	bin, err := os.MkdirTemp("", "proc-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(bin) })
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(bin, "proc.test")
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, data, 0o755); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(bin, "work")
	if err := os.Mkdir(work, 0o777); err != nil || os.Chmod(work, 0o777) != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "PROC_TEST_ROLE=nobody-kernel", "PROC_TEST_DIR="+work, "HOME="+work)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("the nobody kernel: %v", err)
	}
	var started, refused int
	fmt.Sscanf(string(out), "started %d refused %d", &started, &refused)
	if started == 0 || started > 64 || refused == 0 || !strings.Contains(string(out), "RLIMIT_NPROC") {
		t.Fatalf("want at most 64 started and some refused, by RLIMIT_NPROC: %s", out)
	}
}

// TestConfinedMemory pins that a command cannot allocate 8 GiB past a
// 1 GiB memory limit.
func TestConfinedMemory(t *testing.T) {
	requireConfinement(t)
	res := confinedSh(t, context.Background(), t.TempDir(), Confinement{Limits: Limits{Memory: 1 << 30}},
		`python3 -c 'b = bytearray(8 << 30); print("ALLOCATED", len(b))'`)
	if res.OK() || strings.Contains(string(res.Stdout), "ALLOCATED") || !strings.Contains(string(res.Stdout), "MemoryError") {
		t.Fatalf("want a MemoryError: %v\n%s", res.Err(), res.Stdout)
	}
}

// TestConfinedOutput pins that writing 10 GB is stopped long before: to a
// file by the file size limit (SIGXFSZ), to stdout by the runner.
func TestConfinedOutput(t *testing.T) {
	requireConfinement(t)
	dir := t.TempDir()
	lim := Confinement{Limits: Limits{Output: 1 << 20}}
	res := confinedSh(t, context.Background(), dir, lim, `head -c 10000000000 /dev/zero > big`)
	st, err := os.Stat(filepath.Join(dir, "big"))
	if res.OK() || res.Limit != LimitOutput || err != nil || st.Size() > 1<<20 {
		t.Fatalf("to a file: %v, limit %q, file %v %v", res.Err(), res.Limit, st, err)
	}
	res = confinedSh(t, context.Background(), dir, lim, `head -c 10000000000 /dev/zero`)
	if !errors.Is(res.Stopped, ErrOutputTotal) || res.Limit != LimitOutput || res.Duration > 30*time.Second {
		t.Fatalf("to stdout: %v, limit %q after %v", res.Err(), res.Limit, res.Duration)
	}
}

// TestConfinedCPUAndDeadline pins that a busy loop is ended by its CPU
// limit, and an hour's sleep by the deadline.
func TestConfinedCPUAndDeadline(t *testing.T) {
	requireConfinement(t)
	res := confinedSh(t, context.Background(), t.TempDir(), Confinement{Limits: Limits{CPU: time.Second}}, `while :; do :; done`)
	if res.Limit != LimitCPU || !strings.Contains(res.Err().Error(), "CPU time") {
		t.Fatalf("busy loop: %v, limit %q", res.Err(), res.Limit)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	res = confinedSh(t, ctx, t.TempDir(), Confinement{}, `sleep 3600`)
	if !errors.Is(res.Stopped, context.DeadlineExceeded) || res.Duration > 30*time.Second {
		t.Fatalf("sleep 3600: %v after %v", res.Err(), res.Duration)
	}
}

// TestConfinedGoTest pins that a Go tool's tests run confined in its
// workspace, building against the module cache (read only).
func TestConfinedGoTest(t *testing.T) {
	requireConfinement(t)
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go on PATH")
	}
	mod := goModCache(os.Getenv("HOME"))
	if _, err := os.Stat(filepath.Join(mod, "github.com", "google", "uuid@v1.6.0")); err != nil {
		t.Skip("github.com/google/uuid v1.6.0 is not in the module cache")
	}
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":       "module example.com/tool\n\ngo 1.22\n\nrequire github.com/google/uuid v1.6.0\n",
		"go.sum":       "github.com/google/uuid v1.6.0 h1:NIvaJDMOsjHA8n1jAhLSgzrAzy1Hgr+hNrb57e+94F0=\ngithub.com/google/uuid v1.6.0/go.mod h1:TIyPZe4MgqvfeYDBFedMoGGpEw/LqOeaOT+nhxU+yHo=\n",
		"tool.go":      "package tool\n\nimport \"github.com/google/uuid\"\n\nfunc ID() string { return uuid.NewString() }\n",
		"tool_test.go": "package tool\n\nimport \"testing\"\n\nfunc TestID(t *testing.T) { if len(ID()) != 36 { t.Fatal(ID()) } }\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res := confinedSh(t, ctx, dir, Confinement{}, `go test -count=1 ./... && touch "$(go env GOMODCACHE)/planted" 2>&1; echo exit $?`)
	if !strings.Contains(string(res.Stdout), "ok  \texample.com/tool") {
		t.Fatalf("go test confined: %v\n%s", res.Err(), res.Stdout)
	}
	if _, err := os.Stat(filepath.Join(mod, "planted")); err == nil {
		os.Remove(filepath.Join(mod, "planted"))
		t.Fatal("the command wrote into the module cache")
	}
}

// TestUnavailableRefuses pins that where confinement is not available a
// confined command is refused, saying why and how to opt out, and nothing
// runs.
func TestUnavailableRefuses(t *testing.T) {
	withProbe(t, func(p *probed) { *p = probed{Support: Support{Reason: "this Linux kernel has no Landlock"}} })
	dir := t.TempDir()
	_, err := Run(context.Background(), Cmd{Name: "sh", Args: []string{"-c", "touch ran"}, Dir: dir, Confine: &Confinement{}})
	var ue *UnavailableError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "no Landlock") || !strings.Contains(err.Error(), "unless the person running the kernel says so") {
		t.Fatalf("Run: %v; want an UnavailableError naming the reason and the way out", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Fatal("the command ran")
	}
}

// TestConfinedStartErrors pins that a program a confined command may not
// run is refused: inside the command (its error in the output), or, for
// the command itself, as an error of Run saying why.
func TestConfinedStartErrors(t *testing.T) {
	requireConfinement(t)
	hidden := filepath.Join(t.TempDir(), "prog")
	if err := os.WriteFile(hidden, []byte("#!/bin/sh\necho ran\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), Cmd{Name: "sh", Args: []string{"-c", "exec " + hidden}, Dir: t.TempDir(), Confine: &Confinement{}, MergeStderr: true})
	if err != nil || res.OK() || !strings.Contains(string(res.Stdout), "Permission denied") {
		t.Fatalf("sh started, its exec refused inside: %v %v %s", err, res.Err(), res.Stdout)
	}
	// The program itself may run, but its interpreter may not: the
	// launcher's execve is refused, and Run says why.
	interp := filepath.Join(t.TempDir(), "sh")
	data, err := os.ReadFile("/bin/sh")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(interp, data, 0o755); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(script, []byte("#!"+interp+"\necho ran\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), Cmd{Name: script, Dir: t.TempDir(), Confine: &Confinement{}})
	if err == nil || !strings.Contains(err.Error(), "cannot start "+script+": permission denied (a confined command can run only") {
		t.Fatalf("an interpreter outside: %v", err)
	}
	_, err = Run(context.Background(), Cmd{Name: "true", Confine: &Confinement{}})
	if err == nil || !strings.Contains(err.Error(), "working directory") {
		t.Fatalf("no Dir: %v", err)
	}
}

// BenchmarkConfinedRun is BenchmarkRun confined: the difference is the
// cost of confinement per command.
func BenchmarkConfinedRun(b *testing.B) {
	requireConfinement(b)
	dir := b.TempDir()
	for b.Loop() {
		if res, err := Run(context.Background(), Cmd{Name: "true", Dir: dir, Confine: &Confinement{}}); err != nil || !res.OK() {
			b.Fatal(err, res.Err())
		}
	}
}

// BenchmarkPython and BenchmarkConfinedPython run a Python print through
// the runner, unconfined and confined. The interpreter is python3's own
// executable (not a pyenv shim in front of it, whose cost would drown the
// difference).
func BenchmarkPython(b *testing.B)         { benchPython(b, nil) }
func BenchmarkConfinedPython(b *testing.B) { requireConfinement(b); benchPython(b, &Confinement{}) }

func benchPython(b *testing.B, conf *Confinement) {
	out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		b.Skip("no python3")
	}
	python, dir := strings.TrimSpace(string(out)), b.TempDir()
	for b.Loop() {
		if res, err := Run(context.Background(), Cmd{Name: python, Args: []string{"-c", "print(1)"}, Dir: dir, Confine: conf}); err != nil || !res.OK() {
			b.Fatal(err, res.Err())
		}
	}
}
