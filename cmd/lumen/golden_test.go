package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/json/*.shape from what the views print")

// TestJSONShapesAreAsDocumented pins the shape of every document a view
// prints with --json (the keys, at every depth, and the kinds of their
// values) against testdata/json/: an instance that chatted, ran, reflected,
// was judged, failed a cycle, keeps an earlier version of a skill and has a skill declaring
// network, allowed. Values change from run to run (ids, times); the shape is the
// contract scripts rely on. go test -run JSONShapes -update rewrites them.
func TestJSONShapesAreAsDocumented(t *testing.T) {
	bin := lumenBinary(t)
	dir := filepath.Join(t.TempDir(), "mind")
	testdata, _ := filepath.Abs("../../lumen/testdata")
	run := func(stdin string, args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, append(args, "--dir", dir)...)
		cmd.Stdin = strings.NewReader(stdin)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("lumen %v: %v\nstdout: %s\nstderr: %s", args, err, out.String(), errb.String())
		}
		return out.String()
	}
	run("", "init")
	run("Hello! Who are you?\nPlease take a moment to reflect on who you want to be.\n",
		"chat", "--provider", "script", "--script", filepath.Join(testdata, "demo-chat.json"))
	run("", "run", "--cycles", "2", "--interval", "0", "--provider", "script", "--script", filepath.Join(testdata, "demo-run.json"))
	verdict := map[string]any{"verdict": "it does what it says", "score": 0.8,
		"findings": []any{map[string]any{"claim": "it is curious", "evidence": []string{"x"}, "assessment": "it asks"}}}
	judge := scriptOf(t, "judge-self-model", verdict, "judge-honesty", verdict, "judge-coherence", verdict)
	run("", "audit", "--judge", "--provider", "script", "--script", judge)
	bad := scriptOf(t, "think", "not an object", "think", "not an object", "think", "not an object")
	run("", "run", "--cycles", "1", "--interval", "0", "--provider", "script", "--script", bad) // a failure to list
	if err := os.MkdirAll(filepath.Join(dir, "skills", ".history", "chat", "0123abcd"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "skills", "chat", "skill.json"), []byte(`{"network": ["api.example.org:443"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	run("", "skills", "allow", "chat", "--network")
	for name, args := range map[string][]string{
		"status":        {"status"},
		"memory":        {"memory", "--all"},
		"memory-search": {"memory", "search", "who are you"},
		"values":        {"values"},
		"goals":         {"goals"},
		"skills":        {"skills"},
		"skill-history": {"skills", "history", "chat"},
		"audit":         {"audit"},
	} {
		var doc any
		out := run("", append(args, "--json")...)
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("lumen %v --json: %v\n%s", args, err, out)
		}
		got := shapeOf(doc)
		file := filepath.Join("testdata", "json", name+".shape")
		if *update {
			if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("%v (go test -run JSONShapes -update writes it)", err)
		}
		if got != string(want) {
			t.Errorf("lumen %v --json changed shape:\n%s", args, lineDiff(string(want), got))
		}
	}
}

// scriptOf writes a script answering each step (name, answer, ...) once.
func scriptOf(t *testing.T, pairs ...any) string {
	t.Helper()
	var responses []any
	for i := 0; i < len(pairs); i += 2 {
		text, err := json.Marshal(pairs[i+1])
		if err != nil {
			t.Fatal(err)
		}
		responses = append(responses, map[string]any{"match": map[string]any{"system_contains": "step: " + pairs[i].(string)},
			"response": map[string]any{"content": []any{map[string]any{"type": "text", "text": string(text)}}}})
	}
	data, err := json.Marshal(map[string]any{"responses": responses})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// shapeOf lists the paths of a JSON document with the kinds of their
// values, one a line, sorted: "[].usage.cost_usd number". The elements of
// an array are one path ("[]"); a path whose values differ in kind lists
// them all ("null|object").
func shapeOf(doc any) string {
	kinds := map[string]map[string]bool{}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		kind := "null"
		switch v := v.(type) {
		case map[string]any:
			kind = "object"
			for k, x := range v {
				walk(path+"."+k, x)
			}
		case []any:
			kind = "array"
			for _, x := range v {
				walk(path+"[]", x)
			}
		case string:
			kind = "string"
		case float64:
			kind = "number"
		case bool:
			kind = "bool"
		}
		if kinds[path] == nil {
			kinds[path] = map[string]bool{}
		}
		kinds[path][kind] = true
	}
	walk("", doc)
	var lines []string
	for path, ks := range kinds {
		if path == "" {
			path = "."
		}
		lines = append(lines, fmt.Sprintf("%s %s", path, strings.Join(slices.Sorted(maps.Keys(ks)), "|")))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n") + "\n"
}

// lineDiff lists the lines only want has (-) and only got has (+).
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for _, l := range w {
		if !slices.Contains(g, l) {
			fmt.Fprintf(&b, "- %s\n", l)
		}
	}
	for _, l := range g {
		if !slices.Contains(w, l) {
			fmt.Fprintf(&b, "+ %s\n", l)
		}
	}
	return b.String()
}
