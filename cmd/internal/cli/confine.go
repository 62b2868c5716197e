package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/llmkernels/kernels/internal/proc"
)

// ConfineFlags are the flags of a command that runs model-written code:
// --unconfined and the resource limits.
type ConfineFlags struct {
	Unconfined bool
	cpu        time.Duration
	memory     string
	processes  int
	openFiles  int
	output     string
}

// AddConfineFlags adds the confinement flags to fs; what runs is named in
// the help (e.g. "skills", "commands").
func AddConfineFlags(fs *pflag.FlagSet, what string) *ConfineFlags {
	f := &ConfineFlags{}
	d := proc.DefaultLimits
	fs.BoolVar(&f.Unconfined, "unconfined", false, "run "+what+" unconfined, with your user's rights (recorded); needed where confinement is not available")
	fs.DurationVar(&f.cpu, "cpu-limit", d.CPU, "CPU time each process of "+what+" may use")
	fs.StringVar(&f.memory, "memory-limit", sizeFlag(d.Memory), "address space each process of "+what+" may map (e.g. 4GiB)")
	fs.IntVar(&f.processes, "process-limit", d.Processes, "processes and threads "+what+" may have at once")
	fs.IntVar(&f.openFiles, "open-files-limit", d.OpenFiles, "files each process of "+what+" may hold open")
	fs.StringVar(&f.output, "output-limit", sizeFlag(d.Output), "largest file "+what+" may write, and most they may print (e.g. 1GiB)")
	return f
}

func sizeFlag(n int64) string { return strings.ReplaceAll(proc.Bytes(n), " ", "") }

// Limits are the limits the flags give; a bad value is a usage error.
func (f *ConfineFlags) Limits() (proc.Limits, error) {
	mem, err := proc.ParseBytes(f.memory)
	if err != nil {
		return proc.Limits{}, Usagef("--memory-limit: %v", err)
	}
	out, err := proc.ParseBytes(f.output)
	if err != nil {
		return proc.Limits{}, Usagef("--output-limit: %v", err)
	}
	switch {
	case mem < 32<<20:
		return proc.Limits{}, Usagef("--memory-limit %s: give at least 32MiB (an interpreter needs that much to start)", f.memory)
	case out < 1<<10:
		return proc.Limits{}, Usagef("--output-limit %s: give at least 1KiB", f.output)
	case f.cpu < time.Second:
		return proc.Limits{}, Usagef("--cpu-limit %s: give at least 1s", f.cpu)
	case f.processes < 1:
		return proc.Limits{}, Usagef("--process-limit %d: give at least 1", f.processes)
	case f.openFiles < 16:
		return proc.Limits{}, Usagef("--open-files-limit %d: give at least 16 (a program needs a few to start)", f.openFiles)
	}
	return proc.Limits{CPU: f.cpu, Memory: mem, Processes: f.processes, OpenFiles: f.openFiles, Output: out}, nil
}

// Refuse says, once, on w, why model-written code will not run here: where
// confinement is not available (s, from proc.Probe) and --unconfined was
// not given. It says nothing otherwise.
func (f *ConfineFlags) Refuse(w io.Writer, what string, s proc.Support) {
	if !s.Available && !f.Unconfined {
		_, _ = fmt.Fprintf(w, "note: confinement is not available here (%s): %s will not run unless you pass --unconfined (they then run with your user's rights)\n", s.Reason, what)
	}
}
