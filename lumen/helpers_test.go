package lumen

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/llm/script"
	"github.com/llmkernels/kernels/lumen/memory"
)

// clock ticks one second per reading, from 2026-02-14 09:00 UTC.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 2, 14, 9, 0, 0, 0, time.UTC)} }

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

// newInstance initialises an instance in a temporary directory, lets
// prepare write its state, and opens it with the script as the LLM.
func newInstance(t testing.TB, scriptFile string, prepare func(root string), tune func(*Options)) (*Instance, *script.Provider) {
	t.Helper()
	root := t.TempDir()
	if _, err := Init(context.Background(), root); err != nil {
		t.Fatal(err)
	}
	if prepare != nil {
		prepare(root)
	}
	var p *script.Provider
	opts := Options{Model: "scripted", Now: newClock().now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if scriptFile != "" {
		s, err := script.Load(filepath.Join("testdata", scriptFile))
		if err != nil {
			t.Fatal(err)
		}
		p = script.New(s)
		opts.Client = &llm.Client{Provider: p}
	}
	if tune != nil {
		tune(&opts)
	}
	in, err := Open(root, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close() })
	return in, p
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func state(values []Value, goals []Goal) func(string) {
	return func(root string) {
		data, _ := json.Marshal(values)
		os.WriteFile(filepath.Join(root, "data", "values.json"), data, 0o644)
		if goals != nil {
			data, _ = json.Marshal(goals)
			os.WriteFile(filepath.Join(root, "data", "goals", "2026.json"), data, 0o644)
		}
	}
}

func list(t *testing.T, in *Instance, f memory.Filter) []memory.Entry {
	t.Helper()
	es, err := in.Memory().List(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	return es
}

func byAuthor(t *testing.T, in *Instance, author string) []memory.Entry {
	return list(t, in, memory.Filter{Authors: []string{author}})
}

func stepsOf(es []memory.Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Step)
	}
	return out
}

func find(es []memory.Entry, contains string) *memory.Entry {
	for i := range es {
		if strings.Contains(es[i].Description, contains) {
			return &es[i]
		}
	}
	return nil
}

func allUsed(t *testing.T, p *script.Provider) {
	t.Helper()
	if p.Remaining() != 0 {
		t.Errorf("%d script entries unused: the kernel made fewer LLM calls than the scenario needs", p.Remaining())
	}
}

// requestFor finds the request sent for a step, by its prompt marker.
func requestFor(p *script.Provider, step string, nth int) *llm.Request {
	n := 0
	for _, r := range p.Requests() {
		var sys []string
		for _, b := range r.System {
			sys = append(sys, b.Text)
		}
		if strings.Contains(strings.Join(sys, "\n"), "step: "+step) {
			if n == nth {
				return r
			}
			n++
		}
	}
	return nil
}

func dataOf(t *testing.T, e memory.Entry) map[string]any {
	t.Helper()
	var d map[string]any
	if err := json.Unmarshal(e.Data, &d); err != nil {
		t.Fatalf("memory %s data: %v", e.ID, err)
	}
	return d
}

// appendUnindexed appends m to its day file under root as a writer killed
// before it indexed the line leaves it.
func appendUnindexed(t testing.TB, root string, m memory.Memory) {
	t.Helper()
	m.ID = memory.NewID(m.Timestamp)
	line, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	day := memory.Day(m.Timestamp)
	path := filepath.Join(root, "data", "memory", day[:4], day+".jsonl")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(append(line, '\n')); err != nil {
		t.Fatal(err)
	}
}

// indexCurrent reports whether a read-only open of root finds the memory
// index on disk up to date, as a view (lumen status) would.
func indexCurrent(t *testing.T, root string) bool {
	t.Helper()
	ro, err := Open(root, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	st, err := ro.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st.Index == "on disk"
}
