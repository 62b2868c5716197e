package blocks

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/llmkernels/kernels/hermitcrab/migrate"
	"github.com/llmkernels/kernels/hermitcrab/shell"
	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/pscale"
)

// ImportSource is one file to import: its name (a single block is named
// after it) and its content.
type ImportSource struct {
	Name string
	Data []byte
}

// ReadImportFiles reads files for Import.
func ReadImportFiles(paths []string) ([]ImportSource, error) {
	out := make([]ImportSource, 0, len(paths))
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("import: %w", err)
		}
		out = append(out, ImportSource{Name: p, Data: data})
	}
	return out, nil
}

// ImportResult says what an import did.
type ImportResult struct {
	Written []string `json:"written"`
	Skipped []string `json:"skipped,omitempty"` // existing blocks left alone (import without replace)
	Notes   []string `json:"notes,omitempty"`   // conversions, migrated G0 files, keys not imported
	// Unreadable lists the localStorage keys skipped because their value
	// could not be read (the notes say why); the rest was imported.
	Unreadable []string `json:"unreadable,omitempty"`
}

// Import reads shell files, single block files and browser localStorage
// dumps (hc:* blocks, and G0 memory files migrated per the clean-build
// spec) and writes their blocks in one transaction. Existing blocks are
// kept unless replace is set. G0 memory is migrated into the instance's
// own history, stash and constitution (the default shell's, in a new data
// directory), so importing a G0 dump into an existing instance needs
// replace to write the blocks that received entries. Later files replace
// earlier files' blocks of the same name. The source files are only read.
func (k *Blocks) Import(ctx context.Context, sources []ImportSource, replace bool) (*ImportResult, error) {
	base, err := k.migrationBase(ctx)
	if err != nil {
		return nil, err
	}
	res := &ImportResult{}
	blocks := map[string]*pscale.Block{}
	from := map[string]string{}
	for _, src := range sources {
		f := src.Name
		got, err := migrate.File(filepath.Base(f), src.Data, base)
		if err != nil {
			return nil, fmt.Errorf("import: %w", err)
		}
		for _, n := range got.Notes {
			res.Notes = append(res.Notes, f+": "+n)
		}
		for _, key := range got.Unreadable {
			res.Unreadable = append(res.Unreadable, f+": "+key)
		}
		for name, b := range got.Blocks {
			if prev, ok := from[name]; ok {
				res.Notes = append(res.Notes, fmt.Sprintf("block %q from %s replaces the one from %s", name, f, prev))
			}
			blocks[name], from[name] = b, f
		}
	}
	if err := k.fitBlocks(ctx, blocks, replace, res); err != nil {
		return nil, err
	}
	encoded, err := encodeBlocks(blocks)
	if err != nil {
		return nil, err
	}
	res.Written, res.Skipped, err = k.store.PutMany(ctx, encoded, replace)
	if err != nil {
		return nil, fmt.Errorf("import: nothing was written: %w", err)
	}
	return res, nil
}

// fitBlocks brings each block over the size limit under it the way
// auto-save keeps history under it: its oldest compressed nodes move out,
// one by one, into blocks of their own (moveOut), NAME-1, NAME-2, …, named
// past every block stored or imported, so that a large G0 migration imports
// whole and every entry stays reachable by BSP. A block the import will
// skip (it exists, and replace is off) is left alone, and so is one with
// nothing that can move (the store then refuses it, saying why).
func (k *Blocks) fitBlocks(ctx context.Context, blocks map[string]*pscale.Block, replace bool, res *ImportResult) error {
	names, err := k.store.Names(ctx)
	if err != nil {
		return err
	}
	stored := map[string]bool{}
	for _, n := range names {
		stored[n] = true
	}
	taken := func(n string) (bool, error) { _, ok := blocks[n]; return ok || stored[n], nil }
	limit := k.maxBlockBytes()
	for _, name := range slices.Sorted(maps.Keys(blocks)) {
		if stored[name] && !replace {
			continue
		}
		for {
			data, err := blockJSON(blocks[name])
			if err != nil {
				return fmt.Errorf("block %q: %w", name, err)
			}
			if len(data) <= limit {
				break
			}
			moved, _ := archiveName(name, taken)
			archive, err := moveOut(blocks[name], name, moved, limit)
			if err != nil {
				break // nothing can move: the store says the block is too large
			}
			blocks[moved] = archive
			res.Notes = append(res.Notes, fmt.Sprintf("block %q is over the size limit (%d bytes): its oldest entries moved to block %s, at the same addresses", name, limit, moved))
		}
	}
	return nil
}

// migrationBase is what G0 memory is migrated into: the instance's own
// blocks, or the default shell when the store is still empty.
func (k *Blocks) migrationBase(ctx context.Context) (map[string]*pscale.Block, error) {
	recs, err := k.store.Blocks(ctx)
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return shell.Default()
	}
	base := make(map[string]*pscale.Block, len(recs))
	for _, r := range recs {
		b, _, err := pscale.Parse(r.Data)
		if err != nil {
			return nil, fmt.Errorf("block %q is not a pscale block: %w", r.Name, err)
		}
		base[r.Name] = b
	}
	return base, nil
}

// Export returns every block as a shell file, {"blocks": {…}}, which
// Import and --shell read back.
func (k *Blocks) Export(ctx context.Context) ([]byte, error) {
	if err := k.Ready(ctx); err != nil {
		return nil, err
	}
	recs, err := k.store.Blocks(ctx)
	if err != nil {
		return nil, err
	}
	// encoding/json writes map keys sorted, so exports are deterministic.
	blocks := make(map[string]json.RawMessage, len(recs))
	for _, r := range recs {
		blocks[r.Name] = r.Data
	}
	return llm.MarshalWire(map[string]any{"blocks": blocks})
}
