package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Two memories that score the same (same words, weight and time) are
// ranked newest first: the later one is what the person said last.
func TestEqualScoresRankTheNewerMemoryFirst(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, t.TempDir(), Options{})
	older, _ := s.Append(Memory{Timestamp: t0, Author: External, Weight: 0.5, Description: "the blue kite is in the shed"})
	newer, _ := s.Append(Memory{Timestamp: t0, Author: External, Weight: 0.5, Description: "the blue kite is in the shed"})
	for _, k := range []int{1, 2} {
		r, err := s.Retrieve(ctx, Query{Text: "where is the blue kite", TopK: k, Now: t0})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Relevant) != k || r.Relevant[0].ID != newer {
			t.Fatalf("top %d = %v; want the newer memory %s first (the older is %s)", k, scoredIDs(r.Relevant), newer, older)
		}
		if k == 2 && (r.Relevant[0].Score != r.Relevant[1].Score || r.Relevant[1].ID != older) {
			t.Fatalf("the two memories score %v and %v: not a tie, or the older is missing", r.Relevant[0].Score, r.Relevant[1].Score)
		}
	}
}

// A query keeps its rarest words while the memories they occur in add up
// to maxPostings, and always its rarest one: a word that is everywhere
// still finds memories when it is all the query has, and does not crowd
// out the rare word that names what is asked.
func TestAQueryKeepsItsRarestWordsAndAlwaysTheRarest(t *testing.T) {
	if testing.Short() {
		t.Skip("indexes more memories than one query may read")
	}
	ctx := context.Background()
	dir := t.TempDir()
	var lines bytes.Buffer
	for i := range maxPostings + 1 {
		line, _ := json.Marshal(Memory{ID: NewID(t0), Timestamp: t0.Add(time.Duration(i) * time.Millisecond), Author: Self, Weight: 0.5,
			Description: fmt.Sprintf("apple note %d", i)})
		lines.Write(append(line, '\n'))
	}
	rare, _ := json.Marshal(Memory{ID: NewID(t0), Timestamp: t0.Add(time.Hour), Author: Self, Weight: 0.5, Description: "the zebra escaped"})
	lines.Write(append(rare, '\n'))
	if err := os.MkdirAll(filepath.Dir(dayFile(dir)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dayFile(dir), lines.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, dir, Options{})
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	match, err := s.ftsQuery(ctx, "apple")
	if err != nil || match != `"apple"` {
		t.Fatalf("a query of one word in %d memories: %q, %v; want the word kept", maxPostings+1, match, err)
	}
	r, err := s.Retrieve(ctx, Query{Text: "apple", TopK: 3, Now: t0.Add(time.Hour)})
	if err != nil || len(r.Relevant) != 3 {
		t.Fatalf("retrieving by a word that is everywhere: %d memories, %v; want 3", len(r.Relevant), err)
	}

	match, err = s.ftsQuery(ctx, "apple zebra")
	if err != nil || !strings.Contains(match, `"zebra"`) || strings.Contains(strings.ReplaceAll(match, `"apple zebra"`, ""), `"apple"`) {
		t.Fatalf("query %q, %v: want the rare word, and not the one in %d memories that would pass the bound", match, err, maxPostings+1)
	}
	r, err = s.Retrieve(ctx, Query{Text: "apple zebra", TopK: 1, Now: t0.Add(time.Hour)})
	if err != nil || len(r.Relevant) != 1 || r.Relevant[0].Description != "the zebra escaped" {
		t.Fatalf("retrieving by a rare and a common word: %v, %v; want the zebra", r.Relevant, err)
	}
}

// A line that repeats another line's id (a copy pasted by hand, a file
// restored beside itself) loses nothing: the first keeps the id, the
// repeat is indexed under an id derived from its content, the same at
// every rebuild, and a warning says so. This holds within one read of the
// files and for a repeat appended after the first was indexed.
func TestALineRepeatingAnotherIDIsKeptUnderADerivedID(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var logs bytes.Buffer
	s := openStore(t, dir, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	id, err := s.Append(Memory{Timestamp: t0, Author: External, Weight: 0.5, Description: "first of the name"})
	if err != nil {
		t.Fatal(err)
	}
	repeat := func(desc string, at time.Time) {
		t.Helper()
		line, _ := json.Marshal(Memory{ID: id, Timestamp: at, Author: Self, Weight: 0.5, Description: desc})
		f, err := os.OpenFile(dayFile(dir), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.Write(append(line, '\n')); err != nil {
			t.Fatal(err)
		}
	}
	repeat("second under the same id", t0.Add(time.Minute)) // after the first was indexed
	check := func(s *Store, when string) []string {
		t.Helper()
		es, err := s.List(ctx, Filter{})
		if err != nil || len(es) != 2 {
			t.Fatalf("%s: %d memories, %v; want both lines", when, len(es), err)
		}
		if es[0].ID != id || es[0].Description != "first of the name" {
			t.Fatalf("%s: the first line is %s %q; it keeps its id %s", when, es[0].ID, es[0].Description, id)
		}
		if es[1].ID == id || es[1].Description != "second under the same id" {
			t.Fatalf("%s: the repeat is %s %q; want its own id", when, es[1].ID, es[1].Description)
		}
		got, err := s.Get(ctx, id)
		if err != nil || len(got) != 1 || got[0].Description != "first of the name" {
			t.Fatalf("%s: Get(%s) = %v, %v; want the first line", when, id, got, err)
		}
		return []string{es[0].ID, es[1].ID}
	}
	incremental := check(s, "read incrementally")
	if !strings.Contains(logs.String(), "repeats another's id") {
		t.Errorf("no warning about the repeated id:\n%s", logs.String())
	}
	if err := s.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	rebuilt := check(s, "rebuilt")
	fresh := check(openStore(t, dir, Options{}), "read at once")
	if incremental[1] != rebuilt[1] || rebuilt[1] != fresh[1] {
		t.Errorf("the repeat's derived id changes: %v, %v, %v", incremental, rebuilt, fresh)
	}
}

func scoredIDs(ss []Scored) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.ID)
	}
	return out
}
