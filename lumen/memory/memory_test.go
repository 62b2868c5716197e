package memory

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	appendHelperEnv   = "LUMEN_MEMORY_APPEND_HELPER"
	readOnlyHelperEnv = "LUMEN_MEMORY_READ_ONLY" // "root,index": readOnlyCheck as another user
)

// TestMain lets the test binary double as the appender process of
// TestTwoProcessesAppendingKeepEveryLineIntact.
func TestMain(m *testing.M) {
	if spec := os.Getenv(appendHelperEnv); spec != "" {
		os.Exit(appendHelper(spec))
	}
	if spec := os.Getenv(readOnlyHelperEnv); spec != "" {
		root, index, _ := strings.Cut(spec, ",")
		if err := readOnlyCheck(root, index); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	cleanupFixture()
	if agedFixture.dir != "" {
		os.RemoveAll(agedFixture.dir)
	}
	os.Exit(code)
}

// appendHelper appends count memories as writer: spec is "dir,writer,count".
func appendHelper(spec string) int {
	parts := strings.Split(spec, ",")
	if len(parts) != 3 {
		fmt.Fprintln(os.Stderr, "helper spec must be dir,writer,count:", spec)
		return 2
	}
	count, err := strconv.Atoi(parts[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	// A long description makes a torn or interleaved write visible.
	filler := strings.Repeat(parts[1], 300)
	for i := 0; i < count; i++ {
		data, _ := json.Marshal(map[string]any{"writer": parts[1], "n": i})
		_, err := appendLine(parts[0], Memory{Timestamp: time.Now(), Author: Kernel, Weight: 0.3,
			Situation: "load test", Description: filler, Data: data})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}

func TestTwoProcessesAppendingKeepEveryLineIntact(t *testing.T) {
	dir := t.TempDir()
	const each = 10_000
	var cmds []*exec.Cmd
	for _, w := range []string{"a", "b"} {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s,%s,%d", appendHelperEnv, dir, w, each))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if stderr.Len() > 0 {
				t.Logf("helper %s stderr: %s", w, stderr.String())
			}
		})
		cmds = append(cmds, cmd)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("helper process failed: %v", err)
		}
	}
	days, err := dayFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	next := map[string]int{}
	lines := 0
	for _, day := range days {
		f, err := os.Open(dayPath(dir, day))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 4096), 1<<20)
		for sc.Scan() {
			lines++
			m, err := decode(sc.Bytes())
			if err != nil {
				t.Fatalf("line %d of %s is not an intact memory: %v: %.80q", lines, day, err, sc.Text())
			}
			var d struct {
				Writer string `json:"writer"`
				N      int    `json:"n"`
			}
			if err := json.Unmarshal(m.Data, &d); err != nil {
				t.Fatal(err)
			}
			if m.Description != strings.Repeat(d.Writer, 300) {
				t.Fatalf("line %d: description of writer %s was mixed with another line", lines, d.Writer)
			}
			if d.N != next[d.Writer] {
				t.Fatalf("writer %s: line %d holds memory %d, want %d (lost or reordered)", d.Writer, lines, d.N, next[d.Writer])
			}
			next[d.Writer]++
		}
		f.Close()
	}
	if lines != 2*each || next["a"] != each || next["b"] != each {
		t.Fatalf("got %d lines (a: %d, b: %d), want %d", lines, next["a"], next["b"], 2*each)
	}
	s := openStore(t, dir, Options{})
	n, err := s.Count(context.Background(), Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if n != 2*each {
		t.Fatalf("index holds %d memories, want %d", n, 2*each)
	}
}

func openStore(t testing.TB, dir string, opts Options) *Store {
	t.Helper()
	s, err := Open(dir, filepath.Join(t.TempDir(), "index.db"), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

var t0 = time.Date(2026, 2, 14, 9, 30, 0, 0, time.UTC)

func TestAppendWritesTheSpecFieldsToTheDayFile(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, Options{})
	id, err := s.Append(Memory{Timestamp: t0, Author: External, Weight: 0.8, Situation: "chat", Description: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	if len(id) != 26 || !strings.HasPrefix(id, NewID(t0)[:10]) {
		t.Errorf("id = %q, want a ULID whose time part is the memory's timestamp", id)
	}
	data, err := os.ReadFile(filepath.Join(dir, "2026", "2026-02-14.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal(data, &fields); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"id": id, "timestamp": "2026-02-14T09:30:00Z", "author": "external", "weight": 0.8, "situation": "chat", "description": "hello"}
	for k, v := range want {
		if fields[k] != v {
			t.Errorf("%s = %v, want %v", k, fields[k], v)
		}
	}
	if len(fields) != len(want) {
		t.Errorf("line has fields %v, want the id and the spec's five when nothing else is set", fields)
	}
	id2, _ := s.Append(Memory{Timestamp: t0, Author: Self, Weight: 0.5, Description: "second"})
	if id2 == id || len(id2) != 26 {
		t.Errorf("second id = %q, want another ULID", id2)
	}
}

func TestAppendRefusesInvalidMemories(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	for _, m := range []Memory{
		{Author: "robot", Weight: 0.5, Description: "x"},
		{Author: Self, Weight: 1.5, Description: "x"},
		{Author: Self, Weight: 0.5, Description: "  "},
	} {
		if _, err := s.Append(m); err == nil {
			t.Errorf("Append(%+v) succeeded, want an error", m)
		}
	}
}

func TestTornLineFromAKilledWriterIsSkippedAndLosesNothing(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, Options{})
	if _, err := s.Append(Memory{Timestamp: t0, Author: Self, Weight: 0.5, Description: "before"}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "2026", "2026-02-14.jsonl")
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"timestamp":"2026-02-14T09:31:00Z","author":"self","wei`) // killed mid-write
	f.Close()
	if _, err := s.Append(Memory{Timestamp: t0.Add(time.Minute), Author: Self, Weight: 0.5, Description: "after"}); err != nil {
		t.Fatal(err)
	}
	got, err := s.List(context.Background(), Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Description != "before" || got[1].Description != "after" {
		t.Fatalf("got %+v, want the two whole memories around the torn line", got)
	}
}

func TestSyncReadsLinesAnotherProcessAppended(t *testing.T) {
	dir := t.TempDir()
	a := openStore(t, dir, Options{})
	b := openStore(t, dir, Options{}) // another process: its own index handle
	ctx := context.Background()
	if _, err := a.Count(ctx, Filter{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Append(Memory{Timestamp: t0, Author: External, Weight: 0.8, Description: "from b"}); err != nil {
		t.Fatal(err)
	}
	got, err := a.List(ctx, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Description != "from b" {
		t.Fatalf("a sees %+v, want b's memory", got)
	}
}

func TestUseStrengthensDecayFadesAndHistoryIsNeverRewritten(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := openStore(t, dir, Options{})
	m1, _ := s.Append(Memory{Timestamp: t0, Author: External, Weight: 0.5, Description: "the user likes tea"})
	m2, _ := s.Append(Memory{Timestamp: t0, Author: External, Weight: 0.5, Description: "the user likes rain"})
	path := filepath.Join(dir, "2026", "2026-02-14.jsonl")
	before, _ := os.ReadFile(path)
	// A step uses m1 an hour later; a week after that, maintenance decays.
	s.Append(Memory{Timestamp: t0.Add(time.Hour), Author: Kernel, Weight: 0.3, Step: "think", Description: "loaded", Used: []string{m1}})
	s.Append(Memory{Timestamp: t0.Add(time.Hour + 168*time.Hour), Author: Kernel, Weight: 0.3, Step: "maintain",
		Description: "decay", Decay: &Decay{HalfLifeHours: 168}})
	got, err := s.Get(ctx, m1, m2)
	if err != nil {
		t.Fatal(err)
	}
	// m1: 0.5 + 0.05 = 0.55, idle one half-life → 0.275.
	// m2: never used, idle 169 hours → 0.5 × 0.5^(169/168).
	want2 := 0.5 * math.Pow(0.5, 169.0/168)
	if math.Abs(got[0].Current-0.275) > 1e-9 || math.Abs(got[1].Current-want2) > 1e-9 {
		t.Fatalf("weights = %v, %v; want 0.275, %v", got[0].Current, got[1].Current, want2)
	}
	if got[0].Weight != 0.5 {
		t.Errorf("written weight = %v, want 0.5 kept", got[0].Weight)
	}
	after, _ := os.ReadFile(path)
	if !bytes.HasPrefix(after, before) {
		t.Fatal("the day file's earlier bytes changed: history was rewritten")
	}
	// The index is derived: rebuilt from the files, it holds the same weights.
	if err := s.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	again, _ := s.Get(ctx, m1, m2)
	if again[0].Current != got[0].Current || again[1].Current != got[1].Current {
		t.Fatalf("after rebuild weights = %v, %v; want %v, %v", again[0].Current, again[1].Current, got[0].Current, got[1].Current)
	}
	// A second pass decays only the idle time since the first.
	s.Append(Memory{Timestamp: t0.Add(time.Hour + 2*168*time.Hour), Author: Kernel, Weight: 0.3, Step: "maintain",
		Description: "decay", Decay: &Decay{HalfLifeHours: 168}})
	third, _ := s.Get(ctx, m1)
	if math.Abs(third[0].Current-0.1375) > 1e-9 {
		t.Fatalf("after a second pass m1 = %v, want 0.1375", third[0].Current)
	}
}

func TestRetrieveUnitesRecentAndRelevantWithoutDuplicates(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := openStore(t, dir, Options{})
	old, _ := s.Append(Memory{Timestamp: t0, Author: External, Weight: 0.9, Description: "my cat is named Miso"})
	for i := 0; i < 10; i++ {
		s.Append(Memory{Timestamp: t0.Add(time.Duration(i+1) * time.Minute), Author: Self, Weight: 0.5, Description: fmt.Sprintf("thought number %d", i)})
	}
	kernelNote, _ := s.Append(Memory{Timestamp: t0.Add(time.Hour), Author: Kernel, Weight: 0.3, Description: "kernel step about the cat Miso"})
	last, _ := s.Append(Memory{Timestamp: t0.Add(2 * time.Hour), Author: External, Weight: 0.8, Description: "what is my cat called?"})

	r, err := s.Retrieve(ctx, Query{Text: "what is my cat called?", Recent: 3, TopK: 2, Authors: []string{Self, Goal, External}})
	if err != nil {
		t.Fatal(err)
	}
	ids := r.IDs()
	if len(ids) != 4 {
		t.Fatalf("got %d memories %v, want 3 recent + 1 older relevant (the recent relevant one deduplicated)", len(ids), ids)
	}
	if ids[0] != old || ids[3] != last {
		t.Errorf("ids = %v, want the old cat memory first and the latest question last", ids)
	}
	for _, id := range ids {
		if id == kernelNote {
			t.Errorf("kernel memory %s returned though authors exclude kernel", id)
		}
	}
	if r.Mode != ModeFullText {
		t.Errorf("mode = %q", r.Mode)
	}
}

func TestRetrieveRanksByEmbeddingsWhenAnEndpointIsSet(t *testing.T) {
	// A fake endpoint: texts mentioning "cat" point one way, others another.
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/embeddings" || r.Header.Get("Authorization") != "Bearer k" {
			http.Error(w, "bad request "+r.URL.Path, http.StatusBadRequest)
			return
		}
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		mu.Lock()
		seen = append(seen, req.Input...)
		mu.Unlock()
		type item struct {
			Index     int       `json:"index"`
			Embedding []float64 `json:"embedding"`
		}
		var data []item
		for i, in := range req.Input {
			v := []float64{0, 1}
			if strings.Contains(strings.ToLower(in), "cat") || strings.Contains(in, "feline") {
				v = []float64{1, 0}
			}
			data = append(data, item{i, v})
		}
		json.NewEncoder(w).Encode(map[string]any{"data": data})
	}))
	defer srv.Close()
	dir := t.TempDir()
	ctx := context.Background()
	s := openStore(t, dir, Options{Embedder: &Embedder{URL: srv.URL + "/v1", Model: "m", Key: "k"}})
	catID, _ := s.Append(Memory{Timestamp: t0, Author: External, Weight: 0.9, Description: "my cat is named Miso"})
	for i := 0; i < 5; i++ {
		s.Append(Memory{Timestamp: t0.Add(time.Duration(i+1) * time.Minute), Author: Self, Weight: 0.9, Description: fmt.Sprintf("weather note %d", i)})
	}
	// No shared word with the cat memory: only the embedding can find it.
	r, err := s.Retrieve(ctx, Query{Text: "tell me about the feline", Recent: 1, TopK: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Relevant) != 1 || r.Relevant[0].ID != catID {
		t.Fatalf("relevant = %v, want the cat memory %s", r.Relevant, catID)
	}
	if !strings.HasPrefix(r.Mode, ModeEmbeddings) {
		t.Errorf("mode = %q, want embeddings", r.Mode)
	}
	// Vectors are cached: a second retrieval embeds only the query.
	mu.Lock()
	n := len(seen)
	mu.Unlock()
	if _, err := s.Retrieve(ctx, Query{Text: "cat", TopK: 1}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != n+1 {
		t.Errorf("second retrieval sent %d texts, want 1 (the query)", len(seen)-n)
	}
}

func TestEmbeddingEndpointErrorsSayWhatToCheck(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":"model not found"}`, http.StatusNotFound)
	}))
	defer srv.Close()
	e := &Embedder{URL: srv.URL, Model: "nope"}
	_, err := e.Embed(context.Background(), []string{"x"})
	if err == nil || !strings.Contains(err.Error(), "HTTP 404") || !strings.Contains(err.Error(), `model "nope"`) {
		t.Fatalf("err = %v, want the status and what to check", err)
	}
}

func TestRolledBackFilesRebuildTheIndex(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := openStore(t, dir, Options{})
	s.Append(Memory{Timestamp: t0, Author: Self, Weight: 0.5, Description: "kept"})
	path := filepath.Join(dir, "2026", "2026-02-14.jsonl")
	kept, _ := os.ReadFile(path)
	s.Append(Memory{Timestamp: t0, Author: Self, Weight: 0.5, Description: "rolled back"})
	s.Append(Memory{Timestamp: t0.Add(24 * time.Hour), Author: Self, Weight: 0.5, Description: "next day, rolled back"})
	if n, _ := s.Count(ctx, Filter{}); n != 3 {
		t.Fatalf("indexed %d, want 3", n)
	}
	// git checkout of an older commit: the day file shrinks, the next one goes.
	os.WriteFile(path, kept, 0o644)
	os.Remove(filepath.Join(dir, "2026", "2026-02-15.jsonl"))
	got, err := s.List(ctx, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Description != "kept" {
		t.Fatalf("after the rollback the index holds %+v, want only the kept memory", got)
	}
}

// A day file that is not JSON (a binary file, a file of notes) is
// skipped with one warning saying how many lines, not one per line.
func TestADayFileThatIsNotJSONWarnsOnce(t *testing.T) {
	dir := t.TempDir()
	var logs bytes.Buffer
	s := openStore(t, dir, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	s.Append(Memory{Timestamp: t0, Author: Self, Weight: 0.5, Description: "a real memory"})
	garbage := filepath.Join(dir, "2026", "2026-03-01.jsonl")
	var b strings.Builder
	for i := 0; i < 100; i++ {
		fmt.Fprintf(&b, "note %d: not a memory\x1b[2J\n", i)
	}
	os.WriteFile(garbage, []byte(b.String()), 0o644)
	if n, err := s.Count(context.Background(), Filter{}); err != nil || n != 1 {
		t.Fatalf("count = %d, %v", n, err)
	}
	if n := strings.Count(logs.String(), "malformed"); n != 1 || !strings.Contains(logs.String(), "lines=100") {
		t.Fatalf("%d warnings, want one counting the 100 lines:\n%s", n, logs.String())
	}
}

func TestTheQuestionsOwnMemoryIsNoCandidateForRelevance(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, t.TempDir(), Options{})
	fact, _ := s.Append(Memory{Timestamp: t0, Author: External, Weight: 0.5, Description: "I play chess with my uncle at the library"})
	for i := 0; i < 9; i++ {
		s.Append(Memory{Timestamp: t0.Add(time.Duration(i+1) * time.Hour), Author: External, Weight: 0.9,
			Description: fmt.Sprintf("Jordan says: the library %d opens late", i)})
	}
	ask := "what do I play with my uncle at the library?"
	question, _ := s.Append(Memory{Timestamp: t0.Add(10 * time.Hour), Author: External, Weight: 0.8, Description: ask})
	r, err := s.Retrieve(ctx, Query{Text: ask, TopK: 3, Now: t0.Add(10 * time.Hour), Exclude: []string{question}})
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range r.Relevant {
		t.Logf("%.2f rel %.2f imp %.2f %s", sc.Score, sc.Relevance, sc.Importance, sc.Description)
	}
	if containsID(r.Relevant, question) {
		t.Errorf("the question's own memory came back as relevant to itself")
	}
	if len(r.Relevant) == 0 || r.Relevant[0].ID != fact || r.Relevant[0].Relevance != 1 {
		t.Fatalf("the fact %s is not first with relevance 1", fact)
	}
}
