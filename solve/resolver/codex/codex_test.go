package codex

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmkernels/kernels/solve/loop"
	"github.com/llmkernels/kernels/solve/workspace"
)

// A check runs in the directory the loop prepared (an attempt's copy of
// the workspace), with the call's environment, until the call's deadline.
func TestRunCheckRunsTheCommandInTheCallsDirectory(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("hi"), 0o644); err != nil {
		t.Fatal(err)
	}
	o, err := New(workspace.Sandbox{}).Resolve(context.Background(), &loop.Call{Op: loop.OpRunCheck, Workspace: ws, Env: []string{"WANT=hi"}, Params: map[string]any{loop.CommandParam: `grep -q "$WANT" a.txt`}})
	if err != nil {
		t.Fatal(err)
	}
	var r workspace.Result
	if err := json.Unmarshal(o.Answer, &r); err != nil || !r.Passed || o.Cost != 0.01 {
		t.Errorf("answer %s %v, cost %v", o.Answer, err, o.Cost)
	}
	// A failing check is an answer (passed false), not an error.
	o, err = New(workspace.Sandbox{}).Resolve(context.Background(), &loop.Call{Op: loop.OpRunCheck, Workspace: ws, Params: map[string]any{loop.CommandParam: "false"}})
	if err != nil || json.Unmarshal(o.Answer, &r) != nil || r.Passed {
		t.Errorf("failing check: %s %v", o.Answer, err)
	}
	// At the call's deadline the command is killed, however long it meant to run.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	began := time.Now()
	o, err = New(workspace.Sandbox{}).Resolve(ctx, &loop.Call{Op: loop.OpRunCheck, Workspace: ws, Params: map[string]any{loop.CommandParam: "sleep 60"}})
	if err != nil || json.Unmarshal(o.Answer, &r) != nil || r.Passed || time.Since(began) > 30*time.Second || !strings.Contains(r.Output, "killed at its deadline") {
		t.Errorf("a check past its deadline: %s %v after %s", o.Answer, err, time.Since(began))
	}
}

func TestAFailingCommandAsAPlanStepIsPermanent(t *testing.T) {
	_, err := New(workspace.Sandbox{}).Resolve(context.Background(), &loop.Call{Op: loop.OpResolve, Workspace: t.TempDir(), Params: map[string]any{loop.CommandParam: "echo no; exit 2"}})
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
	} {
		var re *loop.ResolverError
		if _, err := New(workspace.Sandbox{}).Resolve(context.Background(), tc.c); !errors.As(err, &re) || !re.Permanent || re.Mode != tc.mode {
			t.Errorf("%+v: %v, want permanent %s", tc.c, err, tc.mode)
		}
	}
}
