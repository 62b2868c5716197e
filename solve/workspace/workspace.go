// Package workspace is what the SOLVE loop does to a directory on disk:
// write an answer's files into it (never outside it), run a shell
// command in it as a subprocess under the caller's deadline with an output
// cap, and isolate attempts (isolate.go: a copy per attempt, what it
// changed read back as files, merges that refuse conflicts). The
// loop's verify step and the resolvers that act on a workspace
// (codex-tools-0, built and hired tools) share it.
package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/llmkernels/kernels/internal/atomicfile"
	"github.com/llmkernels/kernels/internal/proc"
)

// OutputCap is the bytes of a command's stdout+stderr kept.
const OutputCap = 16 << 10

// File is one file of an answer: a path relative to the directory and
// its content (base64 when Encoding says so), or its deletion.
type File struct {
	Path     string `json:"path"`
	Content  string `json:"content"`
	Encoding string `json:"encoding,omitempty" jsonschema:"enum=base64"`
	Deleted  bool   `json:"deleted,omitempty"`
}

// Write writes files into dir, each atomically (or removes a deleted
// one), refusing paths that leave it.
func Write(dir string, files []File) error {
	for _, f := range files {
		p, err := inside(dir, f.Path)
		if err != nil {
			return err
		}
		if f.Deleted {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("delete %s: %w", f.Path, err)
			}
			continue
		}
		data, err := f.bytes()
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("write %s: %w", f.Path, err)
		}
		perm := fs.FileMode(0o644)
		if fi, err := os.Stat(p); err == nil {
			perm = fi.Mode().Perm() // a rewritten script stays executable
		}
		if err := atomicfile.Write(p, data, perm); err != nil {
			return fmt.Errorf("write %s: %w", f.Path, err)
		}
	}
	return nil
}

// Result is a command's outcome.
type Result struct {
	Passed   bool    `json:"passed"`
	ExitCode int     `json:"exit_code"`
	Output   string  `json:"output"`
	Seconds  float64 `json:"seconds"`
}

// Sandbox is how Run confines the commands it runs: model-written code
// (checks, plan steps, built tools) and hired commands.
type Sandbox struct {
	// Unconfined runs commands as the user, unconfined: the person's
	// choice (--unconfined), said in each command's output.
	Unconfined bool
	// Limits are the resource limits (zero fields: proc.DefaultLimits).
	Limits proc.Limits
	// Network is what a command may reach (proc.Confinement.Network):
	// nothing unless a person allowed a tool's need.
	Network []string
}

// Unconfined is the note every unconfined command's output ends with.
const Unconfined = "[ran unconfined: --unconfined]"

// Run runs sh -c command in dir through the one subprocess runner
// (internal/proc), confined by sb: it may write only dir (and a private
// temporary directory), reach no network unless allowed, and is held to
// its resource limits. Its whole process group is killed at ctx's
// deadline (the node's remaining time: the loop sets it), on cancel and
// with the kernel; output (stdout+stderr) is capped, and provider secrets
// are not passed on. env is added to the scrubbed environment. A command
// that cannot run (confinement not available here) is a failed Result
// saying why.
func Run(ctx context.Context, dir, command string, env []string, sb Sandbox) Result {
	c := proc.Cmd{Name: "sh", Args: []string{"-c", command}, Dir: dir, Env: env, MergeStderr: true, MaxOutput: OutputCap}
	if !sb.Unconfined {
		c.Confine = &proc.Confinement{Network: sb.Network, Limits: sb.Limits}
	}
	r, err := proc.Run(ctx, c)
	if err != nil {
		return Result{ExitCode: -1, Output: err.Error()}
	}
	res := Result{Passed: r.OK(), ExitCode: r.ExitCode, Output: string(r.Stdout), Seconds: r.Duration.Seconds()}
	if r.StdoutDropped > 0 {
		res.Output += fmt.Sprintf("\n[output cut: %d more bytes]", r.StdoutDropped)
	}
	switch {
	case errors.Is(r.Stopped, context.DeadlineExceeded):
		res.Output += fmt.Sprintf("\n[killed at its deadline, after %.1fs: the node's time ran out]", res.Seconds)
	case r.Err() != nil && (r.Signal != "" || r.Limit != ""):
		res.Output += "\n[" + r.Err().Error() + "]"
	case r.Limit != "":
		res.Output += "\n[it reached its " + r.Limit + " limit]"
	}
	if sb.Unconfined {
		res.Output += "\n" + Unconfined
	}
	return res
}
