package loop

import (
	"fmt"
	"os"

	"github.com/llmkernels/kernels/solve/store"
	"github.com/llmkernels/kernels/solve/workspace"
)

// Attempt isolation: an attempt never works in the run's workspace. Its
// directory is built from its inputs — a copy of the workspace as it
// stands (the user's files plus the verified leaves merged so far) and the
// attempt's own files from its output artifact — wherever the step runs,
// and removed after the step. Only a SAT leaf's files are merged back
// (verify.go), refusing files changed since the attempt was made.

// attemptDir is one attempt's copy of the workspace.
type attemptDir struct {
	dir  string
	base workspace.Manifest // the workspace's files as copied
}

// attemptWorkspace copies the run's workspace into a new temporary
// directory and writes files over it.
func (e *engine) attemptWorkspace(node string, files []workspace.File) (*attemptDir, error) {
	dir, err := os.MkdirTemp("", "solve-attempt-"+store.Short(node)+"-")
	if err != nil {
		return nil, fmt.Errorf("node %s: a directory for the attempt: %w", store.Short(node), err)
	}
	a := &attemptDir{dir: dir}
	if a.base, err = workspace.Copy(e.cfg.Workspace, dir); err != nil {
		a.remove()
		return nil, err
	}
	if err := workspace.Write(dir, files); err != nil {
		a.remove()
		return nil, fmt.Errorf("node %s: the attempt's files: %w", store.Short(node), err)
	}
	return a, nil
}

// remove deletes the attempt's directory. One left behind (a failed
// removal, a killed process) holds a copy and nothing else.
func (a *attemptDir) remove() { _ = os.RemoveAll(a.dir) }

// changed is what the attempt changed in its copy, and what the workspace
// held for those files when the copy was made.
func (a *attemptDir) changed() ([]workspace.File, map[string]string, error) {
	files, err := workspace.Diff(a.dir, a.base)
	if err != nil {
		return nil, nil, err
	}
	base := map[string]string{}
	for _, f := range files {
		base[f.Path] = a.base[f.Path]
	}
	return files, base, nil
}
