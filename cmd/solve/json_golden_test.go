package main_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/llmkernels/kernels/cmd/internal/cli"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden --json documents in testdata/golden")

// The documents --json prints (and the report's JSON file) are an
// interface people script against: their keys, nesting, types and values
// are pinned by golden files, after what differs between two identical
// runs (ids, timestamps, hashes, durations, temporary paths) is masked.
// Run with -update to rewrite them after a deliberate change.
func TestJSONDocumentsKeepTheirShape(t *testing.T) {
	t.Parallel()
	// Every answer's usage is given, so what each call cost is the same
	// in every run.
	usage := map[string]int{"input_tokens": 1200, "output_tokens": 300}
	dir := t.TempDir()
	sc := writeScriptUsage(t, dir, usage, queueSteps()...)
	r := runSolve(t, dir, "run", queueGoal, "--suggest", "BillingQueue", "--suggest", "billing-invoices-queue", "--provider", "script", "--script", sc,
		"--budget", "5", "--time", "30m", "--report", "report.json")
	if r.code != 0 {
		t.Fatalf("run: %s", r.stderr)
	}
	root := rootOf(t, r.stdout)
	boards := t.TempDir()
	sc = writeScriptUsage(t, boards, usage, boardsSteps()...)
	r = runSolve(t, boards, "run", boardsGoal, "--provider", "script", "--script", sc, "--workspace", workspace(t, boards, "example.com/boards"),
		"--budget", "5", "--time", "1h", "--no-report")
	if r.code != cli.ExitWaiting {
		t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	boardsRoot := rootOf(t, r.stdout)
	planDir, _ := planOK(t, sweGoal, "swe_agent.json")

	if err := os.WriteFile(filepath.Join(planDir, "swe.txt"), []byte(sweGoal), 0o644); err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs(filepath.Join("testdata", "swe_agent.json"))
	if err != nil {
		t.Fatal(err)
	}

	n := newMasker(dir, boards, planDir)
	docs := []struct {
		name string
		dir  string
		args []string
	}{
		{"status", dir, []string{"status"}},
		{"status-root", dir, []string{"status", root}},
		{"status-waiting", boards, []string{"status", boardsRoot}},
		{"log", dir, []string{"log"}},
		{"resolvers", dir, []string{"resolvers"}},
		{"kg", dir, []string{"kg", "--capability", "naming"}},
		{"kg-goal", boards, []string{"kg", "--goal", "Board A"}},
		{"artifacts", dir, []string{"artifacts", root}},
		{"hire", boards, []string{"hire"}},
		{"hire-all", dir, []string{"hire", "--all"}},
		{"check", planDir, []string{"check", "plan.json"}},
		{"eval", planDir, []string{"eval", "swe.txt", "--examples=false", "--provider", "script", "--script", script}},
	}
	for _, d := range docs {
		res := runSolve(t, d.dir, append(d.args, "--json")...)
		if res.code != 0 {
			t.Fatalf("%v: exit %d %s", d.args, res.code, res.stderr)
		}
		golden(t, d.name, n.mask(t, []byte(res.stdout)))
	}
	data, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "report", n.mask(t, data))
}

// golden compares got with testdata/golden/NAME.json (or writes it with
// -update).
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name+".json")
	if *updateGolden {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != string(got) {
		t.Errorf("%s --json changed (go test -run %s -update rewrites it after a deliberate change):\n--- want\n%s\n--- got\n%s", name, t.Name(), want, got)
	}
}

// masker replaces what differs between two identical runs with stable
// placeholders: each id by its number in order of appearance (its 8-char
// short form too), timestamps, hashes, the test's directories, and the
// values of keys that measure time or the size of what holds them.
type masker struct {
	dirs []string
	ids  map[string]string
}

func newMasker(dirs ...string) *masker { return &masker{dirs: dirs, ids: map[string]string{}} }

var (
	uuidRE  = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	timeRE  = regexp.MustCompile(`\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?`)
	shaRE   = regexp.MustCompile(`\b[0-9a-f]{64}\b`)
	shortRE = regexp.MustCompile(`\b[0-9a-f]{8}\b`)
)

// varying are the keys whose values measure wall time (any key ending in
// _seconds too), or the bytes of something holding a path or an id.
var varying = []string{"size_bytes", "reserved", "seconds"}

// mask reads doc in order (keys and numbers as printed) and writes it
// again, indented, with what varies replaced.
func (n *masker) mask(t *testing.T, doc []byte) []byte {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var out bytes.Buffer
	if err := n.value(dec, &out, "", ""); err != nil {
		t.Fatalf("not JSON (%v):\n%s", err, doc)
	}
	if dec.More() {
		t.Fatalf("more than one JSON document:\n%s", doc)
	}
	out.WriteByte('\n')
	return out.Bytes()
}

// value copies the next JSON value of dec to out; key is the key it is
// the value of, indent the current indentation.
func (n *masker) value(dec *json.Decoder, out *bytes.Buffer, key, indent string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	str := func(s string) {
		data, _ := json.Marshal(s)
		out.Write(bytes.ReplaceAll(bytes.ReplaceAll(bytes.ReplaceAll(data, []byte(`\u003c`), []byte("<")), []byte(`\u003e`), []byte(">")), []byte(`\u0026`), []byte("&")))
	}
	switch x := tok.(type) {
	case json.Delim:
		end, open := "]", x == '['
		if x == '{' {
			end = "}"
		}
		out.WriteString(x.String())
		first := true
		for dec.More() {
			if !first {
				out.WriteByte(',')
			}
			first = false
			out.WriteString("\n" + indent + "  ")
			k := key
			if !open {
				kt, err := dec.Token()
				if err != nil {
					return err
				}
				k = kt.(string)
				str(k)
				out.WriteString(": ")
			}
			if err := n.value(dec, out, k, indent+"  "); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil {
			return err
		}
		if !first {
			out.WriteString("\n" + indent)
		}
		out.WriteString(end)
	case string:
		if key == "confinement" { // what this machine offers
			str("<machine>")
			break
		}
		str(n.text(x))
	case json.Number:
		if slices.Contains(varying, key) || strings.HasSuffix(key, "_seconds") {
			str("<varies>")
		} else {
			out.WriteString(x.String())
		}
	case nil:
		out.WriteString("null")
	default:
		fmt.Fprint(out, x)
	}
	return nil
}

func (n *masker) text(s string) string {
	for _, d := range n.dirs {
		s = strings.ReplaceAll(s, d, "<dir>")
	}
	s = shaRE.ReplaceAllString(s, "<sha256>")
	s = uuidRE.ReplaceAllStringFunc(s, func(id string) string {
		if p, ok := n.ids[id]; ok {
			return p
		}
		p := fmt.Sprintf("<id%d>", len(n.ids)+1)
		n.ids[id], n.ids[id[:8]] = p, p+"[:8]"
		return p
	})
	s = shortRE.ReplaceAllStringFunc(s, func(id string) string {
		if p, ok := n.ids[id]; ok {
			return p
		}
		return id
	})
	return timeRE.ReplaceAllString(s, "<time>")
}
