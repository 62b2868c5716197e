package hermitcrab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/llmkernels/kernels/hermitcrab/prompt"
	"github.com/llmkernels/kernels/hermitcrab/store"
	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/pscale"
)

// The kernel's block operations: the LLM's tools, the shell's props (through
// the web server) and the CLI all call these, so each rule lives here once.
// Addresses are strings or numbers (see address); a number keeps what
// digits JSON kept.

// Source returns the blocks as the prompt compiler reads them. Every read
// goes to the store, so a write is seen by the very next call.
func (k *Kernel) Source(ctx context.Context) prompt.Source { return storeSource{ctx, k.store} }

type storeSource struct {
	ctx   context.Context
	store *store.Store
}

func (s storeSource) Block(name string) (*pscale.Block, error) {
	b, _, err := loadBlock(s.ctx, s.store, name)
	return b, err
}

func (s storeSource) Names() ([]string, error) { return s.store.Names(s.ctx) }

var _ prompt.Source = storeSource{}

// loadBlock reads and parses a block; a missing block wraps both
// store.ErrNotFound and prompt.ErrNoBlock.
func loadBlock(ctx context.Context, st *store.Store, name string) (*pscale.Block, int64, error) {
	rec, err := st.Block(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, 0, fmt.Errorf("%w (%w)", err, prompt.ErrNoBlock)
	}
	if err != nil {
		return nil, 0, err
	}
	b, _, err := pscale.Parse(rec.Data)
	if err != nil {
		return nil, 0, fmt.Errorf("block %q is not a pscale block: %w", name, err)
	}
	return b, rec.Version, nil
}

// Block returns a parsed block.
func (k *Kernel) Block(ctx context.Context, name string) (*pscale.Block, error) {
	b, _, err := loadBlock(ctx, k.store, name)
	return b, err
}

// BlockJSON is a block as stored: its JSON text and its version.
type BlockJSON struct {
	Data    json.RawMessage `json:"block"`
	Version int64           `json:"version"`
}

// RawBlock returns a block's JSON as stored, with its version.
func (k *Kernel) RawBlock(ctx context.Context, name string) (BlockJSON, error) {
	rec, err := k.store.Block(ctx, name)
	if err != nil {
		return BlockJSON{}, err
	}
	return BlockJSON{Data: rec.Data, Version: rec.Version}, nil
}

// EditBlock applies edit to the current block and writes it back in one
// store transaction, so concurrent edits queue and none is lost. It returns
// the new version.
func (k *Kernel) EditBlock(ctx context.Context, name string, edit func(*pscale.Block) error) (int64, error) {
	return k.store.Update(ctx, name, func(data json.RawMessage) ([]byte, error) {
		b, _, err := pscale.Parse(data)
		if err != nil {
			return nil, fmt.Errorf("block %q is not a pscale block: %w", name, err)
		}
		if err := edit(b); err != nil {
			return nil, fmt.Errorf("block %q: %w", name, err)
		}
		return blockJSON(b)
	})
}

// blockJSON encodes a block canonically, without HTML escaping (blocks hold JSX).
func blockJSON(b *pscale.Block) ([]byte, error) { return llm.MarshalWire(b) }

func encodeBlocks(blocks map[string]*pscale.Block) (map[string][]byte, error) {
	out := make(map[string][]byte, len(blocks))
	for name, b := range blocks {
		data, err := blockJSON(b)
		if err != nil {
			return nil, fmt.Errorf("block %q: %w", name, err)
		}
		out[name] = data
	}
	return out, nil
}

// address reads an address given as a string or a number.
func address(v any, field string) (pscale.Address, error) {
	if v == nil {
		return pscale.Address{}, fmt.Errorf("%s is required, as a string such as \"0.1\"", field)
	}
	a, err := pscale.ParseAddress(v)
	if err != nil {
		return a, fmt.Errorf("%s: %w", field, err)
	}
	return a, nil
}

// ReadNode returns the node at path (a string or number address) with the
// text of its children.
func (k *Kernel) ReadNode(ctx context.Context, name string, path any) (pscale.NodeView, error) {
	b, err := k.Block(ctx, name)
	if err != nil {
		return pscale.NodeView{}, err
	}
	addr, err := address(path, "path")
	if err != nil {
		return pscale.NodeView{}, err
	}
	view, err := pscale.Read(b, addr)
	if err != nil {
		return view, fmt.Errorf("block %q: %w%s", name, err, k.movedHint(ctx, b, &addr, err))
	}
	return view, nil
}

// WriteAt writes text at path (a string or number address) in a block and
// returns the block's new version.
func (k *Kernel) WriteAt(ctx context.Context, name string, path any, text string) (int64, error) {
	addr, err := address(path, "path")
	if err != nil {
		return 0, err
	}
	return k.EditBlock(ctx, name, func(b *pscale.Block) error { return pscale.Write(b, addr, text) })
}

// BlockSummary is a block's name and pscale-0 text.
type BlockSummary struct {
	Name    string `json:"name"`
	Pscale0 string `json:"pscale0"`
}

// ListBlocks lists every block with its pscale-0 text (its top node's).
func (k *Kernel) ListBlocks(ctx context.Context) ([]BlockSummary, error) {
	recs, err := k.store.Blocks(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]BlockSummary, 0, len(recs))
	for _, r := range recs {
		s := BlockSummary{Name: r.Name}
		if b, _, err := pscale.Parse(r.Data); err == nil && b.Tree != nil && !b.Tree.Leaf && b.Tree.Children[0] != nil {
			s.Pscale0 = b.Tree.Children[0].Text
		}
		out = append(out, s)
	}
	return out, nil
}

// CreateBlock makes a new block whose top node holds pscale0.
func (k *Kernel) CreateBlock(ctx context.Context, name, pscale0 string, place int) error {
	if place < 1 {
		place = 1
	}
	if err := store.ValidName(name); err != nil {
		return err
	}
	b := &pscale.Block{Place: place, Tree: &pscale.Node{}}
	b.Tree.Children[0] = &pscale.Node{Leaf: true, Text: pscale0}
	data, err := blockJSON(b)
	if err != nil {
		return err
	}
	_, err = k.store.Put(ctx, name, data, 0)
	if errors.Is(err, store.ErrConflict) {
		return fmt.Errorf("block %q already exists: write into it with block_write or write_entry, or choose another name", name)
	}
	return err
}

// BSP reads a named block in one of BSP's modes (see pscale.BSP); the tool,
// the shell's props and the commands parse their input into the query with
// pscale.ParseQuery. The references a star answer lists are read as well,
// in this block or the one each names, so the answer shows what they point
// at (or why that cannot be read).
func (k *Kernel) BSP(ctx context.Context, name string, q pscale.Query) (pscale.Result, error) {
	b, err := k.Block(ctx, name)
	if err != nil {
		return pscale.Result{}, err
	}
	r, err := pscale.BSP(b, q)
	if err != nil {
		return r, fmt.Errorf("block %q: %w%s", name, err, k.movedHint(ctx, b, q.Address, err))
	}
	if r.Mode == pscale.ModeStar {
		pscale.ResolveRefs(&r, func(ref string) (*pscale.Block, error) {
			if ref == "" {
				return b, nil
			}
			return k.Block(ctx, ref)
		})
	}
	return r, nil
}

// movedHint says, when err is a walk stopped at a leaf whose entries moved
// out at the size limit (moveOut), where they are: the block, and the
// address (spindle or path) of the same entry there. The moved-out block keeps the
// place and addresses of the day it was made; each growth of the block
// since put a 1 after the leading 0 of every address in it, so those 1s
// are taken off. It is "" for any other error.
func (k *Kernel) movedHint(ctx context.Context, b *pscale.Block, addr *pscale.Address, err error) string {
	var pe *pscale.PathError
	if addr == nil || !errors.As(err, &pe) || !pe.Leaf {
		return ""
	}
	to := movedTo(b, pe.At)
	if to == "" {
		return ""
	}
	hint := fmt.Sprintf("; the entries under it moved to block %q", to)
	arch, aerr := k.Block(ctx, to)
	if aerr != nil {
		return fmt.Sprintf("%s, which cannot be read: %v", hint, aerr)
	}
	digits, grown := addr.Digits(), b.Place-arch.Place
	if grown < 0 || len(digits) < 1+grown || digits[0] != '0' || strings.Trim(digits[1:1+grown], "1") != "" {
		return hint + " (its node 0 says at which address)"
	}
	there, perr := pscale.PlacedAddress(arch.Place, "0"+digits[1+grown:])
	if perr != nil {
		return hint + " (its node 0 says at which address)"
	}
	return fmt.Sprintf("%s, where this entry is at %s", hint, there)
}

// movedTo is the block the entries under the leaf at (a PathError's At,
// its digits dotted) were moved out to at the size limit (moveOut), ""
// when that leaf says nothing was.
func movedTo(b *pscale.Block, at string) string {
	n := b.Tree
	for _, c := range strings.ReplaceAll(at, ".", "") {
		if n == nil || n.Leaf || c < '0' || c > '9' {
			return ""
		}
		n = n.Children[c-'0']
	}
	if n == nil || !n.Leaf {
		return ""
	}
	if m := movedMark.FindStringSubmatch(n.Text); m != nil {
		return m[1]
	}
	return ""
}

// Resolve is the phrase-level view of a block down to depth (a number or
// numeric string; nil means the default depth).
func (k *Kernel) Resolve(ctx context.Context, name string, depth any) (pscale.Phrase, error) {
	d := 0
	if depth != nil && depth != "" {
		n, err := pscale.ParsePscale(depth)
		if err != nil {
			return pscale.Phrase{}, fmt.Errorf("depth: %w", err)
		}
		d = n
	}
	b, err := k.Block(ctx, name)
	if err != nil {
		return pscale.Phrase{}, err
	}
	return pscale.Resolve(b, d), nil
}
