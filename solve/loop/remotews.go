package loop

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/llmkernels/kernels/solve/store"
	"github.com/llmkernels/kernels/solve/workspace"
)

// The workspace of a run with remote workers lives in the database, so no
// two machines share a directory:
//
//   - workspace_base: the user's --workspace as the run started (every
//     regular file, .solve/ left out), an artifact of the root stored in
//     the transaction that starts the run;
//   - workspace_merge: the files of each verified leaf merged since, an
//     artifact of the root each, in order.
//
// A worker builds each step's workspace from them in a temporary
// directory (the attempt's copy is made from there, as in process). A
// leaf's merge checks, in the transaction that records it, that none of
// its files changed since the attempt was made — in the stored workspace,
// base plus merges — and refuses a conflict as in process; concurrent
// merges are serialised by the store (SERIALIZABLE on PostgreSQL). The
// coordinator writes each merge into the user's --workspace as its step
// completes, so Step 12's checks and the user see the assembled files.

const (
	artWorkspaceBase  = "workspace_base"
	artWorkspaceMerge = "workspace_merge"
)

// storedFiles is the content of a workspace_base or workspace_merge
// artifact.
type storedFiles struct {
	Files []workspace.File `json:"files"`
}

// baseArtifact reads the user's workspace into a workspace_base artifact.
func baseArtifact(root, dir string) (store.NewArtifact, error) {
	files, err := workspace.Diff(dir, workspace.Manifest{})
	if err != nil {
		return store.NewArtifact{}, fmt.Errorf("store the workspace %s for remote workers: %w", dir, err)
	}
	content, err := store.JSONText(storedFiles{Files: files})
	if err != nil {
		return store.NewArtifact{}, fmt.Errorf("store the workspace %s for remote workers: %w", dir, err)
	}
	return store.NewArtifact{Node: root, Type: artWorkspaceBase, Format: "json", Content: []byte(content),
		Metadata: map[string]any{"files": len(files), "from": dir}}, nil
}

// baseFiles is the run's stored workspace as it started.
func baseFiles(ctx context.Context, c *store.Conn, root string) ([]workspace.File, error) {
	base, err := c.LatestArtifact(ctx, root, artWorkspaceBase)
	if err != nil {
		return nil, err
	}
	if base == nil {
		return nil, &ResumeError{Root: root, Err: fmt.Errorf("run %s has no stored workspace (%s): it was started without remote workers", store.Short(root), artWorkspaceBase)}
	}
	return readFiles(ctx, c, base.ID)
}

// mergesSince is the files of the run's merges after the first k, in
// order, and how many merges there are.
func mergesSince(ctx context.Context, c *store.Conn, root string, k int) ([][]workspace.File, int, error) {
	merges, err := c.ArtifactsOf(ctx, root, artWorkspaceMerge)
	if err != nil {
		return nil, 0, err
	}
	var out [][]workspace.File
	for _, a := range merges[min(k, len(merges)):] {
		files, err := readFiles(ctx, c, a.ID)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, files)
	}
	return out, len(merges), nil
}

// storedWorkspace is the run's stored workspace: its base's files, then
// each merge's, in order (later ones win).
func storedWorkspace(ctx context.Context, c *store.Conn, root string) ([][]workspace.File, error) {
	base, err := baseFiles(ctx, c, root)
	if err != nil {
		return nil, err
	}
	merges, _, err := mergesSince(ctx, c, root, 0)
	return append([][]workspace.File{base}, merges...), err
}

func readFiles(ctx context.Context, c *store.Conn, id string) ([]workspace.File, error) {
	_, data, err := c.Artifact(ctx, id)
	if err != nil {
		return nil, err
	}
	var s storedFiles
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("workspace artifact %s: %w", id, err)
	}
	return s.Files, nil
}

// materialize writes the run's stored workspace into a new temporary
// directory: the workspace a worker's step sees.
func materialize(ctx context.Context, st *store.Store, root string) (string, error) {
	layers, err := storedWorkspace(ctx, &st.Conn, root)
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "solve-workspace-"+store.Short(root)+"-")
	if err != nil {
		return "", fmt.Errorf("run %s: a directory for the workspace: %w", store.Short(root), err)
	}
	for _, files := range layers {
		if err := workspace.Write(dir, files); err != nil {
			_ = os.RemoveAll(dir)
			return "", fmt.Errorf("run %s: build the workspace from its artifacts: %w", store.Short(root), err)
		}
	}
	return dir, nil
}

// storedMerge merges a verified leaf's files into the stored workspace:
// refused with a *workspace.ConflictError when one changed there since
// the attempt was made (base: what it found), else recorded as a
// workspace_merge artifact of the root and written into the step's
// directory.
func (e *engine) storedMerge(ctx context.Context, node string, files []workspace.File, base map[string]string) error {
	err := e.st.Write(ctx, func(tx *store.Tx) error {
		layers, err := storedWorkspace(ctx, &tx.Conn, e.root)
		if err != nil {
			return err
		}
		cur := map[string]string{} // path → hash in the stored workspace ("" = none)
		for _, l := range layers {
			for _, f := range l {
				if f.Deleted {
					cur[f.Path] = ""
					continue
				}
				if cur[f.Path], err = f.Hash(); err != nil {
					return err
				}
			}
		}
		var bad []string
		for _, f := range files {
			want, err := f.Hash()
			if err != nil {
				return err
			}
			if f.Deleted {
				want = ""
			}
			if c := cur[f.Path]; c != base[f.Path] && c != want {
				bad = append(bad, f.Path)
			}
		}
		if len(bad) > 0 {
			return &workspace.ConflictError{Paths: bad}
		}
		content, err := store.JSONText(storedFiles{Files: files})
		if err != nil {
			return err
		}
		_, err = tx.PutArtifact(ctx, store.NewArtifact{Node: e.root, Type: artWorkspaceMerge, Format: "json",
			Content: []byte(content), Metadata: map[string]any{"node": node, "files": len(files)}})
		return err
	})
	if err != nil {
		return err
	}
	return workspace.Write(e.cfg.Workspace, files)
}

// syncWorkspace writes the merges recorded since the last call into the
// user's --workspace (the coordinator's), in order; the first call of a
// process writes them all (the same files again after a resume).
func (e *engine) syncWorkspace(ctx context.Context) error {
	if e.opts.Remote == nil || e.cfg.Workspace == "" {
		return nil
	}
	layers, n, err := mergesSince(ctx, &e.st.Conn, e.root, e.merged)
	if err != nil {
		return err
	}
	for _, files := range layers {
		if err := workspace.Write(e.cfg.Workspace, files); err != nil {
			return fmt.Errorf("write the workers' merged files into %s: %w", e.cfg.Workspace, err)
		}
	}
	e.merged = n
	return nil
}
