package skill

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/llmkernels/kernels/internal/proc"
)

// FuzzManifest: whatever a skill.json holds (the model writes skills, a
// person edits them), reading it either fails with an error naming the
// file, or gives a network need every entry of which confinement can
// enforce, and that Network reports unchanged.
func FuzzManifest(f *testing.F) {
	for _, seed := range []string{``, `{}`, `{"network": []}`, `{"network": ["api.example.org:443"]}`, `{"network": ["all"]}`,
		`{"network": ["*", "[::1]:8080"]}`, `{"network": ["api.example.org"]}`, `{"network": ["x:0"]}`, `{"network": "all"}`, `[1, 2]`, `{"network": [" host:99999 "]}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, manifest []byte) {
		dir := filepath.Join(t.TempDir(), "skills")
		if err := os.MkdirAll(filepath.Join(dir, "x"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "x", ManifestFile), manifest, 0o644); err != nil {
			t.Fatal(err)
		}
		r := &Runner{Dir: dir}
		m, err := r.Manifest("x")
		if err != nil {
			if !strings.Contains(err.Error(), ManifestFile) {
				t.Fatalf("the error does not name the file: %v", err)
			}
			return
		}
		if _, _, err := proc.NetworkPorts(m.Network); err != nil {
			t.Fatalf("a manifest was accepted with a network confinement cannot enforce: %v", err)
		}
		declared, allowed, err := r.Network("x")
		if err != nil || !slices.Equal(declared, m.Network) || len(allowed) != 0 {
			t.Fatalf("Network = %v, %v, %v; the manifest declares %v and nothing was allowed", declared, allowed, err, m.Network)
		}
	})
}

// FuzzAnswer: whatever a skill prints (its code is the model's), the
// result is a success whose output is what it said, or a failure that says
// why; text that is not a JSON object is the output, whole.
func FuzzAnswer(f *testing.F) {
	for _, seed := range []string{``, `plain text`, `{"ok": true, "output": {"forecast": "rain"}, "display": "Rain today."}`,
		`{"ok": true, "output": "a string"}`, `{"ok": false, "error": "no such city"}`, `{"ok": false}`, `{"ok": "yes"}`,
		`  {"display": "hi"}  `, `{"ok": true, "output": null}`, `[{"ok": false}]`, `{"ok": false, "error": ""}`, "{\"output\": \"\\u0000\"}"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, stdout []byte) {
		res := &Result{Skill: "x"}
		readAnswer(stdout, res)
		if !res.OK && res.Error == "" {
			t.Fatalf("a failure without a reason: %+v", res)
		}
		trimmed := bytes.TrimSpace(stdout)
		var obj map[string]json.RawMessage
		if len(trimmed) == 0 || trimmed[0] != '{' || json.Unmarshal(trimmed, &obj) != nil {
			if !res.OK || res.Output != string(trimmed) || res.Display != "" {
				t.Fatalf("text that is not a JSON object gave %+v; want it whole as the output", res)
			}
		}
	})
}
