package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
)

func openTest(t testing.TB, opts Options) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "data", "hermitcrab.db")
	s, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

func mustPut(t *testing.T, s *Store, name, data string, expect int64) int64 {
	t.Helper()
	v, err := s.Put(context.Background(), name, []byte(data), expect)
	if err != nil {
		t.Fatalf("Put(%q, expect %d): %v", name, expect, err)
	}
	return v
}

func TestOpenSetsWALAndForeignKeys(t *testing.T) {
	s, _ := openTest(t, Options{})
	var mode string
	var fk int
	if err := s.db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if err := s.db.QueryRow(`PRAGMA foreign_keys`).Scan(&fk); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" || fk != 1 {
		t.Fatalf("journal_mode %q, foreign_keys %d; want wal, 1", mode, fk)
	}
}

func TestOpenCreatesFileAtPathWithURICharacters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a dir#1", "what?%20.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mustPut(t, s, "wake", `{}`, 0)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("store file not at %s: %v", path, err)
	}
}

func TestPutVersionsStartAtOneAndCountWrites(t *testing.T) {
	s, _ := openTest(t, Options{})
	ctx := context.Background()
	if v := mustPut(t, s, "purpose", `{"place":1,"tree":{"0":"a"}}`, 0); v != 1 {
		t.Fatalf("first write: version %d, want 1", v)
	}
	first, err := s.Block(ctx, "purpose")
	if err != nil {
		t.Fatal(err)
	}
	if v := mustPut(t, s, "purpose", `{"place":1,"tree":{"0":"b"}}`, 1); v != 2 {
		t.Fatalf("second write: version %d, want 2", v)
	}
	b, err := s.Block(ctx, "purpose")
	if err != nil {
		t.Fatal(err)
	}
	if b.Version != 2 || string(b.Data) != `{"place":1,"tree":{"0":"b"}}` || b.Name != "purpose" {
		t.Fatalf("got %+v", b)
	}
	if first.Updated.IsZero() || b.Updated.Before(first.Updated) {
		t.Fatalf("updated times: first %v, second %v", first.Updated, b.Updated)
	}
	if v := mustPut(t, s, "purpose", `{"x":1}`, AnyVersion); v != 3 {
		t.Fatalf("unconditional write: version %d, want 3", v)
	}
}

func TestPutConflictBetweenTwoWritersShowsCurrentVersionAndContent(t *testing.T) {
	s, _ := openTest(t, Options{})
	ctx := context.Background()
	mustPut(t, s, "stash", `{"note":"start"}`, 0)

	// Both writers read version 1.
	a, _ := s.Block(ctx, "stash")
	b, _ := s.Block(ctx, "stash")
	mustPut(t, s, "stash", `{"note":"from A"}`, a.Version)

	_, err := s.Put(ctx, "stash", []byte(`{"note":"from B"}`), b.Version)
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("second writer: err %v, want ErrConflict", err)
	}
	var ce *ConflictError
	if !errors.As(err, &ce) || ce.Current != 2 || ce.Expected != 1 || string(ce.Data) != `{"note":"from A"}` {
		t.Fatalf("conflict details: %+v", ce)
	}
	for _, want := range []string{`"stash"`, "version 1", "now version 2", `{"note":"from A"}`, "write again with version 2"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	got, _ := s.Block(ctx, "stash")
	if string(got.Data) != `{"note":"from A"}` || got.Version != 2 {
		t.Fatalf("B's refused write changed the block: %+v", got)
	}
}

func TestPutExpectZeroRefusesExistingBlock(t *testing.T) {
	s, _ := openTest(t, Options{})
	mustPut(t, s, "wake", `"one"`, 0)
	_, err := s.Put(context.Background(), "wake", []byte(`"two"`), 0)
	var ce *ConflictError
	if !errors.As(err, &ce) || ce.Current != 1 || !strings.Contains(err.Error(), "already exists") || !strings.Contains(err.Error(), `"one"`) {
		t.Fatalf("err %v", err)
	}
}

func TestPutAfterDeleteIsConflictSayingItWasDeleted(t *testing.T) {
	s, _ := openTest(t, Options{})
	ctx := context.Background()
	mustPut(t, s, "cook", `{}`, 0)
	if err := s.Delete(ctx, "cook", 1); err != nil {
		t.Fatal(err)
	}
	_, err := s.Put(ctx, "cook", []byte(`{}`), 1)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "no longer exists") {
		t.Fatalf("err %v", err)
	}
}

func TestPutRefusesExpectBelowAnyVersion(t *testing.T) {
	s, _ := openTest(t, Options{})
	if _, err := s.Put(context.Background(), "a", []byte(`{}`), -2); err == nil || !strings.Contains(err.Error(), "-2") {
		t.Fatalf("err %v", err)
	}
}

// Twenty goroutines each increment one counter five times by reading the
// block, adding one and writing with the version read, retrying on
// ErrConflict. If any write overwrote another, the total would be short.
func TestConcurrentReadModifyWriteLosesNoWrite(t *testing.T) {
	s, _ := openTest(t, Options{})
	ctx := context.Background()
	mustPut(t, s, "counter", `{"n":0}`, 0)
	const workers, each = 20, 5
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		conflicts int
		errs      []error
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				for {
					b, err := s.Block(ctx, "counter")
					if err != nil {
						mu.Lock()
						errs = append(errs, err)
						mu.Unlock()
						return
					}
					var c struct{ N int }
					if err := json.Unmarshal(b.Data, &c); err != nil {
						t.Error(err)
						return
					}
					_, err = s.Put(ctx, "counter", fmt.Appendf(nil, `{"n":%d}`, c.N+1), b.Version)
					if err == nil {
						break
					}
					mu.Lock()
					if errors.Is(err, ErrConflict) {
						conflicts++
						mu.Unlock()
						continue
					}
					errs = append(errs, err)
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("writers failed (they should queue, not fail): %v", errors.Join(errs...))
	}
	b, err := s.Block(ctx, "counter")
	if err != nil {
		t.Fatal(err)
	}
	if string(b.Data) != fmt.Sprintf(`{"n":%d}`, workers*each) || b.Version != workers*each+1 {
		t.Fatalf("counter %s at version %d; want n=%d at version %d", b.Data, b.Version, workers*each, workers*each+1)
	}
	t.Logf("%d conflicts retried", conflicts)
}

func TestBlockNotFoundListsExistingNames(t *testing.T) {
	s, _ := openTest(t, Options{})
	ctx := context.Background()
	_, err := s.Block(ctx, "purpose")
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "no blocks yet") {
		t.Fatalf("empty store: %v", err)
	}
	mustPut(t, s, "wake", `{}`, 0)
	mustPut(t, s, "cook", `{}`, 0)
	_, err = s.Block(ctx, "purpose")
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), `block "purpose" not found; blocks that exist: cook, wake`) {
		t.Fatalf("err %v", err)
	}
}

func TestValidName(t *testing.T) {
	good := []string{"a", "purpose", "0", "my-notes_2", strings.Repeat("x", 64)}
	for _, n := range good {
		if err := ValidName(n); err != nil {
			t.Errorf("ValidName(%q): %v", n, err)
		}
	}
	bad := map[string]string{
		"":                      "empty",
		strings.Repeat("x", 65): "65 characters",
		"Purpose":               `'P' at position 1`,
		"../etc":                `'.' at position 1`,
		"a/b":                   `'/' at position 2`,
		`a\b`:                   `'\\' at position 2`,
		"my notes":              `' ' at position 3`,
		"-x":                    `'-' at position 1`,
		"_x":                    `'_' at position 1`,
		"hc:purpose":            `':' at position 3`,
		"naïve":                 `'ï' at position 3`,
	}
	for n, want := range bad {
		err := ValidName(n)
		if err == nil {
			t.Errorf("ValidName(%q) accepted it", n)
			continue
		}
		if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "a-z, 0-9") {
			t.Errorf("ValidName(%q) = %q; want it to mention %q and the rule", n, err, want)
		}
	}
}

func TestWritePathsRefuseBadNames(t *testing.T) {
	s, _ := openTest(t, Options{})
	ctx := context.Background()
	if _, err := s.Put(ctx, "../evil", []byte(`{}`), AnyVersion); err == nil {
		t.Fatal("Put accepted ../evil")
	}
	if _, _, err := s.PutMany(ctx, map[string][]byte{"ok": []byte(`{}`), "a/b": []byte(`{}`)}, true); err == nil || !strings.Contains(err.Error(), `"a/b"`) {
		t.Fatalf("PutMany: %v", err)
	}
	if empty, _ := s.Empty(ctx); !empty {
		t.Fatal("a refused write left a block behind")
	}
}

func TestSizeLimitOnPut(t *testing.T) {
	s, _ := openTest(t, Options{MaxBlockBytes: 20})
	ctx := context.Background()
	at := `"` + strings.Repeat("a", 18) + `"` // exactly 20 bytes
	mustPut(t, s, "history", at, 0)
	_, err := s.Put(ctx, "history", []byte(`"`+strings.Repeat("a", 19)+`"`), 1)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err %v, want ErrTooLarge", err)
	}
	for _, want := range []string{`"history"`, "21 bytes", "limit of 20 bytes", "compress", "split"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	if b, _ := s.Block(ctx, "history"); string(b.Data) != at {
		t.Fatalf("refused write changed the block to %s", b.Data)
	}
}

func TestSizeLimitOnPutMany(t *testing.T) {
	s, _ := openTest(t, Options{MaxBlockBytes: 20})
	_, _, err := s.PutMany(context.Background(), map[string][]byte{
		"small": []byte(`{}`),
		"big":   []byte(`"` + strings.Repeat("b", 30) + `"`),
	}, false)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), `block "big" is 32 bytes, over the limit of 20 bytes`) {
		t.Fatalf("err %v", err)
	}
}

func TestDefaultSizeLimitIs64KiB(t *testing.T) {
	s, _ := openTest(t, Options{})
	big := []byte(`"` + strings.Repeat("x", 64<<10) + `"`)
	if _, err := s.Put(context.Background(), "big", big, 0); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "65536") {
		t.Fatalf("err %v", err)
	}
}

func TestOpenRefusesNegativeSizeLimit(t *testing.T) {
	if _, err := Open(filepath.Join(t.TempDir(), "x.db"), Options{MaxBlockBytes: -1}); err == nil {
		t.Fatal("accepted MaxBlockBytes -1")
	}
}

func TestInvalidJSONRefused(t *testing.T) {
	s, _ := openTest(t, Options{})
	ctx := context.Background()
	for _, data := range []string{``, `{"place":1,`, `{} {}`, `not json`} {
		_, err := s.Put(ctx, "purpose", []byte(data), AnyVersion)
		if err == nil || !strings.Contains(err.Error(), `block "purpose": not valid JSON`) {
			t.Errorf("Put(%q): %v", data, err)
		}
	}
	if _, _, err := s.PutMany(ctx, map[string][]byte{"purpose": []byte(`{`)}, true); err == nil || !strings.Contains(err.Error(), "not valid JSON") {
		t.Errorf("PutMany: %v", err)
	}
}

func TestPutManyIsAtomicAndReportsEveryFault(t *testing.T) {
	s, _ := openTest(t, Options{MaxBlockBytes: 100})
	ctx := context.Background()
	_, _, err := s.PutMany(ctx, map[string][]byte{
		"constitution": []byte(`{"place":1}`),
		"purpose":      []byte(`{"place":1}`),
		"stash":        []byte(`{broken`),
		"Bad":          []byte(`{}`),
	}, false)
	if err == nil {
		t.Fatal("PutMany accepted a broken block")
	}
	for _, want := range []string{"no blocks written", `block "stash": not valid JSON`, `block name "Bad"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	names, _ := s.Names(ctx)
	if len(names) != 0 {
		t.Fatalf("blocks written despite the error: %v", names)
	}
}

func TestPutManySkipsExistingUnlessReplace(t *testing.T) {
	s, _ := openTest(t, Options{})
	ctx := context.Background()
	mustPut(t, s, "wake", `"mine"`, 0)
	in := map[string][]byte{"wake": []byte(`"seed"`), "cook": []byte(`"seed"`), "stash": []byte(`"seed"`)}
	written, skipped, err := s.PutMany(ctx, in, false)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(written, []string{"cook", "stash"}) || !reflect.DeepEqual(skipped, []string{"wake"}) {
		t.Fatalf("written %v skipped %v", written, skipped)
	}
	if b, _ := s.Block(ctx, "wake"); string(b.Data) != `"mine"` || b.Version != 1 {
		t.Fatalf("skipped block changed: %+v", b)
	}
	written, skipped, err = s.PutMany(ctx, in, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(written) != 3 || len(skipped) != 0 {
		t.Fatalf("replace: written %v skipped %v", written, skipped)
	}
	if b, _ := s.Block(ctx, "wake"); string(b.Data) != `"seed"` || b.Version != 2 {
		t.Fatalf("replaced block: %+v", b)
	}
}

func TestBlocksNamesAndEmpty(t *testing.T) {
	s, _ := openTest(t, Options{})
	ctx := context.Background()
	if empty, err := s.Empty(ctx); err != nil || !empty {
		t.Fatalf("new store: empty %v, err %v", empty, err)
	}
	mustPut(t, s, "wake", `{"w":1}`, 0)
	mustPut(t, s, "constitution", `{"c":1}`, 0)
	if empty, _ := s.Empty(ctx); empty {
		t.Fatal("store with blocks reports empty")
	}
	names, _ := s.Names(ctx)
	if !reflect.DeepEqual(names, []string{"constitution", "wake"}) {
		t.Fatalf("names %v", names)
	}
	blocks, err := s.Blocks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 2 || blocks[0].Name != "constitution" || string(blocks[1].Data) != `{"w":1}` || blocks[1].Version != 1 {
		t.Fatalf("blocks %+v", blocks)
	}
}

func TestDeleteChecksVersion(t *testing.T) {
	s, _ := openTest(t, Options{})
	ctx := context.Background()
	mustPut(t, s, "stash", `"a"`, 0)
	mustPut(t, s, "stash", `"b"`, 1)
	err := s.Delete(ctx, "stash", 1)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "not deleted") || !strings.Contains(err.Error(), `"b"`) {
		t.Fatalf("stale delete: %v", err)
	}
	if err := s.Delete(ctx, "stash", 2); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "stash", AnyVersion); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleting a missing block: %v", err)
	}
}

func TestShellsAndStatuses(t *testing.T) {
	s, _ := openTest(t, Options{})
	ctx := context.Background()
	if _, err := s.LatestShell(ctx, ""); !errors.Is(err, ErrNotFound) {
		t.Fatalf("no shells yet: %v", err)
	}
	var ids []int64
	for i := 1; i <= 3; i++ {
		sh, err := s.AddShell(ctx, fmt.Sprintf("function App() { return %d }", i))
		if err != nil {
			t.Fatal(err)
		}
		if sh.Status != ShellBuilt || sh.Created.IsZero() {
			t.Fatalf("new shell %+v", sh)
		}
		ids = append(ids, sh.ID)
	}
	if err := s.SetShellStatus(ctx, ids[0], ShellRendered, ""); err != nil {
		t.Fatal(err)
	}
	if err := s.SetShellStatus(ctx, ids[1], ShellFailed, "ReferenceError: x is not defined"); err != nil {
		t.Fatal(err)
	}
	rendered, err := s.LatestShell(ctx, ShellRendered)
	if err != nil || rendered.ID != ids[0] || rendered.Source != "function App() { return 1 }" {
		t.Fatalf("latest rendered %+v, %v", rendered, err)
	}
	failed, _ := s.LatestShell(ctx, ShellFailed)
	if failed.ID != ids[1] || failed.Error != "ReferenceError: x is not defined" {
		t.Fatalf("latest failed %+v", failed)
	}
	latest, _ := s.LatestShell(ctx, "")
	if latest.ID != ids[2] || latest.Status != ShellBuilt {
		t.Fatalf("latest %+v", latest)
	}
	two, _ := s.Shells(ctx, 2)
	if len(two) != 2 || two[0].ID != ids[2] || two[1].ID != ids[1] {
		t.Fatalf("Shells(2) %+v", two)
	}
	all, _ := s.Shells(ctx, 0)
	if len(all) != 3 {
		t.Fatalf("Shells(0) gave %d", len(all))
	}
	if err := s.SetShellStatus(ctx, ids[0], "shown", ""); err == nil || !strings.Contains(err.Error(), `"shown"`) {
		t.Fatalf("bad status: %v", err)
	}
	if err := s.SetShellStatus(ctx, 999, ShellRendered, ""); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown shell: %v", err)
	}
}

func TestConversations(t *testing.T) {
	s, _ := openTest(t, Options{})
	ctx := context.Background()
	if _, err := s.Conversation(ctx, "main"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing: %v", err)
	}
	if err := s.SaveConversation(ctx, "main", json.RawMessage(`[{"role":"user","content":"hi"}]`)); err != nil {
		t.Fatal(err)
	}
	want := `[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]`
	if err := s.SaveConversation(ctx, "main", json.RawMessage(want)); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveConversation(ctx, "boot", json.RawMessage(`[]`)); err != nil {
		t.Fatal(err)
	}
	got, err := s.Conversation(ctx, "main")
	if err != nil || string(got) != want {
		t.Fatalf("got %s, %v", got, err)
	}
	ids, _ := s.Conversations(ctx)
	if !reflect.DeepEqual(ids, []string{"boot", "main"}) {
		t.Fatalf("ids %v", ids)
	}
	if _, err := s.Conversation(ctx, "other"); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "boot, main") {
		t.Fatalf("missing: %v", err)
	}
	if err := s.SaveConversation(ctx, "main", json.RawMessage(`[{`)); err == nil {
		t.Fatal("saved invalid JSON")
	}
}

func TestSettings(t *testing.T) {
	s, _ := openTest(t, Options{})
	ctx := context.Background()
	if _, ok, err := s.Setting(ctx, "model"); ok || err != nil {
		t.Fatalf("unset: ok %v err %v", ok, err)
	}
	if err := s.SetSetting(ctx, "model", "a"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetSetting(ctx, "model", "b"); err != nil {
		t.Fatal(err)
	}
	if v, ok, _ := s.Setting(ctx, "model"); !ok || v != "b" {
		t.Fatalf("got %q %v", v, ok)
	}
	if err := s.SetSetting(ctx, "", "x"); err == nil {
		t.Fatal("accepted an empty key")
	}
}

func TestReopenKeepsData(t *testing.T) {
	s, path := openTest(t, Options{})
	ctx := context.Background()
	mustPut(t, s, "purpose", `{"p":1}`, 0)
	mustPut(t, s, "purpose", `{"p":2}`, 1)
	if err := s.SaveConversation(ctx, "main", json.RawMessage(`[1]`)); err != nil {
		t.Fatal(err)
	}
	sh, _ := s.AddShell(ctx, "jsx")
	if err := s.SetSetting(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s2, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	b, err := s2.Block(ctx, "purpose")
	if err != nil || string(b.Data) != `{"p":2}` || b.Version != 2 {
		t.Fatalf("block after reopen %+v, %v", b, err)
	}
	if v := func() int64 { v, _ := s2.Put(ctx, "purpose", []byte(`{}`), 2); return v }(); v != 3 {
		t.Fatalf("version after reopen continues at %d, want 3", v)
	}
	if m, _ := s2.Conversation(ctx, "main"); string(m) != `[1]` {
		t.Fatalf("conversation %s", m)
	}
	if got, _ := s2.LatestShell(ctx, ""); got.ID != sh.ID || got.Source != "jsx" || !got.Created.Equal(sh.Created) {
		t.Fatalf("shell %+v, want %+v", got, sh)
	}
	if v, ok, _ := s2.Setting(ctx, "k"); !ok || v != "v" {
		t.Fatalf("setting %q %v", v, ok)
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	s, path := openTest(t, Options{})
	if _, err := s.db.Exec(`PRAGMA user_version = 99`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, err := Open(path, Options{})
	if err == nil || !strings.Contains(err.Error(), "newer hermitcrab (schema 99") {
		t.Fatalf("err %v", err)
	}
}

// TestOpenAdoptsAFileFromBeforeTheMarker pins that a store written before
// the application_id existed (its schema_version table at 1) opens with
// its blocks, read-only without a write and read-write marked.
func TestOpenAdoptsAFileFromBeforeTheMarker(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hermitcrab.db")
	old, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{schema.Steps[0], `CREATE TABLE schema_version (version INTEGER NOT NULL)`, `INSERT INTO schema_version VALUES (1)`,
		`INSERT INTO blocks VALUES ('purpose', '{"place":1}', 4, '2026-01-01T00:00:00.000000000Z')`} {
		if _, err := old.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	old.Close()
	ctx := context.Background()
	for i, open := range []func(string, Options) (*Store, error){OpenReadOnly, Open} {
		s, err := open(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if b, err := s.Block(ctx, "purpose"); err != nil || b.Version != 4 {
			t.Fatalf("the old block: %+v, %v", b, err)
		}
		// Read-only, the file is read as it is: without the wake tables
		// (wake status then shows no wakes); read-write, it has them.
		if kept, err := s.KeepsWakes(ctx); err != nil || kept != (i == 1) {
			t.Fatalf("open %d: wake tables %v, %v", i, kept, err)
		}
		s.Close()
	}
	data, _ := os.ReadFile(path)
	if string(data[68:72]) != "HCRB" {
		t.Fatalf("application_id after a read-write open: %q", data[68:72])
	}
}

// TestOpenRefusesAnotherProgramsFile pins that a SQLite file of another
// program is refused, unchanged.
func TestOpenRefusesAnotherProgramsFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hermitcrab.db")
	other, _ := sql.Open("sqlite", "file:"+path)
	if _, err := other.Exec(`CREATE TABLE blocks (x)`); err != nil {
		t.Fatal(err)
	}
	other.Close()
	before, _ := os.ReadFile(path)
	if _, err := Open(path, Options{}); err == nil || !strings.Contains(err.Error(), "not changed") {
		t.Fatalf("err %v", err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatal("the other program's file changed")
	}
}

// TestOpenReadOnly pins the read-only store: a missing file is not
// created, writes fail, reads work.
func TestOpenReadOnly(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "hermitcrab.db")
	if _, err := OpenReadOnly(path, Options{}); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	if es, _ := os.ReadDir(dir); len(es) != 0 {
		t.Fatal("a read-only open created a file")
	}
	s, path := openTest(t, Options{})
	if _, err := s.Put(ctx, "purpose", []byte(`{"place":1}`), 0); err != nil {
		t.Fatal(err)
	}
	ro, err := OpenReadOnly(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if _, err := ro.Block(ctx, "purpose"); err != nil {
		t.Fatal(err)
	}
	if _, err := ro.Put(ctx, "purpose", []byte(`{}`), 1); err == nil {
		t.Fatal("a read-only store accepted a write")
	}
}

func BenchmarkPut(b *testing.B) {
	s, _ := openTest(b, Options{})
	ctx := context.Background()
	data := []byte(`{"place":1,"tree":{"0":{"_":"` + strings.Repeat("x", 2000) + `","1":"a","2":"b"}}}`)
	v, err := s.Put(ctx, "bench", data, 0)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if v, err = s.Put(ctx, "bench", data, v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBlock(b *testing.B) {
	s, _ := openTest(b, Options{})
	ctx := context.Background()
	data := []byte(`{"place":1,"tree":{"0":{"_":"` + strings.Repeat("x", 2000) + `","1":"a","2":"b"}}}`)
	if _, err := s.Put(ctx, "bench", data, 0); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := s.Block(ctx, "bench"); err != nil {
			b.Fatal(err)
		}
	}
}

func TestUpdateLosesNoConcurrentEdit(t *testing.T) {
	s, _ := openTest(t, Options{})
	ctx := context.Background()
	if _, err := s.Put(ctx, "counter", []byte(`{"n":0}`), 0); err != nil {
		t.Fatal(err)
	}
	const writers = 50
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.Update(ctx, "counter", func(data json.RawMessage) ([]byte, error) {
				var c struct{ N int }
				if err := json.Unmarshal(data, &c); err != nil {
					return nil, err
				}
				return json.Marshal(map[string]int{"n": c.N + 1})
			})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	b, _ := s.Block(ctx, "counter")
	if string(b.Data) != `{"n":50}` || b.Version != 51 {
		t.Fatalf("after %d updates: %s at version %d", writers, b.Data, b.Version)
	}
	if _, err := s.Update(ctx, "nosuch", nil); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "counter") {
		t.Fatalf("missing block: %v", err)
	}
}

func TestUpdateCreatingWritesAllOrNothing(t *testing.T) {
	s, _ := openTest(t, Options{})
	ctx := context.Background()
	mustPut(t, s, "history", `{"a":1,"b":2}`, 0)
	mustPut(t, s, "history-1", `{"x":1}`, 0)
	split := func(name string) func(json.RawMessage, func(string) (bool, error)) ([]byte, map[string][]byte, error) {
		return func(_ json.RawMessage, taken func(string) (bool, error)) ([]byte, map[string][]byte, error) {
			if t1, err := taken("history-1"); err != nil || !t1 {
				return nil, nil, fmt.Errorf("taken(history-1) = %v, %v", t1, err)
			}
			return []byte(`{"a":1}`), map[string][]byte{name: []byte(`{"b":2}`)}, nil
		}
	}
	if _, err := s.UpdateCreating(ctx, "history", split("history-1")); !errors.Is(err, ErrConflict) {
		t.Fatalf("creating a block that exists: %v", err)
	}
	if b, _ := s.Block(ctx, "history"); string(b.Data) != `{"a":1,"b":2}` || b.Version != 1 {
		t.Fatalf("a refused split changed the block: %s v%d", b.Data, b.Version)
	}
	if v, err := s.UpdateCreating(ctx, "history", split("history-2")); err != nil || v != 2 {
		t.Fatalf("split: v%d %v", v, err)
	}
	if b, err := s.Block(ctx, "history-2"); err != nil || string(b.Data) != `{"b":2}` || b.Version != 1 {
		t.Fatalf("the new block: %+v %v", b, err)
	}
}
