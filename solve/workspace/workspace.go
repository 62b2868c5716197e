// Package workspace is what the SOLVE loop does to a directory on disk:
// write an answer's files into it (never outside it) and run a shell
// command in it as a subprocess with a timeout and an output cap. The
// loop's verify step and the resolvers that act on a workspace
// (codex-tools-0, built and hired tools) share it.
package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/llmkernels/kernels/internal/atomicfile"
	"github.com/llmkernels/kernels/internal/proc"
)

// Subprocess limits.
const (
	Timeout   = 2 * time.Minute
	OutputCap = 16 << 10 // bytes of stdout+stderr kept
)

// File is one file of an answer: a path relative to the directory and
// its content.
type File struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

// Write writes files into dir, each atomically, refusing paths that
// leave it.
func Write(dir string, files []File) error {
	for _, f := range files {
		p := filepath.Join(dir, filepath.Clean("/"+f.Path))
		if f.Path == "" || !strings.HasPrefix(p, filepath.Clean(dir)+string(filepath.Separator)) {
			return fmt.Errorf("file path %q leaves the workspace %s; give a relative path inside it", f.Path, dir)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("write %s: %w", f.Path, err)
		}
		if err := atomicfile.Write(p, []byte(f.Content), 0o644); err != nil {
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

// Run runs sh -c command in dir through the one subprocess runner
// (internal/proc): its whole process group is killed at the timeout and
// with the kernel, output (stdout+stderr) is capped, and provider secrets
// are not passed on. env is added to the scrubbed environment.
func Run(ctx context.Context, dir, command string, env []string) Result {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	r, err := proc.Run(ctx, proc.Cmd{Name: "sh", Args: []string{"-c", command}, Dir: dir, Env: env, MergeStderr: true, MaxOutput: OutputCap})
	if err != nil {
		return Result{ExitCode: -1, Output: err.Error()}
	}
	res := Result{Passed: r.OK(), ExitCode: r.ExitCode, Output: string(r.Stdout), Seconds: r.Duration.Seconds()}
	if r.StdoutDropped > 0 {
		res.Output += fmt.Sprintf("\n[output cut: %d more bytes]", r.StdoutDropped)
	}
	switch {
	case errors.Is(r.Stopped, context.DeadlineExceeded):
		res.Output += fmt.Sprintf("\n[killed after the %s timeout]", Timeout)
	case r.Signal != "":
		res.Output += "\n[" + r.Err().Error() + "]"
	}
	return res
}
