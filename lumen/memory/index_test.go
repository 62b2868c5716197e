package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

func dayFile(dir string) string { return filepath.Join(dir, "2026", "2026-02-14.jsonl") }

func TestIDsSurviveATornLineRemovedAndALineInserted(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := openStore(t, dir, Options{})
	a, _ := s.Append(Memory{Timestamp: t0, Author: External, Weight: 0.5, Description: "alpha"})
	f, _ := os.OpenFile(dayFile(dir), os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"timestamp":"2026-02-14T09:31:00Z","au`) // a writer killed mid-line
	f.Close()
	b, _ := s.Append(Memory{Timestamp: t0.Add(time.Minute), Author: External, Weight: 0.5, Description: "beta"})
	s.Append(Memory{Timestamp: t0.Add(2 * time.Minute), Author: Kernel, Weight: 0.3, Step: "think", Description: "used beta", Used: []string{b}})
	before, err := s.Get(ctx, b)
	if err != nil || len(before) != 1 || before[0].Current != 0.55 {
		t.Fatalf("beta = %+v, %v; want it strengthened to 0.55", before, err)
	}
	// The user removes the torn line and inserts a line of their own at
	// the top: every byte offset after it moves.
	data, _ := os.ReadFile(dayFile(dir))
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	var kept []string
	for _, l := range lines {
		if json.Valid([]byte(l)) {
			kept = append(kept, l)
		}
	}
	inserted := `{"timestamp":"2026-02-14T08:00:00Z","author":"self","weight":0.6,"situation":"","description":"a note I added by hand"}`
	os.WriteFile(dayFile(dir), []byte(inserted+"\n"+strings.Join(kept, "\n")+"\n"), 0o644)
	after, err := s.Get(ctx, a, b)
	if err != nil || len(after) != 2 || after[0].Description != "alpha" || after[1].Description != "beta" {
		t.Fatalf("after the edit Get(alpha, beta) = %+v, %v", after, err)
	}
	if after[1].Current != 0.55 || after[0].Current != 0.5 {
		t.Errorf("weights after the edit: alpha %v, beta %v; want 0.5 and 0.55 (the use still names beta)", after[0].Current, after[1].Current)
	}
	all, _ := s.List(ctx, Filter{})
	if len(all) != 4 || all[0].Description != "a note I added by hand" || len(all[0].ID) != 26 {
		t.Fatalf("memories = %+v, want the hand-added one first with a derived id", all)
	}
}

func TestASameLengthEditIsCaughtWithoutDeletingTheIndex(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := openStore(t, dir, Options{})
	id, _ := s.Append(Memory{Timestamp: t0, Author: Self, Weight: 0.5, Description: "I changed my values"})
	if es, _ := s.Get(ctx, id); es[0].Author != Self {
		t.Fatal("not indexed")
	}
	data, _ := os.ReadFile(dayFile(dir))
	edited := bytes.Replace(data, []byte(`"author":"self"`), []byte(`"author":"goal"`), 1)
	if len(edited) != len(data) || bytes.Equal(edited, data) {
		t.Fatal("the edit must keep the length")
	}
	st, _ := os.Stat(dayFile(dir))
	os.WriteFile(dayFile(dir), edited, 0o644)
	os.Chtimes(dayFile(dir), st.ModTime(), st.ModTime().Add(time.Nanosecond)) // even in the same clock tick
	es, err := s.Get(ctx, id)
	if err != nil || len(es) != 1 || es[0].Author != Goal {
		t.Fatalf("after a same-length edit the index says %+v, %v; want author goal", es, err)
	}
}

func TestAnEditInTheSameClockTickIsCaughtByTheNextCommand(t *testing.T) {
	dir := t.TempDir()
	index := filepath.Join(t.TempDir(), "index.db")
	ctx := context.Background()
	s, err := Open(dir, index, Options{})
	if err != nil {
		t.Fatal(err)
	}
	id, _ := s.Append(Memory{Timestamp: t0, Author: Self, Weight: 0.5, Description: "first"})
	st, _ := os.Stat(dayFile(dir))
	if _, err := s.Count(ctx, Filter{}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	// Same length, same modification time: only the hash can tell.
	data, _ := os.ReadFile(dayFile(dir))
	os.WriteFile(dayFile(dir), bytes.Replace(data, []byte("first"), []byte("FIRST"), 1), 0o644)
	os.Chtimes(dayFile(dir), st.ModTime(), st.ModTime())
	next, err := Open(dir, index, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	es, _ := next.Get(ctx, id)
	if len(es) != 1 || es[0].Description != "FIRST" {
		t.Fatalf("got %+v; a file modified within a second of being indexed must be hashed", es)
	}
}

func TestAGrowingFileIsReadFromWhereTheIndexStopped(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := openStore(t, dir, Options{})
	for i := 0; i < 200; i++ {
		s.Append(Memory{Timestamp: t0, Author: Self, Weight: 0.5, Description: strings.Repeat("padding ", 20)})
	}
	s.Count(ctx, Filter{})
	// Lines another process appended (Append would index them at once).
	appendLine(dir, Memory{Timestamp: t0, Author: Self, Weight: 0.5, Description: "one more"})
	p, err := s.check(ctx, s.db)
	if err != nil || len(p.appends) != 1 || p.appends[0].base == 0 || len(p.appends[0].data) > tailWindow+1000 {
		t.Fatalf("plan = %+v, %v; want only the new line and the last %d bytes read", p, err, tailWindow)
	}
	s.Count(ctx, Filter{})
	// An edit before the tail window, with a line appended after it, in
	// the same moment: the growth alone does not hide it for long, the
	// next whole-file check (another command, or reverify later) sees it.
	data, _ := os.ReadFile(dayFile(dir))
	edited := bytes.Replace(data, []byte("padding"), []byte("PADDING"), 1)
	os.WriteFile(dayFile(dir), edited, 0o644)
	appendLine(dir, Memory{Timestamp: t0, Author: Self, Weight: 0.5, Description: "and another"})
	s.verified = map[string]time.Time{} // as a new process would
	if p, _ := s.check(ctx, s.db); !strings.Contains(p.rebuild, "was edited") {
		t.Fatalf("plan = %+v, want the edit found by a whole-file check", p)
	}
	// An insertion moves the bytes of the tail window: caught at once.
	s.Count(ctx, Filter{})
	data, _ = os.ReadFile(dayFile(dir))
	os.WriteFile(dayFile(dir), append([]byte(`{"timestamp":"2026-02-14T08:00:00Z","author":"self","weight":0.5,"description":"inserted"}`+"\n"), data...), 0o644)
	if p, _ := s.check(ctx, s.db); !strings.Contains(p.rebuild, "was edited") {
		t.Fatalf("plan = %+v, want an insertion found by the tail window", p)
	}
}

func TestAppendsAreReadIncrementallyAndEditsRebuild(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := openStore(t, dir, Options{})
	s.Append(Memory{Timestamp: t0, Author: Self, Weight: 0.5, Description: "one"})
	s.Count(ctx, Filter{})
	p, err := s.check(ctx, s.db)
	if err != nil || !p.fresh() {
		t.Fatalf("plan after sync = %+v, %v; want nothing to do", p, err)
	}
	appendLine(dir, Memory{Timestamp: t0, Author: Self, Weight: 0.5, Description: "two"}) // by another process
	if p, _ := s.check(ctx, s.db); p.rebuild != "" || len(p.appends) != 1 {
		t.Fatalf("plan after an append = %+v, want one file read from where it stopped", p)
	}
	s.Count(ctx, Filter{})
	data, _ := os.ReadFile(dayFile(dir))
	os.WriteFile(dayFile(dir), bytes.Replace(data, []byte(`"one"`), []byte(`"uno"`), 1), 0o644)
	if p, _ := s.check(ctx, s.db); !strings.Contains(p.rebuild, "was edited") {
		t.Fatalf("plan after an edit = %+v, want a rebuild", p)
	}
}

// A line written before memories carried ids: the shape today's code wrote.
func legacyLine(ts time.Time, author, desc string, used ...string) string {
	m := map[string]any{"timestamp": ts.Format(time.RFC3339), "author": author, "weight": 0.5, "situation": "", "description": desc}
	if len(used) > 0 {
		m["used"] = used
	}
	data, _ := json.Marshal(m)
	return string(data) + "\n"
}

func TestLinesWithoutIDsGetStableIDsAndOldReferencesResolve(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	os.MkdirAll(filepath.Join(dir, "2026"), 0o755)
	first := legacyLine(t0, External, "hello")
	second := legacyLine(t0.Add(time.Minute), Self, "hello") // same text, another line
	third := legacyLine(t0.Add(2*time.Minute), Kernel, "used both", "2026-02-14@0", "2026-02-14@"+strconv.Itoa(len(first)))
	os.WriteFile(dayFile(dir), []byte(first+second+third), 0o644)
	s := openStore(t, dir, Options{})
	es, err := s.Get(ctx, "2026-02-14@0", "2026-02-14@"+strconv.Itoa(len(first)))
	if err != nil || len(es) != 2 || es[0].Author != External || es[1].Author != Self {
		t.Fatalf("old references resolve to %+v, %v", es, err)
	}
	if es[0].ID == es[1].ID || es[0].Current != 0.55 || es[1].Current != 0.55 {
		t.Fatalf("derived ids %s %s, weights %v %v: want two ids, both strengthened", es[0].ID, es[1].ID, es[0].Current, es[1].Current)
	}
	ids := []string{es[0].ID, es[1].ID}
	// The kernel pins the old references once (a migrate memory); then a
	// line inserted at the top moves every offset, and they still resolve.
	days, err := s.LegacyDays(ctx)
	if err != nil || len(days["2026-02-14"]) != 3 {
		t.Fatalf("legacy days = %v, %v", days, err)
	}
	data, _ := json.Marshal(map[string]any{"day": "2026-02-14", "aliases": days["2026-02-14"]})
	s.Append(Memory{Timestamp: t0.Add(time.Hour), Author: Kernel, Weight: 0.3, Step: "migrate", Description: "pinned", Data: data})
	if days, _ := s.LegacyDays(ctx); len(days) != 0 {
		t.Fatalf("after pinning, legacy days = %v", days)
	}
	cur, _ := os.ReadFile(dayFile(dir))
	os.WriteFile(dayFile(dir), append([]byte(legacyLine(t0.Add(-time.Hour), Self, "inserted by hand")), cur...), 0o644)
	es, err = s.Get(ctx, "2026-02-14@0", "2026-02-14@"+strconv.Itoa(len(first)))
	if err != nil || len(es) != 2 || es[0].ID != ids[0] || es[1].ID != ids[1] {
		t.Fatalf("after an insertion old references give %+v, %v; want the same two memories", es, err)
	}
	if es[0].Current != 0.55 || es[1].Current != 0.55 {
		t.Errorf("weights after the rebuild = %v, %v; the old uses must still count", es[0].Current, es[1].Current)
	}
}

func TestAMissingMemoryDirectoryIsRecreated(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "memory")
	s := openStore(t, dir, Options{})
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		t.Fatalf("memory directory not created: %v", err)
	}
	if n, err := s.Count(context.Background(), Filter{}); err != nil || n != 0 {
		t.Fatalf("count = %d, %v", n, err)
	}
	ro, err := Open(filepath.Join(t.TempDir(), "absent"), filepath.Join(t.TempDir(), "index.db"), Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if n, err := ro.Count(context.Background(), Filter{}); err != nil || n != 0 {
		t.Fatalf("read-only, absent directory: count = %d, %v; want an empty memory", n, err)
	}
}

func TestSpendPerDayAndGoalMarksComeFromTheLines(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := openStore(t, dir, Options{})
	s.Append(Memory{Timestamp: t0, Author: Kernel, Weight: 0.3, Description: "think", Usage: &Usage{Calls: 1, CostUSD: 0.25}})
	s.Append(Memory{Timestamp: t0.Add(time.Hour), Author: Kernel, Weight: 0.3, Description: "decide", Usage: &Usage{Calls: 2, CostUSD: 0.5}})
	s.Append(Memory{Timestamp: t0.Add(24 * time.Hour), Author: Kernel, Weight: 0.3, Description: "next day", Usage: &Usage{Calls: 1, CostUSD: 1}})
	g, _ := json.Marshal(map[string]string{"goal": "Learn Go"})
	s.Append(Memory{Timestamp: t0.Add(2 * time.Hour), Author: Goal, Weight: 0.6, Description: "pursue", Data: g})
	s.Append(Memory{Timestamp: t0.Add(3 * time.Hour), Author: Kernel, Weight: 0.3, Description: "status", Data: g})
	if v, err := s.Spend(ctx, "2026-02-14"); err != nil || v != 0.75 {
		t.Fatalf("spend = %v, %v; want 0.75", v, err)
	}
	marks, err := s.GoalMarks(ctx)
	m := marks["learn go"]
	if err != nil || !m.Pursued.Equal(t0.Add(2*time.Hour)) || m.TouchedSeq <= m.PursuedSeq {
		t.Fatalf("marks = %+v, %v", marks, err)
	}
}

// A day file from the future (a clock that ran ahead, then was set
// right): today's file then sorts before the last indexed day. Its new
// lines are read from where the index stopped, like any append, not by
// rebuilding the whole index at every read, and they are the most recent.
func TestLinesAppendedBeforeADayFromTheFutureAreReadIncrementally(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	var logs bytes.Buffer
	s := openStore(t, dir, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	s.Append(Memory{Timestamp: t0, Author: External, Weight: 0.5, Description: "today, before the clock jumped"})
	future := t0.Add(400 * 24 * time.Hour)
	s.Append(Memory{Timestamp: future, Author: Kernel, Weight: 0.3, Step: "maintain", Description: "a decay pass from the future", Decay: &Decay{HalfLifeHours: 168}})
	s.Count(ctx, Filter{})
	var ids []string
	for i := 0; i < 5; i++ {
		id, _ := appendLine(dir, Memory{Timestamp: t0.Add(time.Duration(i+1) * time.Minute), Author: External, Weight: 0.5, Description: fmt.Sprintf("after the clock was set right %d", i)})
		ids = append(ids, id)
		if p, err := s.check(ctx, s.db); err != nil || p.rebuild != "" || len(p.appends) != 1 {
			t.Fatalf("append %d: plan = %+v, %v; want the new line read incrementally", i, p, err)
		}
		recent, err := s.List(ctx, Filter{Limit: 1})
		if err != nil || len(recent) != 1 || recent[0].ID != id {
			t.Fatalf("append %d: most recent = %+v, %v; want the line just written", i, recent, err)
		}
	}
	if n := bytes.Count(logs.Bytes(), []byte("rebuilding")); n != 0 {
		t.Errorf("the index was rebuilt %d times:\n%s", n, logs.String())
	}
	if n, _ := s.Count(ctx, Filter{}); n != 7 {
		t.Errorf("%d memories indexed, want 7", n)
	}
}

// An edit that keeps a day file's size and puts its modification time
// back (touch -r, or an editor that preserves it) changes its inode change
// time, which no one can set: the index sees it, in the process running
// and in the next command, long after the file was indexed.
func TestAnEditKeepingSizeAndModificationTimeIsCaught(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no inode change time")
	}
	dir := t.TempDir()
	ctx := context.Background()
	s := openStore(t, dir, Options{})
	id, _ := s.Append(Memory{Timestamp: t0, Author: Self, Weight: 0.5, Description: "I chose honesty"})
	old := time.Now().Add(-time.Hour)
	os.Chtimes(dayFile(dir), old, old) // indexed long after it last changed
	if _, err := s.Count(ctx, Filter{}); err != nil {
		t.Fatal(err)
	}
	// As if the index had been checked a while later: size and times are
	// trusted now, and nothing reads the file.
	s.db.ExecContext(ctx, `UPDATE files SET checked = checked + ?`, int64(time.Minute))
	s.verified = map[string]time.Time{}
	if p, err := s.check(ctx, s.db); err != nil || !p.fresh() {
		t.Fatalf("plan = %+v, %v; want the file trusted", p, err)
	}
	data, _ := os.ReadFile(dayFile(dir))
	os.WriteFile(dayFile(dir), bytes.Replace(data, []byte("honesty"), []byte("flattery"[:7]), 1), 0o644)
	os.Chtimes(dayFile(dir), old, old)
	if st, _ := os.Stat(dayFile(dir)); st.Size() != int64(len(data)) || !st.ModTime().Equal(old) {
		t.Fatal("the edit must keep the size and the modification time")
	}
	es, err := s.Get(ctx, id)
	if err != nil || len(es) != 1 || es[0].Description != "I chose flatter" {
		t.Fatalf("the running process reads %+v, %v; want the edited line", es, err)
	}
}

// The index is derived: one damaged by a disk fault or a crashed copy is
// rebuilt from the files, by a command that writes as by one that only
// reads (in memory, then), not refused at every read for ever.
func TestADamagedIndexIsRebuiltFromTheFiles(t *testing.T) {
	dir := t.TempDir()
	index := filepath.Join(t.TempDir(), "index.db")
	ctx := context.Background()
	s, err := Open(dir, index, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 300; i++ {
		s.Append(Memory{Timestamp: t0.Add(time.Duration(i) * time.Second), Author: Self, Weight: 0.5, Description: fmt.Sprintf("memory number %d about gardens", i)})
	}
	if n, err := s.Count(ctx, Filter{}); err != nil || n != 300 {
		t.Fatalf("count = %d, %v", n, err)
	}
	s.Close()
	data, _ := os.ReadFile(index)
	for i := 4096; i < len(data); i++ { // every page but the first: the header says "lumen index"
		data[i] = byte(i * 7)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, readOnly := range []bool{true, false} {
		os.WriteFile(index, data, 0o644)
		s, err := Open(dir, index, Options{ReadOnly: readOnly, Logger: quiet})
		if err != nil {
			t.Fatalf("read-only %v: open: %v", readOnly, err)
		}
		es, err := s.List(ctx, Filter{})
		if err != nil || len(es) != 300 {
			t.Fatalf("read-only %v: list = %d memories, %v; want all 300", readOnly, len(es), err)
		}
		r, err := s.Retrieve(ctx, Query{Text: "gardens", TopK: 3, Recent: 2})
		if err != nil || len(r.Relevant) != 3 {
			t.Fatalf("read-only %v: retrieve = %+v, %v", readOnly, r, err)
		}
		s.Close()
	}
	// The writer rebuilt the file itself: it opens clean now.
	s, err = Open(dir, index, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n, err := s.Count(ctx, Filter{}); err != nil || n != 300 || s.InMemory() {
		t.Fatalf("after the rebuild: %d memories, %v, in memory %v", n, err, s.InMemory())
	}
}
