// Package docs_test runs the shell examples of README.md and docs/*.md that
// are marked runnable, against freshly built binaries, offline: no API key,
// no config file, a scripted provider wherever a model is called.
//
// The marker is an HTML comment on the line before a ```sh block:
//
//	<!-- runnable expect="wrote swe.json" -->
//	<!-- runnable expect="usage" exit=2 -->
//	<!-- runnable expect="achieved" limit=5m -->
//
// The block runs under bash -e; it must exit with the status given (0 when
// none) within its limit (a Go duration; a minute when none) and its
// output (stdout and stderr) must hold the expected fragment. A longer
// limit is for an example that builds and tests Go code (solve run --demo
// runs go test), which a loaded machine makes slow.
// The runnable blocks of one file run in order in one directory, so a
// tutorial's later steps see what its earlier steps made; `bin/NAME` and
// `NAME` both find the binaries, and the repository's files (scripts under
// cmd/*/testdata, lumen/testdata, docs/examples) are where the docs say.
package docs_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// example is one runnable block.
type example struct {
	file   string // relative to the repository root
	line   int    // of the opening fence
	script string
	expect string
	exit   int
	limit  time.Duration
}

// defaultLimit is an example's time limit when its marker gives none.
const defaultLimit = time.Minute

var marker = regexp.MustCompile(`^<!-- runnable expect="([^"]+)"(?: exit=(\d+))?(?: limit=(\S+))? -->$`)

// examples reads the runnable blocks of one Markdown file. A marker not
// followed by a ```sh block is an error, so a marker cannot silently run
// nothing.
func examples(root, rel string) ([]example, error) {
	f, err := os.Open(filepath.Join(root, rel))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []example
	sc := bufio.NewScanner(f)
	n := 0
	var pending *example
	var inBlock bool
	var body strings.Builder
	for sc.Scan() {
		n++
		line := sc.Text()
		switch {
		case inBlock && line == "```":
			pending.script = body.String()
			out = append(out, *pending)
			pending, inBlock = nil, false
			body.Reset()
		case inBlock:
			body.WriteString(line + "\n")
		case pending != nil:
			if line != "```sh" {
				return nil, fmt.Errorf("%s:%d: a runnable marker must be followed by a ```sh block", rel, pending.line)
			}
			pending.line, inBlock = n, true
		default:
			m := marker.FindStringSubmatch(line)
			if m == nil {
				if strings.HasPrefix(line, "<!-- runnable") {
					return nil, fmt.Errorf("%s:%d: malformed marker %q (want <!-- runnable expect=\"TEXT\" [exit=N] [limit=DURATION] -->)", rel, n, line)
				}
				continue
			}
			ex := example{file: rel, line: n, expect: m[1], limit: defaultLimit}
			if m[2] != "" {
				ex.exit, _ = strconv.Atoi(m[2])
			}
			if m[3] != "" {
				d, err := time.ParseDuration(m[3])
				if err != nil || d <= 0 {
					return nil, fmt.Errorf("%s:%d: limit %q is not a duration such as 5m", rel, n, m[3])
				}
				ex.limit = d
			}
			pending = &ex
		}
	}
	if pending != nil {
		return nil, fmt.Errorf("%s:%d: runnable block not closed", rel, pending.line)
	}
	return out, sc.Err()
}

func TestEveryRunnableExampleRuns(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatal("the doc examples need bash")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"README.md"}
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		files = append(files, filepath.Join("docs", filepath.Base(p)))
	}

	// make test builds bin/ first and names it in DOCS_TEST_BIN, which
	// saves linking the three binaries again; alone, the test builds them.
	bin := os.Getenv("DOCS_TEST_BIN")
	if bin == "" {
		bin = t.TempDir()
		build := exec.Command("go", "build", "-buildvcs=false", "-ldflags=-s -w", "-o", bin+string(os.PathSeparator),
			"./cmd/hermitcrab", "./cmd/lumen", "./cmd/solve")
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
	}

	total := 0
	for _, rel := range files {
		exs, err := examples(root, rel)
		if err != nil {
			t.Fatal(err)
		}
		if len(exs) == 0 {
			continue
		}
		total += len(exs)
		t.Run(rel, func(t *testing.T) {
			dir := sandbox(t, root, bin)
			env := environment(t, dir, bin)
			for _, ex := range exs {
				ctx, cancel := context.WithTimeout(context.Background(), ex.limit)
				cmd := exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", "-c", ex.script)
				cmd.Dir, cmd.Env = dir, env
				var out bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &out
				err := cmd.Run()
				cancel()
				code := 0
				if ee, ok := err.(*exec.ExitError); ok {
					code = ee.ExitCode()
				} else if err != nil {
					t.Fatalf("%s:%d: %v", ex.file, ex.line, err)
				}
				if errors.Is(ctx.Err(), context.DeadlineExceeded) {
					t.Errorf("%s:%d: stopped after its limit of %s\n%s\noutput:\n%s", ex.file, ex.line, ex.limit, ex.script, out.String())
					continue
				}
				if code != ex.exit {
					t.Errorf("%s:%d: exit status %d, want %d\n%s\noutput:\n%s", ex.file, ex.line, code, ex.exit, ex.script, out.String())
					continue
				}
				if !strings.Contains(out.String(), ex.expect) {
					t.Errorf("%s:%d: output lacks %q\n%s\noutput:\n%s", ex.file, ex.line, ex.expect, ex.script, out.String())
				}
			}
		})
	}
	if total == 0 {
		t.Fatal("no runnable examples found: the marker or the file list is wrong")
	}
}

// sandbox makes the directory the examples of one page run in: the
// repository's top-level entries linked in (so the scripts the docs name
// are found), bin/ holding the fresh binaries, and nothing else.
func sandbox(t *testing.T, root, bin string) string {
	dir := t.TempDir()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := e.Name()
		if name == "bin" || strings.HasPrefix(name, ".") || name == "node_modules" {
			continue
		}
		if err := os.Symlink(filepath.Join(root, name), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(bin, filepath.Join(dir, "bin")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "home"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// environment is the caller's, without any provider key or kernel setting,
// with a home, data and config of the sandbox's own. Go's build cache stays
// the caller's (it holds only compiled packages, keyed by their inputs):
// in a fresh home every go test an example runs (solve run --demo's)
// would compile the standard library first.
func environment(t *testing.T, dir, bin string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case name == "HOME", name == "PATH", strings.HasPrefix(name, "XDG_"),
			strings.HasPrefix(name, "ANTHROPIC_"), strings.HasPrefix(name, "OPENAI_"),
			strings.HasPrefix(name, "LLMKERNELS_"), strings.HasPrefix(name, "HERMITCRAB_"),
			strings.HasPrefix(name, "LUMEN_"), strings.HasPrefix(name, "SOLVE_"):
			continue
		}
		env = append(env, kv)
	}
	home := filepath.Join(dir, "home")
	if os.Getenv("GOCACHE") == "" {
		if cache, err := exec.Command("go", "env", "GOCACHE").Output(); err == nil && len(bytes.TrimSpace(cache)) > 0 {
			env = append(env, "GOCACHE="+string(bytes.TrimSpace(cache)))
		} else {
			t.Logf("no Go build cache to share (%v): examples that run go test compile from scratch", err)
		}
	}
	return append(env,
		"HOME="+home,
		"XDG_DATA_HOME="+filepath.Join(home, ".local", "share"),
		"XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"LLMKERNELS_CONFIG=/dev/null",
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
	)
}
