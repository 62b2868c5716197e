package blocks

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/llmkernels/kernels/hermitcrab/migrate"
	"github.com/llmkernels/kernels/hermitcrab/shell"
	"github.com/llmkernels/kernels/hermitcrab/store"
	"github.com/llmkernels/kernels/internal/option"
	"github.com/llmkernels/kernels/pscale"
)

// InMemory tells whether the store is held in memory: opened read-only on
// a data directory that has no store yet, or a store without blocks, it
// holds the default shell.
func (k *Blocks) InMemory() bool { return k.store.InMemory() }

// Ready seeds an empty store (with the default shell, or Options.ShellFile)
// and keeps the touchstone current: the kernel's embedded touchstone is
// persisted when missing, and replaces a persisted copy older than it; a
// copy changed after it (by the LLM evolving the format) wins. Every
// command that reads blocks calls it first; importing does not, so an
// import into a new data directory is not mixed with the default shell.
// On a store opened with Options.ReadOnly it writes nothing (a store held
// in memory is seeded).
func (k *Blocks) Ready(ctx context.Context) error {
	if k.opts.ReadOnly && !k.store.InMemory() {
		return nil // the blocks as stored; the next command that writes syncs them
	}
	empty, err := k.store.Empty(ctx)
	if err != nil {
		return err
	}
	if empty {
		blocks, err := k.seedBlocks()
		if err != nil {
			return err
		}
		if _, _, err := k.store.PutMany(ctx, blocks, false); err != nil {
			return fmt.Errorf("seeding the shell: %w", err)
		}
		k.log.Info("seeded an empty store", "blocks", len(blocks))
	}
	return k.syncTouchstone(ctx)
}

func (k *Blocks) seedBlocks() (map[string][]byte, error) {
	var blocks map[string]*pscale.Block
	if k.opts.ShellFile != "" {
		data, err := os.ReadFile(k.opts.ShellFile)
		if err != nil {
			return nil, option.Errorf("shell_file", "%w", err)
		}
		res, err := migrate.File(k.opts.ShellFile, data, nil)
		if err != nil {
			return nil, option.Errorf("shell_file", "%s: %w", k.opts.ShellFile, err)
		}
		blocks = res.Blocks
	} else {
		var err error
		if blocks, err = shell.Default(); err != nil {
			return nil, err
		}
	}
	return encodeBlocks(blocks)
}

func (k *Blocks) syncTouchstone(ctx context.Context) error {
	embedded, err := shell.Touchstone()
	if err != nil {
		return err
	}
	cur, err := k.store.Block(ctx, "touchstone")
	expect := int64(0)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return err
	case cur.Updated.After(k.released):
		return nil
	default:
		expect = cur.Version
	}
	data, err := blockJSON(embedded)
	if err != nil {
		return err
	}
	if _, err := k.store.Put(ctx, "touchstone", data, expect); err != nil {
		return fmt.Errorf("persisting the touchstone: %w", err)
	}
	return nil
}
