package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// seedLines are memory lines as the kernel, a person and a killed writer
// leave them: the fuzzers start from these.
var seedLines = []string{
	`{"id":"01JKZ8Q1W2X3Y4Z5A6B7C8D9E0","timestamp":"2026-02-14T09:30:00Z","author":"external","weight":0.8,"situation":"chat","description":"hello"}`,
	`{"timestamp":"2026-02-14T09:31:00Z","author":"self","weight":0.7,"situation":"","description":"a line from before ids"}`,
	`{"id":"01JKZ8Q1W2X3Y4Z5A6B7C8D9E1","timestamp":"2026-02-14T09:32:00Z","author":"kernel","weight":0.3,"situation":"action loop","description":"THINK","step":"think","used":["01JKZ8Q1W2X3Y4Z5A6B7C8D9E0","2026-02-14@0"],"judged":{"01JKZ8Q1W2X3Y4Z5A6B7C8D9E0":0.9},"model":"anthropic/claude","usage":{"calls":1,"input_tokens":1000,"output_tokens":100,"cost_usd":0.01},"data":{"goal":"learn Go"}}`,
	`{"id":"01JKZ8Q1W2X3Y4Z5A6B7C8D9E2","timestamp":"2026-02-14T15:32:00Z","author":"kernel","weight":0.3,"situation":"maintenance","description":"MAINTAIN","step":"maintain","decay":{"half_life_hours":168}}`,
	`{"id":"01JKZ8Q1W2X3Y4Z5A6B7C8D9E3","timestamp":"2026-02-14T16:00:00Z","author":"kernel","weight":0.3,"situation":"maintenance","description":"MIGRATE","step":"migrate","data":{"day":"2026-02-14","aliases":{"2026-02-14@0":"01JKZ8Q1W2X3Y4Z5A6B7C8D9E0"}}}`,
	`{"timestamp":"2026-02-14T09:31:00Z","au`,
	`{"id":"01JKZ8Q1W2X3Y4Z5A6B7C8D9E0","timestamp":"2026-02-14T09:33:00Z","author":"goal","weight":0.6,"situation":"","description":"repeats an id","data":{"goal":"learn Go"}}`,
}

// FuzzDecodeLine: any line either fails to decode, or decodes to a valid
// memory that encodes and decodes to the same memory again.
func FuzzDecodeLine(f *testing.F) {
	for _, l := range seedLines {
		f.Add([]byte(l))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := decode(line)
		if err != nil {
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("decode accepted an invalid memory: %v", err)
		}
		again, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("a decoded memory does not encode: %v", err)
		}
		back, err := decode(again)
		if err != nil {
			t.Fatalf("a decoded memory does not decode once encoded: %v\n%s", err, again)
		}
		if back.ID != m.ID || back.Author != m.Author || back.Description != m.Description || back.Weight != m.Weight || !back.Timestamp.Equal(m.Timestamp) {
			t.Fatalf("round trip changed the memory:\n%+v\n%+v", m, back)
		}
	})
}

// FuzzIngestLines: whatever a day file holds between two good lines (lines
// from another tool, a hand edit, a torn write), the index reads the file
// without failing, keeps both good lines, gives every memory a weight
// within 0..1, and reads the same memories with the same weights whether
// it read the file as it grew or all at once.
func FuzzIngestLines(f *testing.F) {
	for _, l := range seedLines {
		f.Add([]byte(l))
	}
	f.Add([]byte(seedLines[2] + "\n" + seedLines[3] + "\n" + seedLines[6]))
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	first := `{"id":"01JKZ8Q1W2X3Y4Z5A6B7C8D9EA","timestamp":"2026-02-14T08:00:00Z","author":"external","weight":0.5,"situation":"","description":"the first good line"}` + "\n"
	last := `{"id":"01JKZ8Q1W2X3Y4Z5A6B7C8D9EZ","timestamp":"2026-02-14T23:00:00Z","author":"self","weight":0.5,"situation":"","description":"the last good line","used":["01JKZ8Q1W2X3Y4Z5A6B7C8D9EA"]}` + "\n"
	f.Fuzz(func(t *testing.T, middle []byte) {
		ctx := context.Background()
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Dir(dayFile(dir)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dayFile(dir), []byte(first), 0o644); err != nil {
			t.Fatal(err)
		}
		grown, err := Open(dir, filepath.Join(t.TempDir(), "index.db"), Options{Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		defer grown.Close()
		if err := grown.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		file, err := os.OpenFile(dayFile(dir), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := file.Write(append(append(append([]byte{}, middle...), '\n'), last...)); err != nil {
			t.Fatal(err)
		}
		file.Close()
		incremental := entries(t, grown)
		whole, err := Open(dir, filepath.Join(t.TempDir(), "index.db"), Options{Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		defer whole.Close()
		atOnce := entries(t, whole)
		var good int
		for _, e := range atOnce {
			if e.ID == "01JKZ8Q1W2X3Y4Z5A6B7C8D9EA" || e.ID == "01JKZ8Q1W2X3Y4Z5A6B7C8D9EZ" {
				good++
			}
			if math.IsNaN(e.Current) || e.Current < 0 || e.Current > 1 {
				t.Fatalf("memory %s has weight %v", e.ID, e.Current)
			}
		}
		if good != 2 {
			t.Fatalf("the good lines around the fuzzed ones were not both read: %+v", atOnce)
		}
		if len(incremental) != len(atOnce) {
			t.Fatalf("read as it grew: %d memories; at once: %d", len(incremental), len(atOnce))
		}
		for i := range atOnce {
			a, b := incremental[i], atOnce[i]
			if a.ID != b.ID || math.Abs(a.Current-b.Current) > 1e-9 || !bytes.Equal(a.Data, b.Data) {
				t.Fatalf("memory %d read as it grew: %s %v; at once: %s %v", i, a.ID, a.Current, b.ID, b.Current)
			}
		}
	})
}

func entries(t *testing.T, s *Store) []Entry {
	t.Helper()
	es, err := s.List(context.Background(), Filter{})
	if err != nil {
		t.Fatalf("the index cannot read the file: %v", err)
	}
	return es
}
