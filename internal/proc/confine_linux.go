package proc

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// launchFD is the launcher's pipe to the supervisor: closed by a
// successful exec, or carrying why the command could not be started.
const launchFD = 3

// policy is what the launcher applies before it runs the command.
type policy struct {
	// Parent is the launcher's parent: the supervisor, or the prober.
	Parent int `json:"parent"`
	// Probe: apply everything, then exit 0 instead of running a command.
	Probe bool `json:"probe,omitempty"`
	ABI   int  `json:"abi"`
	// Read is read and run, Write read and written (directories or files),
	// Devices read and written (character devices such as /dev/null).
	Read    []string `json:"read,omitempty"`
	Write   []string `json:"write,omitempty"`
	Devices []string `json:"devices,omitempty"`
	UserNS  bool     `json:"userns,omitempty"`
	NetNS   bool     `json:"netns,omitempty"`
	// NetLandlock: Landlock handles TCP (bind and connect), allowing
	// connections only to Ports.
	NetLandlock bool     `json:"net_landlock,omitempty"`
	Ports       []uint16 `json:"ports,omitempty"`
	// NoUnix: a seccomp filter refuses AF_UNIX sockets and io_uring, where
	// Landlock cannot restrict connecting to a socket by path (ABI < 9).
	NoUnix bool   `json:"no_unix,omitempty"`
	Limits Limits `json:"limits"`
	// The process cap: RLIMIT_NPROC (in a user namespace of its own), a
	// pids cgroup the launcher joins, or the supervisor's count.
	NProc  bool   `json:"nproc,omitempty"`
	Cgroup string `json:"cgroup,omitempty"`
	Count  bool   `json:"count,omitempty"`
	// Tmp is the private temporary directory, removed after the command.
	Tmp string `json:"tmp,omitempty"`
}

// probed is Probe's finding with what the runner needs to apply it.
type probed struct {
	Support
	userns, netns bool
	pidsParent    string // where pids cgroups are made; "" when none can be
	noUnix        bool
}

var (
	probeOnce   sync.Once
	probeResult probed
	// forceCount makes the runner count processes itself (a test hook for
	// machines where it would use a pids cgroup or RLIMIT_NPROC).
	forceCount bool
)

// Probe says what confinement this machine gives. It starts a process once
// (to try the namespaces) and remembers the answer.
func Probe() Support { return probeOnce2().Support }

func probeOnce2() probed {
	probeOnce.Do(func() { probeResult = doProbe() })
	return probeResult
}

func doProbe() probed {
	var p probed
	abi, err := landlockABI()
	switch {
	case err != nil:
		p.Reason = fmt.Sprintf("this Linux kernel has no Landlock (%v): it needs Linux 6.2 or later with Landlock enabled (CONFIG_SECURITY_LANDLOCK, lsm=landlock)", err)
		return p
	case abi < 3:
		p.Reason = fmt.Sprintf("this Linux kernel's Landlock is ABI %d, too old to stop truncating files: it needs ABI 3 (Linux 6.2) or later", abi)
		return p
	}
	p.Landlock, p.Ports = abi, abi >= 4
	if abi < 6 {
		p.Gaps = append(p.Gaps, "signals to the user's other processes (Landlock ABI 6, Linux 6.12, blocks them)")
	}
	p.userns, p.netns = probeNamespaces(abi)
	switch {
	case p.netns:
		p.Network = "none (a network namespace of its own, with only its own loopback)"
	case abi >= 10:
		p.Network = "TCP and UDP blocked by Landlock (no network namespace could be made here; other protocols such as ICMP are not blocked)"
	case abi >= 4:
		p.Network = "TCP blocked by Landlock (no network namespace could be made here; UDP and other protocols are not blocked)"
	default:
		p.Reason = fmt.Sprintf("the network cannot be turned off: no network namespace could be made (user namespaces not permitted) and Landlock ABI %d cannot block TCP (ABI 4, Linux 6.7, can)", abi)
		return p
	}
	p.pidsParent = pidsCgroupParent()
	switch {
	case p.pidsParent != "":
		p.Processes = "a pids cgroup of its own"
	case os.Getuid() != 0 && p.userns:
		p.Processes = "RLIMIT_NPROC in a user namespace of its own"
	default:
		p.Processes = "counted by the runner every 50 ms (no pids cgroup can be made here, and RLIMIT_NPROC does not hold for root): a fast fork can pass the cap for a moment before the command is stopped"
	}
	p.noUnix = abi < 9 && seccompArch() != 0
	if abi < 9 && !p.noUnix {
		p.Gaps = append(p.Gaps, "connecting to a UNIX socket by its path (no seccomp filter for this processor)")
	}
	p.Available = true
	return p
}

// landlockABI is the kernel's Landlock ABI version.
func landlockABI() (int, error) {
	v, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if e != 0 {
		return 0, e
	}
	return int(v), nil
}

// probeNamespaces tries a launcher in a new user and network namespace,
// then in a user namespace alone.
func probeNamespaces(abi int) (userns, netns bool) {
	for _, try := range []policy{{UserNS: true, NetNS: true}, {UserNS: true}} {
		try.ABI, try.Probe, try.Parent, try.Limits = abi, true, os.Getpid(), DefaultLimits
		exe, err := self()
		if err != nil {
			return false, false
		}
		cmd, msg, err := startLauncher(exe, "probe", nil, try, nil)
		if err != nil || msg != "" {
			if cmd != nil {
				_ = cmd.Wait() // it failed; its status says nothing more
			}
			continue
		}
		if cmd.Wait() == nil {
			return true, try.NetNS
		}
	}
	return false, false
}

// startLauncher starts this program as the launcher of path (the probe
// when pol.Probe), and waits until it has run the command or failed: msg
// is why it failed, "" once the command runs. pol.Parent must be this
// process.
func startLauncher(exe, argv0 string, args []string, pol policy, stdio []*os.File) (*exec.Cmd, string, error) {
	data, err := json.Marshal(pol)
	if err != nil {
		return nil, "", err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, "", err
	}
	defer func() { _ = r.Close() }() // read to its end below
	cmd := exec.Command(exe, append([]string{"--"}, args...)...)
	cmd.Args[0] = argv0
	cmd.Env = append(os.Environ(), confineVar+"="+string(data))
	if len(stdio) == 3 {
		cmd.Stdin, cmd.Stdout, cmd.Stderr = stdio[0], stdio[1], stdio[2]
	}
	cmd.ExtraFiles = []*os.File{w}
	cmd.SysProcAttr = namespaces(pol)
	err = cmd.Start()
	_ = w.Close() // the launcher has its copy; ours must go for EOF
	if err != nil {
		return nil, "", err
	}
	msg, _ := io.ReadAll(io.LimitReader(r, 4096)) // EOF at its exec or exit
	return cmd, string(msg), nil
}

// namespaces is how the launcher is started: in a user namespace of its own
// (mapping the user to itself, so files keep their owner) and, for no
// network, a network namespace. A user other than root keeps CAP_NET_ADMIN
// there, as an ambient capability, to bring the loopback up; the launcher
// drops it before the command runs.
func namespaces(pol policy) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{}
	if !pol.UserNS {
		return attr
	}
	uid, gid := os.Getuid(), os.Getgid()
	attr.Cloneflags = syscall.CLONE_NEWUSER
	attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
	attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
	if pol.NetNS {
		attr.Cloneflags |= syscall.CLONE_NEWNET
		if uid != 0 {
			attr.AmbientCaps = []uintptr{unix.CAP_NET_ADMIN}
		}
	}
	return attr
}

// launcherPolicy reads the policy this process was started to apply, if
// it is a launcher: its parent is the one named there, the command follows
// "--" and the launch pipe is open.
func launcherPolicy() (policy, bool) {
	v, ok := os.LookupEnv(confineVar)
	if !ok || os.Getenv(superviseVar) != "" {
		return policy{}, false // none, or the supervisor's to take
	}
	var pol policy
	if json.Unmarshal([]byte(v), &pol) != nil || pol.Parent != os.Getppid() || len(os.Args) < 2 || os.Args[1] != "--" || !isPipe(launchFD) {
		return policy{}, false
	}
	if !pol.Probe && len(os.Args) < 3 {
		return policy{}, false
	}
	_ = os.Unsetenv(confineVar) // fails only for an invalid name, and this one is valid
	return pol, true
}

// launch applies pol to this process and runs the command in it (os.Args
// after "--"); it never returns. Everything that confines the command
// belongs to the thread that calls execve (no_new_privs, the seccomp
// filter, the Landlock domain), so the thread is locked and the command
// is run from it. What went wrong goes to the supervisor on the launch
// pipe. The memory limit comes last, with nothing allocated between it and
// execve: this Go program itself may already map more than the command may
// (a -race build maps terabytes), and any allocation after it could fail.
func launch(pol policy) {
	runtime.LockOSThread()
	syscall.CloseOnExec(launchFD)
	pipe := os.NewFile(launchFD, "launch")
	fail := func(format string, a ...any) {
		_, _ = fmt.Fprintf(pipe, format, a...) // the supervisor reads it; nothing else can be done if it cannot
		os.Exit(127)
	}
	var path string
	var argv0p *byte
	var argvp, envp []*byte
	var err error
	if !pol.Probe {
		path = os.Args[2]
		argv0p, err = syscall.BytePtrFromString(path)
		if err == nil {
			argvp, err = syscall.SlicePtrFromStrings(append([]string{os.Args[0]}, os.Args[3:]...))
		}
		if err == nil {
			envp, err = syscall.SlicePtrFromStrings(os.Environ())
		}
		if err != nil {
			fail("cannot start %s: %v", path, err)
		}
	}
	if pol.Cgroup != "" {
		if err := os.WriteFile(filepath.Join(pol.Cgroup, "cgroup.procs"), []byte("0\n"), 0); err != nil {
			fail("confinement: join the pids cgroup: %v", err)
		}
	}
	if pol.NetNS {
		if err := loopbackUp(); err != nil {
			fail("confinement: bring up the loopback of its network namespace: %v", err)
		}
	}
	if err := setLimits(pol); err != nil {
		fail("confinement: %v", err)
	}
	if err := dropCapabilities(); err != nil {
		fail("confinement: %v", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fail("confinement: no_new_privs: %v", err)
	}
	if pol.NoUnix {
		if err := refuseUnixSockets(); err != nil {
			fail("confinement: seccomp: %v", err)
		}
	}
	if err := landlock(pol); err != nil {
		fail("confinement: Landlock: %v", err)
	}
	if pol.Probe {
		os.Exit(0)
	}
	msg := make([]byte, 0, 4096)
	msg = append(msg, "cannot start "+path+": "...)
	memory := &syscall.Rlimit{Cur: uint64(pol.Limits.Memory), Max: uint64(pol.Limits.Memory)}
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, memory); err != nil {
		fail("confinement: set the memory limit: %v", err)
	}
	_, _, e := syscall.RawSyscall(syscall.SYS_EXECVE, uintptr(unsafe.Pointer(argv0p)), uintptr(unsafe.Pointer(&argvp[0])), uintptr(unsafe.Pointer(&envp[0])))
	// No allocation from here: copy into msg's room, write, exit.
	msg = msg[:len(msg)+copy(msg[len(msg):cap(msg)], e.Error())]
	if e == syscall.EACCES {
		msg = msg[:len(msg)+copy(msg[len(msg):cap(msg)], " (a confined command can run only programs in the system's directories, on PATH, in its own directory or in what it was given to read)")]
	}
	_, _ = syscall.Write(launchFD, msg) // the supervisor reads it; nothing else can be done if it cannot
	syscall.Exit(127)
}

// loopbackUp brings up "lo" in the new network namespace, so the command
// can serve and reach itself (a test server) and nothing else.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer func() { _ = unix.Close(fd) }() // a socket used for one ioctl
	req, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, req); err != nil {
		return err
	}
	req.SetUint16(req.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, req)
}

// setLimits sets the rlimits but the memory limit (soft and hard: the
// command cannot raise them). CPU's hard limit is 5 s above the soft one,
// so the command first gets SIGXCPU, which says why it ended.
func setLimits(pol policy) error {
	l := pol.Limits
	cpu := uint64((l.CPU + 999_999_999) / 1e9)
	set := []struct {
		name     string
		resource int
		cur, max uint64
	}{
		{"CPU time", syscall.RLIMIT_CPU, cpu, cpu + 5},
		{"open files", syscall.RLIMIT_NOFILE, uint64(l.OpenFiles), uint64(l.OpenFiles)},
		{"file size", syscall.RLIMIT_FSIZE, uint64(l.Output), uint64(l.Output)},
		{"core size", syscall.RLIMIT_CORE, 0, 0},
	}
	if pol.NProc {
		set = append(set, struct {
			name     string
			resource int
			cur, max uint64
		}{"processes", unix.RLIMIT_NPROC, uint64(l.Processes), uint64(l.Processes)})
	}
	for _, s := range set {
		// syscall.Setrlimit, not unix's: for RLIMIT_NOFILE it also stops
		// Go from restoring its original limit at exec.
		if err := syscall.Setrlimit(s.resource, &syscall.Rlimit{Cur: s.cur, Max: s.max}); err != nil {
			return fmt.Errorf("set the %s limit: %w", s.name, err)
		}
	}
	return nil
}

// dropCapabilities leaves the command no capability: none ambient, and,
// for root (who would get the bounding set back at exec), an empty
// bounding set.
func dropCapabilities() error {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clear the ambient capabilities: %w", err)
	}
	if os.Geteuid() != 0 {
		return nil
	}
	last := 63
	if data, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
			last = n
		}
	}
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("drop capability %d: %w", c, err)
		}
	}
	return nil
}

// Landlock access rights, by the ABI that introduced them.
const (
	fsRead  = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
	fsABI1  = 1<<13 - 1 // EXECUTE through MAKE_SYM
	fsFile  = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	fsDev   = unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	netTCP  = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
	netUDP  = unix.LANDLOCK_ACCESS_NET_BIND_UDP | unix.LANDLOCK_ACCESS_NET_CONNECT_SEND_UDP
	scopes  = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
	ruleNet = 2 // LANDLOCK_RULE_NET_PORT
)

// handledFS is every filesystem right the ABI knows: all of them are
// denied except where a rule allows them.
func handledFS(abi int) uint64 {
	h := uint64(fsABI1)
	if abi >= 2 {
		h |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		h |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if abi >= 5 {
		h |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	if abi >= 9 {
		h |= unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX
	}
	return h
}

// landlockNetPortAttr is struct landlock_net_port_attr.
type landlockNetPortAttr struct {
	allowed uint64
	port    uint64
}

// landlock restricts this thread (and so the command it execs) to pol's
// paths and ports, and, from ABI 6, to signalling its own processes and
// their abstract UNIX sockets.
func landlock(pol policy) error {
	fs := handledFS(pol.ABI)
	attr := unix.LandlockRulesetAttr{Handled_access_fs: fs}
	if pol.NetLandlock {
		attr.Handled_access_net = netTCP
		if pol.ABI >= 10 && len(pol.Ports) == 0 {
			attr.Handled_access_net |= netUDP
		}
	}
	if pol.ABI >= 6 {
		attr.Scoped = scopes
	}
	// The kernel takes a struct larger than it knows when the rest is zero.
	fd, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if e != 0 {
		return fmt.Errorf("create the ruleset: %w", e)
	}
	ruleset := int(fd)
	defer func() { _ = unix.Close(ruleset) }() // the domain outlives it
	add := func(path string, allowed uint64) error {
		f, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			if allowed != fs && (errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EACCES)) {
				return nil // a path to read that this machine lacks, or this user cannot reach anyway
			}
			return fmt.Errorf("open %s: %w", path, err)
		}
		defer func() { _ = unix.Close(f) }() // an O_PATH descriptor
		var st unix.Stat_t
		if err := unix.Fstat(f, &st); err != nil {
			return fmt.Errorf("stat %s: %w", path, err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			allowed &= fsFile
		}
		rule := unix.LandlockPathBeneathAttr{Allowed_access: allowed & fs, Parent_fd: int32(f)}
		if _, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&rule)), 0, 0, 0); e != 0 {
			return fmt.Errorf("allow %s: %w", path, e)
		}
		return nil
	}
	for _, p := range pol.Read {
		if err := add(p, fsRead); err != nil {
			return err
		}
	}
	for _, p := range pol.Devices {
		if err := add(p, fsDev); err != nil {
			return err
		}
	}
	for _, p := range pol.Write {
		if err := add(p, fs); err != nil {
			return err
		}
	}
	for _, port := range pol.Ports {
		rule := landlockNetPortAttr{allowed: unix.LANDLOCK_ACCESS_NET_CONNECT_TCP, port: uint64(port)}
		if _, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), ruleNet, uintptr(unsafe.Pointer(&rule)), 0, 0, 0); e != 0 {
			return fmt.Errorf("allow port %d: %w", port, e)
		}
	}
	if _, _, e := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(ruleset), 0, 0); e != 0 {
		return fmt.Errorf("restrict: %w", e)
	}
	return nil
}

// pidsCgroupParent is the directory under which this process can make pids
// cgroups: its own cgroup in the cgroup v1 pids hierarchy, or in the v2
// hierarchy when the pids controller is enabled for its children. It
// removes the cgroups of dead kernels it finds there. "" when none.
func pidsCgroupParent() string {
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	cgroups, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	var v1, v2 string // our cgroup's path in each hierarchy
	for _, line := range strings.Split(string(cgroups), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		if f[0] == "0" && f[1] == "" {
			v2 = f[2]
		}
		for _, c := range strings.Split(f[1], ",") {
			if c == "pids" {
				v1 = f[2]
			}
		}
	}
	var candidates []string
	for _, line := range strings.Split(string(mounts), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 3 {
			continue
		}
		root, mnt := f[3], f[4]
		switch {
		case g[0] == "cgroup" && v1 != "" && hasOption(g[2], "pids"):
			candidates = append(candidates, filepath.Join(mnt, strings.TrimPrefix(v1, root)))
		case g[0] == "cgroup2" && v2 != "":
			dir := filepath.Join(mnt, strings.TrimPrefix(v2, root))
			if ctl, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control")); err == nil && hasOption(strings.ReplaceAll(strings.TrimSpace(string(ctl)), " ", ","), "pids") {
				candidates = append(candidates, dir)
			}
		}
	}
	for _, dir := range candidates {
		test := filepath.Join(dir, fmt.Sprintf("llmkernels-%d-probe", os.Getpid()))
		if os.Mkdir(test, 0o755) != nil {
			continue
		}
		_, err := os.Stat(filepath.Join(test, "pids.max"))
		_ = os.Remove(test) // an empty cgroup; a leftover is removed by the next probe
		if err == nil {
			removeDeadCgroups(dir)
			return dir
		}
	}
	return ""
}

func hasOption(opts, name string) bool {
	for _, o := range strings.Split(opts, ",") {
		if o == name {
			return true
		}
	}
	return false
}

// removeDeadCgroups removes the pids cgroups left by kernels that died
// before removing them (kill -9).
func removeDeadCgroups(dir string) {
	entries, _ := os.ReadDir(dir) // nothing to clean if it cannot be read
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), "llmkernels-")
		if !ok {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		if pid, err := strconv.Atoi(pidText); err == nil && pid != os.Getpid() && syscall.Kill(pid, 0) == syscall.ESRCH {
			_ = os.Remove(filepath.Join(dir, e.Name())) // busy or gone: left for another time
		}
	}
}

var cgroupSeq atomic.Int64

// newPidsCgroup makes a pids cgroup capped at max processes.
func newPidsCgroup(parent string, max int) (string, error) {
	dir := filepath.Join(parent, fmt.Sprintf("llmkernels-%d-%d", os.Getpid(), cgroupSeq.Add(1)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", fmt.Errorf("make a pids cgroup: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.Itoa(max)), 0); err != nil {
		_ = os.Remove(dir) // the error above is the one to report
		return "", fmt.Errorf("set pids.max: %w", err)
	}
	return dir, nil
}

// cgroupRefused reports how many forks the pids cgroup refused.
func cgroupRefused(dir string) int {
	data, err := os.ReadFile(filepath.Join(dir, "pids.events"))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if n, ok := strings.CutPrefix(line, "max "); ok {
			v, _ := strconv.Atoi(strings.TrimSpace(n))
			return v
		}
	}
	return 0
}

// confined is a confined command's setup on the runner's side.
type confined struct {
	pol    policy
	env    []string // added to its environment, before Cmd.Env
	tmp    string
	cgroup string
}

// prepare sets up c's confinement: the policy (handed to the supervisor
// in its environment), a private temporary directory that is also its
// home, and a pids cgroup where one can be made. path is the program.
func prepare(c *Cmd, path string) (*confined, error) {
	p := probeOnce2()
	if !p.Available {
		return nil, &UnavailableError{Reason: p.Reason}
	}
	if c.Dir == "" {
		return nil, errors.New("a confined command needs a working directory: it is the one place it may write")
	}
	dir, err := filepath.Abs(c.Dir)
	if err != nil {
		return nil, err
	}
	ports, all, err := NetworkPorts(c.Confine.Network)
	if err != nil {
		return nil, err
	}
	k := &confined{pol: policy{ABI: p.Landlock, UserNS: p.userns, NoUnix: p.noUnix, Limits: c.Confine.Limits.WithDefaults()}}
	switch {
	case all:
	case len(ports) > 0:
		k.pol.NetLandlock, k.pol.Ports = p.Ports, ports
	case p.netns:
		k.pol.NetNS = true
	default:
		k.pol.NetLandlock = true
	}
	if k.tmp, err = os.MkdirTemp("", "llmkernels-confined-"); err != nil {
		return nil, fmt.Errorf("make its private temporary directory: %w", err)
	}
	k.pol.Tmp = k.tmp
	switch {
	case p.pidsParent != "" && !forceCount:
		if k.cgroup, err = newPidsCgroup(p.pidsParent, k.pol.Limits.Processes); err != nil {
			k.finish(nil)
			return nil, err
		}
		k.pol.Cgroup = k.cgroup
	case os.Getuid() != 0 && p.userns && !forceCount:
		k.pol.NProc = true
	default:
		k.pol.Count = true
	}
	home, _ := os.UserHomeDir() // "" leaves nothing out below
	k.pol.Read = append(readPaths(home), c.Confine.Read...)
	if filepath.IsAbs(path) {
		k.pol.Read = append(k.pol.Read, path)
	}
	k.pol.Write = append([]string{dir, k.tmp}, c.Confine.Write...)
	k.pol.Devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}
	k.env = []string{"TMPDIR=" + k.tmp, "TMP=" + k.tmp, "TEMP=" + k.tmp, "HOME=" + k.tmp, "XDG_RUNTIME_DIR=" + k.tmp,
		"XDG_CACHE_HOME=" + filepath.Join(k.tmp, ".cache"), "XDG_CONFIG_HOME=" + filepath.Join(k.tmp, ".config"),
		"XDG_DATA_HOME=" + filepath.Join(k.tmp, ".local", "share"), "XDG_STATE_HOME=" + filepath.Join(k.tmp, ".local", "state")}
	if mod := goModCache(home); mod != "" {
		k.pol.Read = append(k.pol.Read, mod)
		k.env = append(k.env, "GOMODCACHE="+mod)
	}
	if cache := goBuildCache(); cache != "" {
		k.pol.Write = append(k.pol.Write, cache)
		k.env = append(k.env, "GOCACHE="+cache)
	}
	return k, nil
}

// environ is what the command's environment gains, with the policy for
// the supervisor to take out.
func (k *confined) environ() []string {
	data, _ := json.Marshal(k.pol) // plain data always marshals
	return append(append([]string(nil), k.env...), confineVar+"="+string(data))
}

// outputLimit is how much the command may write to stdout and stderr.
func (k *confined) outputLimit() int64 { return k.pol.Limits.Output }

// finish notes in res a process limit the pids cgroup enforced, and
// removes the cgroup and the private temporary directory.
func (k *confined) finish(res *Result) {
	if k.cgroup != "" && res != nil && res.Limit == "" && cgroupRefused(k.cgroup) > 0 {
		res.Limit = LimitProcesses
	}
	removeConfinement(k.cgroup, k.tmp)
}

// removeConfinement removes a command's pids cgroup (once its processes
// are gone: it may be busy for a moment after) and its private temporary
// directory, giving back the write permission of any directory the
// command took it from. What still fails stays behind: an empty cgroup
// is removed by the next kernel's probe.
func removeConfinement(cgroup, tmp string) {
	if cgroup != "" {
		for i := 0; i < 200; i++ {
			if err := os.Remove(cgroup); err == nil || errors.Is(err, os.ErrNotExist) {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	if tmp != "" && os.RemoveAll(tmp) != nil {
		_ = filepath.WalkDir(tmp, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				_ = os.Chmod(p, 0o700)
			}
			return nil
		})
		_ = os.RemoveAll(tmp)
	}
}

// supervised is the policy of the command this supervisor runs, if
// confined.
var supervised *policy

// cleanUpConfinement removes, once the supervised command's processes are
// gone, its private temporary directory, and its pids cgroup if the
// runner is gone too (a runner still there reads the cgroup's count of
// refused forks first, then removes it). runner is the runner's pid.
func cleanUpConfinement(runner int) {
	if supervised == nil {
		return
	}
	cgroup := ""
	if os.Getppid() != runner {
		cgroup = supervised.Cgroup
	}
	removeConfinement(cgroup, supervised.Tmp)
}

// limitOf names the limit the command ran into, by the signal that ended
// it, or by the exit status a shell gives when that signal ended the
// program it ran (128 + the signal).
func limitOf(signal string, exitCode int) string {
	switch {
	case signal == syscall.SIGXCPU.String() || exitCode == 128+int(syscall.SIGXCPU):
		return LimitCPU
	case signal == syscall.SIGXFSZ.String() || exitCode == 128+int(syscall.SIGXFSZ):
		return LimitOutput
	}
	return ""
}

// systemRead are the system's paths every confined command may read and
// run: programs, libraries, certificates, time zones, name resolution,
// /proc (other processes' secrets there are guarded by ptrace rules that
// Landlock holds to its own domain) and /sys. Not /etc as a whole: it
// holds /etc/shadow and host keys.
var systemRead = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/nix/store", "/snap",
	"/proc", "/sys", "/run/systemd/resolve",
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/ssl", "/etc/ca-certificates", "/etc/ca-certificates.conf",
	"/etc/pki", "/etc/crypto-policies", "/etc/alternatives", "/etc/localtime", "/etc/timezone", "/etc/passwd", "/etc/group",
	"/etc/nsswitch.conf", "/etc/hosts", "/etc/host.conf", "/etc/resolv.conf", "/etc/gai.conf", "/etc/services", "/etc/protocols",
	"/etc/mime.types", "/etc/os-release", "/etc/lsb-release", "/etc/debian_version", "/etc/gitconfig", "/etc/inputrc",
	"/etc/locale.alias", "/etc/fonts", "/etc/magic", "/etc/python3"}

// toolRoots are directories in a home that hold interpreters and
// toolchains whose bin/ or shims/ directory is on PATH: those are readable
// whole (pyenv's shims run its versions).
var toolRoots = map[string]bool{".pyenv": true, ".rbenv": true, ".nodenv": true, ".cargo": true, ".rustup": true,
	".volta": true, ".deno": true, ".bun": true, ".nvm": true}

// readPaths is systemRead, the directories on PATH, and the installation
// each bin/ or shims/ directory on PATH belongs to (/usr/local/go for
// /usr/local/go/bin), unless that is in the home directory and not a
// known tool root: ~/.local/bin is readable, ~/.local is not.
func readPaths(home string) []string {
	out := append([]string(nil), systemRead...)
	inHome := func(p string) bool {
		return home != "" && (p == home || strings.HasPrefix(p, home+string(filepath.Separator)) || strings.HasPrefix(home, p+string(filepath.Separator)))
	}
	if root := os.Getenv("GOROOT"); root != "" {
		out = append(out, root)
	}
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if !filepath.IsAbs(d) {
			continue
		}
		out = append(out, d)
		base, parent := filepath.Base(d), filepath.Dir(d)
		if base != "bin" && base != "sbin" && base != "shims" || parent == "/" {
			continue
		}
		_, goErr := os.Stat(filepath.Join(parent, "src", "runtime"))
		if !inHome(parent) || toolRoots[filepath.Base(parent)] || goErr == nil {
			out = append(out, parent)
		}
	}
	return out
}

// goModCache is the Go module cache (read only: a Go tool's tests build
// against it), "" when there is none.
func goModCache(home string) string {
	dir := os.Getenv("GOMODCACHE")
	if dir == "" {
		if gp := filepath.SplitList(os.Getenv("GOPATH")); len(gp) > 0 && gp[0] != "" {
			dir = filepath.Join(gp[0], "pkg", "mod")
		} else if home != "" {
			dir = filepath.Join(home, "go", "pkg", "mod")
		}
	}
	if st, err := os.Stat(dir); dir == "" || err != nil || !st.IsDir() {
		return ""
	}
	return dir
}

// goBuildCache is a Go build cache that only confined commands share
// (GOCACHE): their builds stay fast, and a command cannot plant an entry
// in the user's own cache, which the user's builds would trust.
func goBuildCache() string {
	base, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	dir := filepath.Join(base, "llmkernels", "confined-go-build")
	if os.MkdirAll(dir, 0o700) != nil {
		return ""
	}
	return dir
}

// startSupervised starts the supervisor's command: through the launcher
// when the runner handed it a policy. over is sent to when the command has
// more processes than its cap, where the supervisor counts them.
func startSupervised(argv0, path string, args []string) (cmd *exec.Cmd, over <-chan struct{}, err error) {
	v, ok := os.LookupEnv(confineVar)
	if !ok {
		cmd = exec.Command(path, args...)
		cmd.Args[0] = argv0
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		return cmd, nil, cmd.Start()
	}
	_ = os.Unsetenv(confineVar) // fails only for an invalid name, and this one is valid
	var pol policy
	if err := json.Unmarshal([]byte(v), &pol); err != nil {
		return nil, nil, fmt.Errorf("confinement policy: %w", err)
	}
	pol.Parent = os.Getpid()
	supervised = &pol
	exe, err := self()
	if err != nil {
		return nil, nil, err
	}
	cmd, msg, err := startLauncher(exe, argv0, append([]string{path}, args...), pol, []*os.File{os.Stdin, os.Stdout, os.Stderr})
	if err != nil {
		return nil, nil, fmt.Errorf("start its confinement: %w", err)
	}
	if msg != "" {
		_ = cmd.Wait() // it exits 127 having said why
		return nil, nil, errors.New(msg)
	}
	if pol.Count {
		ch := make(chan struct{})
		go countProcesses(pol.Limits.Processes, ch)
		over = ch
	}
	return cmd, over, nil
}

// countProcesses closes over once this process has more than max
// descendants.
func countProcesses(max int, over chan struct{}) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for range t.C {
		if len(descendants(os.Getpid())) > max {
			close(over)
			return
		}
	}
}

// maybeLaunch runs this process as a launcher if it was started as one.
func maybeLaunch() {
	if pol, ok := launcherPolicy(); ok {
		launch(pol)
	}
}
