// Package blocks is an instance's pscale blocks as the kernel keeps them:
// read, written, walked (BSP) and grown in the store, one version per
// block, with every rule of a write in one place. The LLM's tools, the
// page's props, the MCP endpoint and the CLI all call it; each parses
// addresses at its edge (ParseAddress, pscale.ParseQuery), so what reaches
// this package is typed. See docs/design/hermitcrab.md.
package blocks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/llmkernels/kernels/hermitcrab/prompt"
	"github.com/llmkernels/kernels/hermitcrab/shell"
	"github.com/llmkernels/kernels/hermitcrab/store"
	"github.com/llmkernels/kernels/internal/option"
	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/pscale"
)

// Blocks are the blocks of one instance's store.
type Blocks struct {
	store *store.Store
	opts  Options
	log   *slog.Logger
	// released is when the embedded touchstone was written
	// (shell.TouchstoneUpdated); a persisted copy changed after it wins.
	released time.Time
}

// Options configure Blocks.
type Options struct {
	// MaxBlockBytes is the store's block size limit; 0 is its default.
	MaxBlockBytes int
	// ShellFile seeds an empty store from this shell file instead of the
	// default shell ({"blocks": {…}} or a flat map of blocks).
	ShellFile string
	// ReadOnly: the store was opened read-only, so Ready writes nothing
	// (a store held in memory is seeded all the same).
	ReadOnly bool
	Log      *slog.Logger
}

// New makes the Blocks of st.
func New(st *store.Store, o Options) (*Blocks, error) {
	released, err := time.Parse(time.RFC3339, shell.TouchstoneUpdated)
	if err != nil {
		return nil, fmt.Errorf("the built-in shell's touchstone date %q: %w", shell.TouchstoneUpdated, err)
	}
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Blocks{store: st, opts: o, log: log, released: released}, nil
}

// Source returns the blocks as the prompt compiler reads them. Every read
// goes to the store, so a write is seen by the very next call.
func (k *Blocks) Source(ctx context.Context) prompt.Source { return storeSource{ctx, k.store} }

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
func (k *Blocks) Block(ctx context.Context, name string) (*pscale.Block, error) {
	b, _, err := loadBlock(ctx, k.store, name)
	return b, err
}

// BlockJSON is a block as stored: its JSON text and its version.
type BlockJSON struct {
	Data    json.RawMessage `json:"block"`
	Version int64           `json:"version"`
}

// Raw returns a block's JSON as stored, with its version.
func (k *Blocks) Raw(ctx context.Context, name string) (BlockJSON, error) {
	rec, err := k.store.Block(ctx, name)
	if err != nil {
		return BlockJSON{}, err
	}
	return BlockJSON{Data: rec.Data, Version: rec.Version}, nil
}

// Edit applies edit to the current block and writes it back in one store
// transaction, so concurrent edits queue and none is lost. It returns the
// new version.
func (k *Blocks) Edit(ctx context.Context, name string, edit func(*pscale.Block) error) (int64, error) {
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

// ParseAddress reads the address an edge was given for the option field
// (a tool's or a request's "path"): a string, or a number whose digits JSON
// kept. A missing one (nil) is an error saying it is required.
func ParseAddress(field string, v any) (pscale.Address, error) {
	if v == nil {
		return pscale.Address{}, option.Errorf(field, "is required, as a string such as \"0.1\"")
	}
	a, err := pscale.ParseAddress(v)
	if err != nil {
		return a, option.Errorf(field, "%w", err)
	}
	return a, nil
}

// ReadNode returns the node at addr with the text of its children.
func (k *Blocks) ReadNode(ctx context.Context, name string, addr pscale.Address) (pscale.NodeView, error) {
	b, err := k.Block(ctx, name)
	if err != nil {
		return pscale.NodeView{}, err
	}
	view, err := pscale.Read(b, addr)
	if err != nil {
		return view, fmt.Errorf("block %q: %w%s", name, err, k.movedHint(ctx, b, &addr, err))
	}
	return view, nil
}

// WriteAt writes text at addr in a block and returns the block's new
// version.
func (k *Blocks) WriteAt(ctx context.Context, name string, addr pscale.Address, text string) (int64, error) {
	return k.Edit(ctx, name, func(b *pscale.Block) error { return pscale.Write(b, addr, text) })
}

// Summary is a block's name and pscale-0 text.
type Summary struct {
	Name    string `json:"name"`
	Pscale0 string `json:"pscale0"`
}

// List lists every block with its pscale-0 text (its top node's).
func (k *Blocks) List(ctx context.Context) ([]Summary, error) {
	recs, err := k.store.Blocks(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Summary, 0, len(recs))
	for _, r := range recs {
		s := Summary{Name: r.Name}
		if b, _, err := pscale.Parse(r.Data); err == nil && b.Tree != nil && !b.Tree.Leaf && b.Tree.Children[0] != nil {
			s.Pscale0 = b.Tree.Children[0].Text
		}
		out = append(out, s)
	}
	return out, nil
}

// Create makes a new block whose top node holds pscale0; a place below 1
// is 1.
func (k *Blocks) Create(ctx context.Context, name, pscale0 string, place int) error {
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
func (k *Blocks) BSP(ctx context.Context, name string, q pscale.Query) (pscale.Result, error) {
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
func (k *Blocks) movedHint(ctx context.Context, b *pscale.Block, addr *pscale.Address, err error) string {
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

// Resolve is the phrase-level view of a block down to depth (0 is the
// default depth).
func (k *Blocks) Resolve(ctx context.Context, name string, depth int) (pscale.Phrase, error) {
	b, err := k.Block(ctx, name)
	if err != nil {
		return pscale.Phrase{}, err
	}
	return pscale.Resolve(b, depth), nil
}

// ParseDepth reads the depth an edge was given for the option field: a
// number or a numeric string; nil or "" is 0, the default depth.
func ParseDepth(field string, v any) (int, error) {
	if v == nil || v == "" {
		return 0, nil
	}
	n, err := pscale.ParsePscale(v)
	if err != nil {
		return 0, option.Errorf(field, "%w", err)
	}
	return n, nil
}
