package tool

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmkernels/kernels/solve/loop"
	"github.com/llmkernels/kernels/solve/store"
	"github.com/llmkernels/kernels/solve/workspace"
)

func open(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "kernel.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestAToolRunsItsCommandWithItsFiles(t *testing.T) {
	ctx := context.Background()
	st := open(t)
	node, err := st.InsertNode(ctx, store.NewNode{Goal: "g", Summary: "g"})
	if err != nil {
		t.Fatal(err)
	}
	art, err := st.PutArtifact(ctx, store.NewArtifact{Node: node, Type: "code", Format: "json", Content: []byte(`{"summary":"t","files":[{"path":"say.sh","content":"echo from-the-tool"}]}`)})
	if err != nil {
		t.Fatal(err)
	}
	r := New(st, store.Resolver{ID: "tool-say-1", CostPerInvocation: 0.001, Metadata: map[string]any{"command": `sh "$SOLVE_TOOL_DIR/say.sh"`, "tool_artifact_id": art}}, workspace.Sandbox{})
	if cost, secs := r.Estimate(ctx, &loop.Call{}); cost != 0.001 || secs != 1 {
		t.Errorf("estimate %v %v", cost, secs)
	}
	out, err := r.Resolve(ctx, &loop.Call{Op: loop.OpResolve, Workspace: t.TempDir(), Params: map[string]any{"output_path": "said.txt"}})
	if err != nil {
		t.Fatal(err)
	}
	var a loop.ResolveAnswer
	if err := json.Unmarshal(out.Answer, &a); err != nil || !strings.Contains(a.Text, "from-the-tool") || len(a.Files) != 1 || a.Files[0].Path != "said.txt" {
		t.Errorf("answer %s %v", out.Answer, err)
	}
}

func TestAToolFailsPermanentlyWithTheReason(t *testing.T) {
	ctx := context.Background()
	st := open(t)
	var re *loop.ResolverError
	for _, tc := range []struct {
		entry store.Resolver
		ws    string
		mode  string
	}{
		{store.Resolver{ID: "h", Metadata: map[string]any{"command": "true"}}, "", "no_workspace"},
		{store.Resolver{ID: "h", Metadata: map[string]any{"command": "exit 4"}}, t.TempDir(), "command_failed"},
		{store.Resolver{ID: "h", Metadata: map[string]any{"command": "true", "tool_artifact_id": "gone"}}, t.TempDir(), "tool_missing"},
	} {
		if _, err := New(st, tc.entry, workspace.Sandbox{}).Resolve(ctx, &loop.Call{Workspace: tc.ws}); !errors.As(err, &re) || !re.Permanent || re.Mode != tc.mode {
			t.Errorf("%+v: %v, want %s", tc.entry, err, tc.mode)
		}
	}
}
