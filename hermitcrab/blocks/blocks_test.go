package blocks

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmkernels/kernels/hermitcrab/shell"
	"github.com/llmkernels/kernels/hermitcrab/store"
	"github.com/llmkernels/kernels/pscale"
)

func TestAPersistedTouchstoneChangedAfterTheKernelsWins(t *testing.T) {
	k := newBlocks(t, Options{})
	ctx := context.Background()
	k.Edit(ctx, "touchstone", func(b *pscale.Block) error {
		addr, _ := pscale.ParseAddress("0.9")
		return pscale.Write(b, addr, "The format evolved: a tenth rule.")
	})
	if err := k.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	if got := text(t, k, "touchstone", "0.9"); got != "The format evolved: a tenth rule." {
		t.Fatalf("the LLM's newer touchstone was replaced: %q", got)
	}
}

func TestANewerEmbeddedTouchstoneReplacesAnOlderCopy(t *testing.T) {
	k := newBlocks(t, Options{})
	ctx := context.Background()
	k.Edit(ctx, "touchstone", func(b *pscale.Block) error {
		addr, _ := pscale.ParseAddress("0.9")
		return pscale.Write(b, addr, "an edit from before the kernel upgrade")
	})
	k.released = time.Now().Add(time.Hour) // the kernel was upgraded after that edit
	if err := k.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	embedded, _ := shell.Touchstone()
	got, _ := k.Block(ctx, "touchstone")
	want, _ := blockJSON(embedded)
	have, _ := blockJSON(got)
	if string(have) != string(want) {
		t.Fatal("the older persisted touchstone was kept over the newer embedded one")
	}
}

func TestShellFileSeedsAnEmptyStoreOnly(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(t.TempDir(), "mini.json")
	os.WriteFile(file, []byte(`{"blocks":{"wake":{"place":1,"tree":{"0":"Wake lightly."}},"purpose":{"decimal":1,"tree":{"0":"Tend the garden."}}}}`), 0o644)
	k := storeBlocks(t, dir, Options{ShellFile: file})
	ctx := context.Background()
	if err := k.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	names, _ := k.store.Names(ctx)
	if strings.Join(names, ",") != "purpose,touchstone,wake" {
		t.Fatalf("seeded %v, want the shell's blocks and the kernel's touchstone", names)
	}
	if got := text(t, k, "purpose", "0"); got != "Tend the garden." {
		t.Fatalf("purpose 0 = %q", got)
	}
	k.store.Delete(ctx, "wake", -1)
	k.Ready(ctx)
	if _, err := k.Block(ctx, "wake"); err == nil {
		t.Fatal("a store that is not empty was seeded again")
	}
}

// A walk into a node moved out at the size limit names the block it moved
// to and the spindle that finds the entry there, also after the block has
// grown since (growth puts a 1 after the 0 of every address, the moved-out
// block keeps the addresses of the day it was made), and a block_read
// through it says the same.
func TestAWalkIntoAMovedOutNodeNamesTheBlockAndTheSpindleThere(t *testing.T) {
	k := newBlocks(t, Options{})
	ctx := context.Background()
	if err := k.Create(ctx, "log", "A log.", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := k.WriteAt(ctx, "log", at(t, "01"), "The first nine, compressed."); err != nil {
		t.Fatal(err)
	}
	for d := 1; d <= 9; d++ {
		if _, err := k.WriteAt(ctx, "log", at(t, fmt.Sprintf("01%d", d)), fmt.Sprintf("entry %d", d)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := k.WriteAt(ctx, "log", at(t, "02"), "The next."); err != nil {
		t.Fatal(err)
	}
	moved, err := k.Archive(ctx, "log")
	if err != nil || moved != "log-1" {
		t.Fatalf("archive: %q %v", moved, err)
	}
	check := func(spindle, there string) {
		t.Helper()
		_, err := k.BSP(ctx, "log", bspQuery(t, spindle))
		if err == nil || !strings.Contains(err.Error(), `block "log-1"`) || !strings.Contains(err.Error(), "this entry is at "+there) {
			t.Fatalf("bsp log %s: %v (want block log-1, spindle %s)", spindle, err, there)
		}
		r, err := k.BSP(ctx, "log-1", bspQuery(t, there))
		if err != nil || r.Nodes[len(r.Nodes)-1].Text != "entry 3" {
			t.Fatalf("bsp log-1 %s: %+v %v", there, r, err)
		}
		if _, err := k.ReadNode(ctx, "log", at(t, spindle)); err == nil || !strings.Contains(err.Error(), `block "log-1"`) || !strings.Contains(err.Error(), "this entry is at "+there) {
			t.Fatalf("block_read log %s: %v", spindle, err)
		}
	}
	check("0.13", "0.13")
	if _, err := k.Edit(ctx, "log", func(b *pscale.Block) error { return pscale.Grow(b, "All of it, compressed.") }); err != nil {
		t.Fatal(err)
	}
	check("01.13", "0.13")
}

func TestAHundredMemoryG0DumpAndADumpWithACorruptKeyImport(t *testing.T) {
	ctx := context.Background()
	dump := map[string]string{"hermitcrab_api_key": "sk-ant-never", "hcmem:/memories/naming.md": "I am Tidepool."}
	for i := 1; i <= 100; i++ {
		dump[fmt.Sprintf("hcmem:/memories/M-%d.md", i)] = fmt.Sprintf("session %d", i)
	}
	data, _ := json.Marshal(dump)
	// A new data directory, as `hermitcrab blocks import` meets it: the G0
	// memory goes into the default shell's blocks.
	k := storeBlocks(t, t.TempDir(), Options{})
	res, err := k.Import(ctx, []ImportSource{{Name: "localStorage.json", Data: data}}, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Written) != 9 {
		t.Fatalf("written %v", res.Written)
	}
	for i := 1; i <= 100; i++ {
		v := i - 1
		r, err := k.BSP(ctx, "history", bspQuery(t, fmt.Sprintf("0%d%d.%d", v/81+1, v/9%9+1, v%9+1), -1))
		if err != nil || r.Point.Text != fmt.Sprintf("[/memories/M-%d.md] session %d", i, i) {
			t.Fatalf("memory %d: %+v %v", i, r.Point, err)
		}
	}
	if got := text(t, k, "constitution", "0.5.1"); got != "[/memories/naming.md] I am Tidepool." {
		t.Fatalf("the naming file: %q", got)
	}

	corrupt := `{"hc:purpose": "{\"place\":1,\"tree\":{\"0\":\"Why I am here, from the old browser.\"}}", "hc:stash": "{\"place\": 1, \"tr"}`
	k2 := newBlocks(t, Options{})
	res, err = k2.Import(ctx, []ImportSource{{Name: "old.json", Data: []byte(corrupt)}}, true)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(res.Written, ",") != "purpose" || strings.Join(res.Unreadable, ",") != "old.json: hc:stash" {
		t.Fatalf("written %v, unreadable %v", res.Written, res.Unreadable)
	}
	if got := text(t, k2, "purpose", "0"); got != "Why I am here, from the old browser." {
		t.Fatalf("purpose: %q", got)
	}
	if got := text(t, k2, "stash", "0"); got == "" {
		t.Fatal("the instance's own stash was lost to a corrupt key")
	}
}

// TestALargeG0DumpWithHostileKeysImportsWholeUnderTheSizeLimit migrates 300
// memories of 1,000 characters (five times the 64 KiB block limit), one
// memory of 50,000 characters, 90 name files (more than Naming's 81) and
// keys with odd paths, into an instance that already has a block named
// history-1. Everything imports: blocks over the limit move their oldest
// entries to history-N and stash-N blocks (past the existing history-1,
// which is kept), the long memory is split into consecutive entries, and
// every memory is readable by BSP at pscale −1.
func TestALargeG0DumpWithHostileKeysImportsWholeUnderTheSizeLimit(t *testing.T) {
	ctx := context.Background()
	dump := map[string]string{
		"hcmem:/memories/evil]\n[x.md": "a path with a bracket and a newline",
		"hcmem:":                       "a file with no path",
		"hcmem:/memories/ünïcode.md":   "é" + strings.Repeat("ü", 10),
		"hcmem:/memories/long.md":      strings.Repeat("The tide came in over the rocks. ", 1500),
	}
	for i := 1; i <= 300; i++ {
		dump[fmt.Sprintf("hcmem:/memories/M-%d.md", i)] = fmt.Sprintf("session %d: %s", i, strings.Repeat("x", 1000))
	}
	for i := 1; i <= 90; i++ {
		dump[fmt.Sprintf("hcmem:/memories/name-%02d.md", i)] = fmt.Sprintf("name note %d", i)
	}
	data, _ := json.Marshal(dump)
	k := newBlocks(t, Options{})
	if err := k.Create(ctx, "history-1", "My own block, whose name an archive would take.", 1); err != nil {
		t.Fatal(err)
	}
	res, err := k.Import(ctx, []ImportSource{{Name: "localStorage.json", Data: data}}, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, k, "history-1", "0"); got != "My own block, whose name an archive would take." {
		t.Fatalf("the existing history-1 was overwritten: %q", got)
	}
	// Every block fits; collect every entry at pscale -1 of history*, stash*
	// and constitution, checking each by BSP.
	names, _ := k.store.Names(ctx)
	var found []string
	for _, name := range names {
		raw, _ := k.Raw(ctx, name)
		if len(raw.Data) > store.DefaultMaxBlockBytes {
			t.Errorf("block %s is %d bytes", name, len(raw.Data))
		}
		if !strings.HasPrefix(name, "history") && !strings.HasPrefix(name, "stash") && name != "constitution" {
			continue
		}
		r, err := k.Resolve(ctx, name, 9)
		if err != nil {
			t.Fatal(err)
		}
		var walk func(p pscale.Phrase)
		walk = func(p pscale.Phrase) {
			if strings.HasPrefix(p.Text, "[") && len(p.Children) == 0 {
				// Entries are at pscale -1; Naming's under constitution 0.5.
				b, err := k.BSP(ctx, name, bspQuery(t, p.Path))
				if err != nil || b.Nodes[len(b.Nodes)-1].Text != p.Text || (name != "constitution" && b.Nodes[len(b.Nodes)-1].Pscale != -1) {
					t.Errorf("%s %s: %+v %v", name, p.Path, b.Nodes, err)
				}
				found = append(found, p.Text)
			}
			for _, c := range p.Children {
				walk(c)
			}
		}
		walk(r)
	}
	all := strings.Join(found, "\n")
	for i := 1; i <= 300; i++ {
		if !strings.Contains(all, fmt.Sprintf("[/memories/M-%d.md] session %d: x", i, i)) {
			t.Fatalf("memory %d is missing (notes: %q)", i, res.Notes[len(res.Notes)-3:])
		}
	}
	for i := 1; i <= 90; i++ {
		if !strings.Contains(all, fmt.Sprintf("[/memories/name-%02d.md] name note %d", i, i)) {
			t.Fatalf("name file %d is missing", i)
		}
	}
	for _, want := range []string{"[/memories/evil]\n[x.md] a path with a bracket", "[] a file with no path", "[/memories/ünïcode.md] éüü"} {
		if !strings.Contains(all, want) {
			t.Errorf("%q is missing", want)
		}
	}
	var long []string
	for _, e := range found {
		if strings.HasPrefix(e, "[/memories/long.md, part ") {
			_, body, _ := strings.Cut(e, "] ")
			long = append(long, body)
		}
	}
	if got := strings.Join(long, " "); len(long) < 25 || got != strings.TrimSpace(dump["hcmem:/memories/long.md"]) {
		t.Fatalf("the long memory came back in %d parts, %d of %d characters", len(long), len(got), len(dump["hcmem:/memories/long.md"]))
	}
	if !strings.Contains(strings.Join(res.Notes, "\n"), "this is one more: it goes to stash") {
		t.Error("no note says where the 82nd name file went")
	}
}
