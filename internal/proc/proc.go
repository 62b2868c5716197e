// Package proc is the one way the kernels run a subprocess: solve's
// resolvers and checks, the z3 solver, lumen's skills and git. Model-written
// code runs in these processes, so the runner assumes nothing of them.
//
// On Linux, every command runs under a small supervisor: the kernel's own
// executable started again in a hidden mode (selected by an environment
// variable that this package's init checks, so it works in test binaries
// too). The supervisor leads a new process group and starts the command in
// it, passing stdin, stdout and stderr straight through. It ends the whole
// group, and every descendant that left the group (setsid), with SIGKILL:
//
//   - when the context is cancelled or its deadline passes (the runner
//     asks it with SIGTERM, and kills the group itself if the supervisor
//     has not done so within half a second);
//   - when the command exits: whatever it left running in the background is
//     not allowed to outlive it;
//   - when the kernel dies, even by kill -9: the supervisor holds the read
//     end of a pipe whose write end only the kernel holds, so it reads EOF
//     the moment the kernel is gone; Pdeathsig is armed as well. (Pdeathsig
//     alone is not enough: it reaches only the direct child, is not
//     inherited across fork, and fires when the thread that started the
//     child ends, which is why the supervisor checks that its parent really
//     changed before acting on it.)
//
// The supervisor is a child subreaper, so a descendant whose parent exits
// is re-parented to it and stays findable; the descendants are found
// through /proc, and killed pass after pass until none is alive to start
// another.
//
// A command can kill its supervisor (kill -9 $PPID): the runner then kills
// the group itself once the supervisor is gone, but a descendant that had
// already left the group (setsid) is beyond its reach.
//
// The hidden mode needs more than its environment variable: a command
// after "--", a process group of its own and the two pipes the runner
// passes. A program that only inherited the variable runs as itself.
//
// There is no grace period: SIGKILL at once. The kernel has already decided
// the command's time is over, and a SIGTERM handler in model-written code
// could only delay that.
//
// Output is captured with caps (Cmd.MaxOutput): the first bytes of stdout,
// which hold the answer, and the last bytes of stderr, which hold the
// error. After the command exits the runner waits at most Cmd.WaitDelay
// for the pipes to close, so a descendant holding stdout open cannot hold
// the kernel, and an answer written before the exit is kept.
//
// The command's environment is the kernel's minus provider secrets (see
// Environ): ANTHROPIC_API_KEY, OPENAI_API_KEY, any *_API_KEY or
// *_AUTH_TOKEN, LUMEN_EMBEDDING_KEY, PGPASSWORD (the password of a kernel
// database on PostgreSQL: with it, a command the model wrote could rewrite
// the kernel's ledger), and any variable whose value holds the value of one
// of those (a DATABASE_URL built with it). A user passes one on by naming it in LLMKERNELS_PASS_ENV
// (comma-separated names).
//
// # Confinement
//
// A command with Cmd.Confine set (model-written code: lumen's skills,
// solve's checks and tools) runs confined, on Linux:
//
//   - Files (Landlock): it may read and write its working directory, a
//     private temporary directory made for the run (its TMPDIR and HOME,
//     removed after it) and Confinement.Write; read and run the system's
//     paths (systemRead: /usr, /lib, certificates, name resolution, /proc,
//     /sys; not /etc as a whole), the directories on PATH and the
//     installations they belong to, the Go module cache (GOMODCACHE) and
//     Confinement.Read; write /dev/null and its kin. Confined Go builds
//     share a cache of their own (GOCACHE), so no command can plant an
//     entry in the user's. Nothing else: not ~/.ssh, not a key file, not
//     another process's /proc/PID/environ (Landlock limits ptrace access to
//     the command's own domain), not a path a symbolic link leads out to.
//   - Network: none by default. A network namespace of its own (with only
//     its own loopback up) where a user namespace can be made; otherwise
//     Landlock's TCP rules (bind and connect refused; UDP and other
//     protocols then pass). An allowance of "host:port" entries becomes
//     Landlock TCP connect rules for those ports: the host is not enforced.
//     "all" lifts it.
//   - Resources: RLIMIT_CPU, RLIMIT_AS, RLIMIT_NOFILE, RLIMIT_FSIZE (soft
//     and hard, so the command cannot raise them), no core files, and the
//     runner's cap on what it writes to stdout and stderr together. The
//     process cap holds for root too: a pids cgroup of its own where the
//     kernel can make one (root on a writable cgroup hierarchy), else
//     RLIMIT_NPROC in a user namespace of its own (counting only its
//     processes, for a user other than root), else the supervisor counts
//     its descendants every 50 ms and stops it past the cap.
//   - No capability (an empty bounding set for root), no_new_privs, a
//     seccomp filter refusing AF_UNIX sockets and io_uring where Landlock
//     is older than ABI 9 (which cannot stop a connect to a socket by its
//     path, such as /var/run/docker.sock), and from Landlock ABI 6 no
//     signal to a process outside its domain.
//
// How: Go cannot run code between fork and exec, and all of the above must
// be in place before the command's first instruction. So the supervisor
// does not start the command itself: it starts this executable once more,
// as a launcher (selected by LLMKERNELS_PROC_CONFINE, which carries the
// policy as JSON, and checked like the supervisor's mode: its parent named
// there, a command after "--", its launch pipe open), in a new user and
// network namespace. The launcher joins the pids cgroup, brings its
// loopback up, sets the rlimits, drops its capabilities, sets
// no_new_privs, the seccomp filter and the Landlock domain on its one
// locked thread, and execs the command from that thread: each of these
// belongs to the thread that calls execve, and the command inherits them.
// A failure before the exec goes back to the supervisor on the launch pipe
// and is Run's error ("could not be started"). The launcher costs one more
// start of the kernel's binary, which reaches this package's init within
// 2 ms; go-landlock was not used because it applies Landlock to every
// thread of a running Go program (through libpsx, linked into every binary
// with cgo), which a process about to exec does not need.
//
// Probe says what this machine gives; where it is not enough (not Linux,
// Landlock older than ABI 3, neither a network namespace nor Landlock ABI
// 4), Run refuses a confined command with an *UnavailableError, and the
// kernels refuse to run model-written code unless the person opts out.
//
// On macOS the supervisor works the same way except that there is no
// Pdeathsig (the pipe still ends the group when the kernel dies), no
// subreaper and no /proc: a descendant that left the process group
// (setsid) survives. On Windows there are no process groups: the runner
// kills the command itself on cancel or deadline, its children may
// survive it, and nothing ends the command when the kernel is killed.
// Output caps, WaitDelay and the environment scrub work everywhere.
package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults for the zero fields of Cmd.
const (
	DefaultMaxOutput = 1 << 20
	DefaultWaitDelay = 2 * time.Second
)

// PassEnvVar names the environment variable in which a user lists,
// comma-separated, the secret variables a command may see after all.
const PassEnvVar = "LLMKERNELS_PASS_ENV"

// confineVar carries a confined command's policy (JSON): from the runner
// to the supervisor, and from the supervisor to the launcher. It never
// reaches a command from the kernel's own environment.
const confineVar = "LLMKERNELS_PROC_CONFINE"

// ErrOutputLimit is Result.Stopped when the command was stopped for
// writing more than MaxOutput bytes to stdout (Cmd.StopOnOverflow).
var ErrOutputLimit = errors.New("stdout passed the output cap")

// Cmd is a command to run.
type Cmd struct {
	// Name is the program: looked up in PATH unless it holds a path
	// separator (then it is relative to Dir).
	Name string
	Args []string
	// Dir is the working directory; empty means the kernel's.
	Dir string
	// Env is added to the scrubbed environment (KEY=VALUE); it is what the
	// kernel means the command to have, and is not scrubbed.
	Env   []string
	Stdin io.Reader
	// MaxOutput is how many bytes of stdout (the first) and of stderr (the
	// last) are kept; 0 means DefaultMaxOutput.
	MaxOutput int
	// MergeStderr sends stderr to stdout, interleaved as written, as a
	// shell's 2>&1 does; Result.Stderr is then empty.
	MergeStderr bool
	// StopOnOverflow kills the command once stdout passes MaxOutput,
	// instead of letting it run on with the rest dropped.
	StopOnOverflow bool
	// WaitDelay bounds the wait for the output pipes after the command
	// exits; 0 means DefaultWaitDelay.
	WaitDelay time.Duration
	// Confine, when set, runs the command confined (Linux; see the
	// package doc): Run refuses it with an *UnavailableError where
	// confinement is not available, and it needs Dir.
	Confine *Confinement
}

// Result is how a command ended and what it wrote.
type Result struct {
	// Stdout is the first MaxOutput bytes written to stdout (and stderr,
	// with MergeStderr); StdoutDropped counts the bytes after them.
	Stdout        []byte
	StdoutDropped int64
	// Stderr is the last MaxOutput bytes written to stderr.
	Stderr []byte
	// ExitCode is the command's exit status; -1 when a signal ended it.
	ExitCode int
	// Signal names the signal that ended the command, if one did.
	Signal string
	// Stopped is why the runner ended the command, nil if it ended by
	// itself: the context's error (or cause), or ErrOutputLimit.
	Stopped  error
	Duration time.Duration
	// Confined: the command ran confined (Cmd.Confine).
	Confined bool
	// Limit names the confinement limit the command ran into, when the
	// runner can tell: LimitProcesses (forks refused, or stopped for too
	// many), LimitCPU (SIGXCPU), LimitOutput (a file past the size limit,
	// SIGXFSZ, or stopped for writing too much to stdout and stderr); a
	// shell's exit status 128+SIGXCPU or 128+SIGXFSZ counts as the signal. A
	// refused path, connection or allocation is seen by the command
	// (EACCES, ENETUNREACH, ENOMEM), which says so on stderr.
	Limit string
}

// OK reports whether the command exited with status 0 by itself.
func (r *Result) OK() bool { return r.ExitCode == 0 && r.Signal == "" && r.Stopped == nil }

// Err says why the command did not succeed; nil when OK.
func (r *Result) Err() error {
	switch {
	case r.Stopped != nil:
		return fmt.Errorf("stopped by the kernel: %w", r.Stopped)
	case r.Signal != "" && r.Limit != "":
		return fmt.Errorf("ended by signal: %s (its %s limit)", r.Signal, r.Limit)
	case r.Signal != "":
		return fmt.Errorf("ended by signal: %s", r.Signal)
	case r.ExitCode != 0 && r.Limit != "":
		return fmt.Errorf("exit status %d (it reached its %s limit)", r.ExitCode, r.Limit)
	case r.ExitCode != 0:
		return fmt.Errorf("exit status %d", r.ExitCode)
	}
	return nil
}

// outcome is how the process ended, as the platform saw it.
type outcome struct {
	exitCode int
	signal   string
	stopped  bool   // the runner ended it
	limit    string // for this confinement limit (Result.Limit)
}

// Run runs c and waits for it and its descendants to end. The error is
// non-nil only when the command could not be started; how a started
// command ended is in the Result, and so is a context that was done
// before it started (Stopped).
func Run(ctx context.Context, c Cmd) (*Result, error) {
	if c.MaxOutput <= 0 {
		c.MaxOutput = DefaultMaxOutput
	}
	if c.WaitDelay <= 0 {
		c.WaitDelay = DefaultWaitDelay
	}
	path := c.Name
	if !strings.ContainsRune(c.Name, os.PathSeparator) && !strings.ContainsRune(c.Name, '/') {
		p, err := exec.LookPath(c.Name)
		if err != nil {
			return nil, fmt.Errorf("run %s: %w", c.Name, err)
		}
		path = p
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stdout := &head{limit: c.MaxOutput}
	if c.StopOnOverflow {
		stdout.overflow = func() { cancel(ErrOutputLimit) }
	}
	stderr := &tail{keep: c.MaxOutput}
	env := slices.DeleteFunc(Environ(os.Environ()), func(kv string) bool { return strings.HasPrefix(kv, confineVar+"=") })
	var conf *confined
	if c.Confine != nil {
		var err error
		if conf, err = prepare(&c, path); err != nil {
			return nil, fmt.Errorf("run %s: %w", c.Name, err)
		}
		env = append(env, conf.environ()...)
		m := &meter{limit: conf.outputLimit(), over: func() { cancel(ErrOutputTotal) }}
		stdout.meter, stderr.meter = m, m
	}
	cmd := &exec.Cmd{Path: path, Args: append([]string{c.Name}, c.Args...), Dir: c.Dir,
		Env: append(env, c.Env...), Stdin: c.Stdin, Stdout: stdout, Stderr: stderr, WaitDelay: c.WaitDelay}
	if c.MergeStderr {
		cmd.Stderr = stdout
	}
	began := time.Now()
	out, err := run(ctx, cmd)
	if conf != nil {
		res := &Result{Confined: true}
		defer func() { conf.finish(res) }()
		return finishRun(ctx, c, out, err, stdout, stderr, began, res)
	}
	return finishRun(ctx, c, out, err, stdout, stderr, began, &Result{})
}

// finishRun fills res from how the command ended.
func finishRun(ctx context.Context, c Cmd, out outcome, err error, stdout *head, stderr *tail, began time.Time, res *Result) (*Result, error) {
	if err != nil && ctx.Err() != nil {
		// Stopped before it started (a cancel racing the start, a deadline
		// already past): said the way a stop a moment later is.
		res.ExitCode, res.Stopped, res.Duration = -1, context.Cause(ctx), time.Since(began)
		return res, nil
	}
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", c.Name, err)
	}
	res.Stdout, res.StdoutDropped, res.Stderr = stdout.buf.Bytes(), stdout.dropped, stderr.bytes()
	res.ExitCode, res.Signal, res.Duration = out.exitCode, out.signal, time.Since(began)
	switch {
	case out.limit == LimitProcesses:
		res.Stopped, res.Limit = ErrProcessLimit, LimitProcesses
	case out.stopped:
		res.Stopped = context.Cause(ctx)
	}
	if res.Confined && res.Limit == "" {
		res.Limit = limitOf(res.Signal, res.ExitCode)
		if errors.Is(res.Stopped, ErrOutputTotal) {
			res.Limit = LimitOutput
		}
	}
	return res, nil
}

// meter counts what a confined command writes to stdout and stderr, and
// calls over once, when the count passes limit.
type meter struct {
	n     atomic.Int64
	limit int64
	over  func()
	once  sync.Once
}

func (m *meter) add(n int) {
	if m != nil && m.n.Add(int64(n)) > m.limit {
		m.once.Do(m.over)
	}
}

// head keeps the first limit bytes written and counts the rest; it never
// blocks the writer.
type head struct {
	buf      bytes.Buffer
	limit    int
	dropped  int64
	overflow func()
	meter    *meter
}

func (w *head) Write(p []byte) (int, error) {
	w.meter.add(len(p))
	room := w.limit - w.buf.Len()
	if room >= len(p) {
		return w.buf.Write(p)
	}
	if room > 0 {
		w.buf.Write(p[:room])
	}
	w.dropped += int64(len(p) - max(room, 0))
	if w.overflow != nil {
		w.overflow()
		w.overflow = nil
	}
	return len(p), nil
}

// tail keeps the last keep bytes written.
type tail struct {
	buf   []byte
	keep  int
	meter *meter
}

func (w *tail) Write(p []byte) (int, error) {
	w.meter.add(len(p))
	w.buf = append(w.buf, p...)
	if len(w.buf) > 2*w.keep {
		w.buf = append([]byte(nil), w.buf[len(w.buf)-w.keep:]...)
	}
	return len(p), nil
}

func (w *tail) bytes() []byte {
	if len(w.buf) > w.keep {
		return w.buf[len(w.buf)-w.keep:]
	}
	return w.buf
}

// Environ is env without provider secrets: variables named ANTHROPIC_API_KEY,
// OPENAI_API_KEY or anything ending in _API_KEY or _AUTH_TOKEN (case
// insensitive), LUMEN_EMBEDDING_KEY, PGPASSWORD, and any variable whose value holds one
// of theirs (a copy under another name, a header or URL built with it).
// Secrets shorter than 8 bytes are not looked for in other values. Variables
// named in PassEnvVar (in env) are kept.
func Environ(env []string) []string {
	pass := map[string]bool{}
	for _, kv := range env {
		if k, v, _ := strings.Cut(kv, "="); strings.EqualFold(k, PassEnvVar) {
			for _, name := range strings.Split(v, ",") {
				pass[strings.ToUpper(strings.TrimSpace(name))] = true
			}
		}
	}
	var secrets []string
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if secret(k) && !pass[strings.ToUpper(k)] && len(v) >= 8 {
			secrets = append(secrets, v)
		}
	}
	holdsSecret := func(v string) bool {
		return slices.ContainsFunc(secrets, func(s string) bool { return strings.Contains(v, s) })
	}
	out := make([]string, 0, len(env))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if pass[strings.ToUpper(k)] || !secret(k) && !holdsSecret(v) {
			out = append(out, kv)
		}
	}
	return out
}

func secret(name string) bool {
	n := strings.ToUpper(name)
	return strings.HasSuffix(n, "_API_KEY") || strings.HasSuffix(n, "_AUTH_TOKEN") || n == "LUMEN_EMBEDDING_KEY" || n == "PGPASSWORD"
}
