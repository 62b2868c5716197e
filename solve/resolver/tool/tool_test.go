package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmkernels/kernels/internal/proc"
	"github.com/llmkernels/kernels/internal/proc/proctest"
	"github.com/llmkernels/kernels/solve/record"

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
	r := New(st, record.Resolver{ID: "tool-say-1", CostPerInvocation: 0.001, Metadata: map[string]any{"command": `sh "$SOLVE_TOOL_DIR/say.sh"`, "tool_artifact_id": art}}, workspace.Sandbox{})
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
		entry record.Resolver
		ws    string
		mode  string
	}{
		{record.Resolver{ID: "h", Metadata: map[string]any{"command": "true"}}, "", "no_workspace"},
		{record.Resolver{ID: "h", Metadata: map[string]any{"command": "exit 4"}}, t.TempDir(), "command_failed"},
		{record.Resolver{ID: "h", Metadata: map[string]any{"command": "true", "tool_artifact_id": "gone"}}, t.TempDir(), "tool_missing"},
	} {
		if _, err := New(st, tc.entry, workspace.Sandbox{}).Resolve(ctx, &loop.Call{Workspace: tc.ws}); !errors.As(err, &re) || !re.Permanent || re.Mode != tc.mode {
			t.Errorf("%+v: %v, want %s", tc.entry, err, tc.mode)
		}
	}
}

// TestABuiltToolRunsConfined pins that a built tool can read and write
// its workspace but cannot read an SSH key or an API key file, write
// outside, follow a link out, reach the network, fork 10,000 processes,
// allocate 8 GiB or write 10 GB; each refusal is in the answer the
// attempt records.
func TestABuiltToolRunsConfined(t *testing.T) {
	if !proc.Probe().Available {
		t.Skipf("confinement not available here: %s", proc.Probe().Reason)
	}
	ctx := context.Background()
	st := open(t)
	e := proctest.NewEscape(t)
	node, err := st.InsertNode(ctx, store.NewNode{Goal: "g", Summary: "g"})
	if err != nil {
		t.Fatal(err)
	}
	files, _ := json.Marshal(map[string]any{"summary": "t", "files": []any{map[string]string{"path": "escape.py", "content": e.Python()}}})
	art, err := st.PutArtifact(ctx, store.NewArtifact{Node: node, Type: "code", Format: "json", Content: files})
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "input.txt"), []byte("in"), 0o644); err != nil {
		t.Fatal(err)
	}
	sb := workspace.Sandbox{Limits: proc.Limits{Processes: 64, Memory: 1 << 30, Output: 1 << 20}}
	r := New(st, record.Resolver{ID: "tool-escape-1", Metadata: map[string]any{"command": `python3 "$SOLVE_TOOL_DIR/escape.py"`, "tool_artifact_id": art}}, sb)
	out, err := r.Resolve(ctx, &loop.Call{Op: loop.OpResolve, Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	var ans loop.ResolveAnswer
	if err := json.Unmarshal(out.Answer, &ans); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", ans.Text)
	e.Check(t, ans.Text)
	if data, err := os.ReadFile(filepath.Join(ws, "output.txt")); err != nil || string(data) != "written" {
		t.Errorf("the tool's output file: %q %v", data, err)
	}
}

// TestAToolReachesWhatAPersonAllowed pins that a tool reaches the network
// only once a person allowed it: refused before, connected after.
func TestAToolReachesWhatAPersonAllowed(t *testing.T) {
	if !proc.Probe().Available {
		t.Skipf("confinement not available here: %s", proc.Probe().Reason)
	}
	host, port, _ := net.SplitHostPort(proctest.LoopbackServer(t))
	command := fmt.Sprintf(`python3 -c 'import socket; socket.create_connection((%q, %s), timeout=3); print("CONNECTED")'`, host, port)
	for _, tc := range []struct {
		meta map[string]any
		want bool
	}{
		{map[string]any{"command": command, "network": []any{"localhost:" + port}}, false},
		{map[string]any{"command": command, "network": []any{"localhost:" + port}, "network_allowed": []any{"localhost:" + port}}, true},
	} {
		out, err := New(open(t), record.Resolver{ID: "tool-net-1", Metadata: tc.meta}, workspace.Sandbox{}).Resolve(context.Background(), &loop.Call{Op: loop.OpResolve, Workspace: t.TempDir()})
		if got := err == nil && strings.Contains(string(out.Answer), "CONNECTED"); got != tc.want {
			t.Errorf("%v: connected %v (%v), want %v", tc.meta, got, err, tc.want)
		}
	}
}
