package codex

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmkernels/kernels/solve/loop"
	"github.com/llmkernels/kernels/solve/workspace"
)

func TestRunCheckWritesTheOutputsFilesThenRunsTheCommand(t *testing.T) {
	ws := t.TempDir()
	out := &loop.ArtifactView{Type: "code", Format: "json", Content: `{"summary":"s","files":[{"path":"a.txt","content":"hi"}]}`}
	o, err := New().Resolve(context.Background(), &loop.Call{Op: loop.OpRunCheck, Workspace: ws, Output: out, Params: map[string]any{loop.CommandParam: "grep -q hi a.txt"}})
	if err != nil {
		t.Fatal(err)
	}
	var r workspace.Result
	if err := json.Unmarshal(o.Answer, &r); err != nil || !r.Passed || o.Cost != 0.01 {
		t.Errorf("answer %s %v, cost %v", o.Answer, err, o.Cost)
	}
	if _, err := os.Stat(filepath.Join(ws, "a.txt")); err != nil {
		t.Error(err)
	}
	// A failing check is an answer (passed false), not an error.
	o, err = New().Resolve(context.Background(), &loop.Call{Op: loop.OpRunCheck, Workspace: ws, Params: map[string]any{loop.CommandParam: "false"}})
	if err != nil || json.Unmarshal(o.Answer, &r) != nil || r.Passed {
		t.Errorf("failing check: %s %v", o.Answer, err)
	}
}

func TestAFailingCommandAsAPlanStepIsPermanent(t *testing.T) {
	_, err := New().Resolve(context.Background(), &loop.Call{Op: loop.OpResolve, Workspace: t.TempDir(), Params: map[string]any{loop.CommandParam: "echo no; exit 2"}})
	var re *loop.ResolverError
	if !errors.As(err, &re) || !re.Permanent || re.Mode != "command_failed" || re.Cost != 0.01 || !strings.Contains(err.Error(), "exited 2") {
		t.Errorf("error %v", err)
	}
}

func TestMisuseIsAPermanentErrorNamingWhatIsMissing(t *testing.T) {
	for _, tc := range []struct {
		c    *loop.Call
		mode string
	}{
		{&loop.Call{Op: loop.OpRunCheck, Workspace: t.TempDir()}, "capability_mismatch"},
		{&loop.Call{Op: loop.OpRunCheck, Params: map[string]any{loop.CommandParam: "true"}}, "no_workspace"},
		{&loop.Call{Op: loop.OpRunCheck, Workspace: t.TempDir(), Params: map[string]any{loop.CommandParam: "true"},
			Output: &loop.ArtifactView{Format: "json", Content: `{"files":[{"path":"","content":""}]}`}}, "file_ops"},
	} {
		var re *loop.ResolverError
		if _, err := New().Resolve(context.Background(), tc.c); !errors.As(err, &re) || !re.Permanent || re.Mode != tc.mode {
			t.Errorf("%+v: %v, want permanent %s", tc.c, err, tc.mode)
		}
	}
}
