package proc

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// Confinement is what a confined command may touch (Cmd.Confine). The
// zero value is the strictest: its working directory and a private
// temporary directory to write, the system's read-only paths to read,
// no network, DefaultLimits.
type Confinement struct {
	// Write lists more directories the command may read and write; its
	// working directory (Cmd.Dir) always is one.
	Write []string
	// Read lists more paths (files or directories) it may read and run:
	// its inputs.
	Read []string
	// Network is what it may reach: nothing when empty; AllNetwork for
	// everything; otherwise "host:port" entries, of which only the ports
	// are enforced (TCP connect to those ports, to any host).
	Network []string
	// Limits are its resource limits; a zero field takes DefaultLimits'.
	Limits Limits
}

// AllNetwork, as a Network entry, allows every connection.
const AllNetwork = "all"

// Limits are the resource limits of a confined command.
type Limits struct {
	// CPU is the processor time each process may use (RLIMIT_CPU).
	CPU time.Duration `json:"cpu"`
	// Memory is the address space each process may map, in bytes
	// (RLIMIT_AS).
	Memory int64 `json:"memory"`
	// Processes is how many processes and threads the command may have at
	// once, all of its descendants together.
	Processes int `json:"processes"`
	// OpenFiles is how many files each process may hold open
	// (RLIMIT_NOFILE).
	OpenFiles int `json:"open_files"`
	// Output is the largest file the command may write (RLIMIT_FSIZE) and
	// the most it may write to stdout and stderr together before the
	// runner stops it, in bytes.
	Output int64 `json:"output"`
}

// DefaultLimits are the limits a zero field takes.
var DefaultLimits = Limits{CPU: 5 * time.Minute, Memory: 4 << 30, Processes: 512, OpenFiles: 1024, Output: 1 << 30}

// WithDefaults is l with each zero field set to DefaultLimits'.
func (l Limits) WithDefaults() Limits {
	if l.CPU <= 0 {
		l.CPU = DefaultLimits.CPU
	}
	if l.Memory <= 0 {
		l.Memory = DefaultLimits.Memory
	}
	if l.Processes <= 0 {
		l.Processes = DefaultLimits.Processes
	}
	if l.OpenFiles <= 0 {
		l.OpenFiles = DefaultLimits.OpenFiles
	}
	if l.Output <= 0 {
		l.Output = DefaultLimits.Output
	}
	return l
}

// String is the limits as a person reads them.
func (l Limits) String() string {
	return fmt.Sprintf("CPU %s a process, memory %s a process, %d processes, %d open files a process, output %s",
		l.CPU, Bytes(l.Memory), l.Processes, l.OpenFiles, Bytes(l.Output))
}

// Bytes is n in the largest binary unit that keeps it whole, or in bytes.
func Bytes(n int64) string {
	for _, u := range []struct {
		shift int
		name  string
	}{{40, "TiB"}, {30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d %s", n>>u.shift, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

// ParseBytes reads a size such as 4GiB, 512MiB, 64KiB or 1000 (bytes).
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("%q is not a size: give a positive number of bytes, or one with KiB, MiB, GiB or TiB (e.g. 4GiB)", s)
	}
	return n * mult, nil
}

// NetworkPorts checks a Network list and returns the TCP ports it names;
// all is true when it allows every connection.
func NetworkPorts(network []string) (ports []uint16, all bool, err error) {
	for _, e := range network {
		e = strings.TrimSpace(e)
		if strings.EqualFold(e, AllNetwork) || e == "*" {
			all = true
			continue
		}
		host, port, err := net.SplitHostPort(e)
		if err != nil || host == "" {
			return nil, false, fmt.Errorf("network %q: give host:port (e.g. api.example.org:443) or %q", e, AllNetwork)
		}
		n, err := strconv.ParseUint(port, 10, 16)
		if err != nil || n == 0 {
			return nil, false, fmt.Errorf("network %q: the port must be a number from 1 to 65535", e)
		}
		ports = append(ports, uint16(n))
	}
	return ports, all, nil
}

// Support is the confinement this machine gives (Probe).
type Support struct {
	// Available: Run can confine a command here. When false, Reason says
	// why, and Run refuses a command with Confine set.
	Available bool   `json:"available"`
	Reason    string `json:"reason,omitempty"`
	// Landlock is the kernel's Landlock ABI version (0: none).
	Landlock int `json:"landlock_abi"`
	// Network is how a command is kept off the network.
	Network string `json:"network,omitempty"`
	// Ports says whether an allowance of host:port entries is held to
	// those ports (Landlock TCP rules); when false it allows all.
	Ports bool `json:"ports"`
	// Processes is how the process cap holds.
	Processes string `json:"processes,omitempty"`
	// Gaps are what confinement does not block on this machine.
	Gaps []string `json:"gaps,omitempty"`
}

// String is the support in one line, as a status shows it.
func (s Support) String() string {
	if !s.Available {
		return "not available: " + s.Reason
	}
	out := fmt.Sprintf("Landlock ABI %d (files: write only its directory and a private temporary one; read system paths and its inputs); network: %s; processes: %s", s.Landlock, s.Network, s.Processes)
	if len(s.Gaps) > 0 {
		out += "; not blocked here: " + strings.Join(s.Gaps, "; ")
	}
	return out
}

// Describe is the confinement in force for model-written code, in one
// line, as status commands show it: off (the person's --unconfined), not
// available (and so refused), or on with the limits.
func Describe(unconfined bool, l Limits) string {
	s := Probe()
	switch {
	case unconfined:
		return "off (--unconfined): model-written code runs with your user's rights"
	case !s.Available:
		return s.String() + "; model-written code is refused unless --unconfined"
	}
	return "on: " + s.String() + "; limits: " + l.WithDefaults().String()
}

// UnavailableError is Run's error for a confined command where
// confinement is not available.
type UnavailableError struct{ Reason string }

func (e *UnavailableError) Error() string {
	return "confinement is not available here (" + e.Reason + "): model-written code is not run unconfined unless the person running the kernel says so"
}

// ErrProcessLimit is Result.Stopped when the runner stopped a confined
// command for having more processes than Limits.Processes (where it counts
// them itself: see Support.Processes).
var ErrProcessLimit = errors.New("more processes than the process limit")

// ErrOutputTotal is Result.Stopped when a confined command wrote more than
// Limits.Output bytes to stdout and stderr together.
var ErrOutputTotal = errors.New("stdout and stderr passed the output limit")

// The limits Result.Limit names.
const (
	LimitProcesses = "processes"
	LimitCPU       = "CPU time"
	LimitOutput    = "output"
)
