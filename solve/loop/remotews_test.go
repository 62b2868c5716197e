package loop

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/llmkernels/kernels/internal/pgtest"
	"github.com/llmkernels/kernels/solve/store"
	"github.com/llmkernels/kernels/solve/workspace"
)

// Two workers verify, at the same moment, leaves whose attempts both
// started without shared.go and both write it: each step's directory was
// built before the other merged, so only the stored workspace can tell.
// One merge is recorded; the other is refused with a ConflictError naming
// the file, and the stored workspace holds the first's version. (The
// in-process check in the step's directory cannot see a concurrent merge;
// a deliberate bug in storedMerge's check slipped past the end-to-end
// test of two workers writing one file.)
func TestConcurrentStoredMergesOfOneFileConflict(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, pgtest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for round := range 5 {
		root := store.NewID()
		if err := st.Write(ctx, func(tx *store.Tx) error {
			if _, err := tx.InsertNode(ctx, store.NewNode{ID: root, Goal: "g", Summary: "g", TauLocal: store.TauLocal, TauGlobal: store.TauGlobal, MaxAttempts: 3}); err != nil {
				return err
			}
			content, err := store.JSONText(storedFiles{Files: []workspace.File{{Path: "go.mod", Content: "module x\n"}}})
			if err != nil {
				return err
			}
			_, err = tx.PutArtifact(ctx, store.NewArtifact{Node: root, Type: artWorkspaceBase, Format: "json", Content: []byte(content)})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		var errs [2]error
		var wg sync.WaitGroup
		for i := range 2 {
			e := newEngine(st, root, runConfig{Workspace: t.TempDir()}, Options{})
			wg.Go(func() {
				errs[i] = e.storedMerge(ctx, root, []workspace.File{{Path: "shared.go", Content: fmt.Sprintf("package x // leaf %d\n", i)}}, map[string]string{})
			})
		}
		wg.Wait()
		won := slices.Index(errs[:], nil)
		var ce *workspace.ConflictError
		if won < 0 || !errors.As(errs[1-won], &ce) || !slices.Equal(ce.Paths, []string{"shared.go"}) {
			t.Fatalf("round %d: merges ended %v, want one recorded and one refused on shared.go", round, errs)
		}
		layers, err := storedWorkspace(ctx, &st.Conn, root)
		if err != nil {
			t.Fatal(err)
		}
		if len(layers) != 2 || len(layers[1]) != 1 || layers[1][0].Content != fmt.Sprintf("package x // leaf %d\n", won) {
			t.Errorf("round %d: the stored workspace is %v", round, layers)
		}
	}
}
