package blocks

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/llmkernels/kernels/hermitcrab/store"
	"github.com/llmkernels/kernels/pscale"
)

// Growing blocks: entries appended as a block's newest (WriteEntry), and
// a block near the size limit keeping room by moving its oldest full
// node out into a block of its own, at the same addresses (Archive).

// IsTop tells whether addr is a block's top node, tree["0"].
func IsTop(addr pscale.Address) bool { return addr.Digits() == pscale.TopAddress }

// WriteEntry adds text as a new entry of a block and returns its address.
// Under the zero address or the top ("0") the entry is the block's newest
// (pscale.AppendEntry): when the newest node is full and compressed the next
// one opens, and a full node that is not compressed, or a full top, is a
// *pscale.FullError saying to compress it (compressing the top grows the
// block). Under another address the entry goes at the next free digit
// 1–9 under that node, and a full node is an error wrapping pscale.ErrFull.
func (k *Blocks) WriteEntry(ctx context.Context, name string, under pscale.Address, text string) (pscale.Address, error) {
	addr := under
	var at pscale.Address
	_, err := k.Edit(ctx, name, func(b *pscale.Block) error {
		if addr.Digits() == "" || IsTop(addr) {
			var err error
			at, err = pscale.AppendEntry(b, text, nil)
			return err
		}
		d, err := pscale.NextDigit(b, addr)
		if err != nil {
			return err
		}
		at, err = pscale.PlacedAddress(b.Place, addr.Digits()+fmt.Sprint(d))
		if err != nil {
			return err
		}
		return pscale.Write(b, at, text)
	})
	return at, err
}

// maxMoves bounds the moves MakeRoom makes for one write: one per level of
// a block, and the top's growth.
const maxMoves = 16

// roomMargin is the room MakeRoom keeps free in a growing block: enough for
// an entry, a compression and a growth.
const roomMargin = 4 << 10

// MakeRoom moves a growing block's oldest compressed entries out
// (Archive) while it is within roomMargin of the size limit, so the writes
// of an auto-save fit. It returns a note for each move.
func (k *Blocks) MakeRoom(ctx context.Context, name string) []string {
	limit := k.maxBlockBytes()
	margin := min(roomMargin, limit/2)
	var notes []string
	for range maxMoves {
		b, err := k.Raw(ctx, name)
		if err != nil || len(b.Data) <= limit-margin {
			return notes
		}
		moved, err := k.Archive(ctx, name)
		if err != nil {
			return append(notes, fmt.Sprintf("%s is near the block size limit and nothing could move out: %v", name, err))
		}
		notes = append(notes, fmt.Sprintf("%s reached the block size limit: its oldest entries moved to block %s, at the same addresses", name, moved))
	}
	return notes
}

func (k *Blocks) maxBlockBytes() int {
	if k.opts.MaxBlockBytes > 0 {
		return k.opts.MaxBlockBytes
	}
	return store.DefaultMaxBlockBytes
}

// Archive keeps a growing block under the size limit: it moves the oldest
// compressed node out into a new block of its own (moveOut), NAME-N, and
// returns the new block's name.
func (k *Blocks) Archive(ctx context.Context, name string) (string, error) {
	limit := k.maxBlockBytes()
	var moved string
	_, err := k.store.UpdateCreating(ctx, name, func(data json.RawMessage, taken func(string) (bool, error)) ([]byte, map[string][]byte, error) {
		b, _, err := pscale.Parse(data)
		if err != nil {
			return nil, nil, fmt.Errorf("block %q is not a pscale block: %w", name, err)
		}
		if moved, err = archiveName(name, taken); err != nil {
			return nil, nil, err
		}
		archive, err := moveOut(b, name, moved, limit)
		if err != nil {
			return nil, nil, err
		}
		next, err := blockJSON(b)
		if err != nil {
			return nil, nil, err
		}
		arch, err := blockJSON(archive)
		if err != nil {
			return nil, nil, err
		}
		return next, map[string][]byte{moved: arch}, nil
	})
	return moved, err
}

// archiveName is the first of NAME-1, NAME-2, … that is not taken.
func archiveName(name string, taken func(string) (bool, error)) (string, error) {
	for n := 1; ; n++ {
		moved := fmt.Sprintf("%s-%d", name, n)
		t, err := taken(moved)
		if err != nil || !t {
			return moved, err
		}
	}
}

// movedMark finds the block named in the note moveOut leaves.
var movedMark = regexp.MustCompile(`moved to block (\S+?)\]$`)

// moveOut takes the oldest compressed node of b that fits in a block under
// limit (oldestClosed) out of b, and returns it as a block of its own (to be
// stored as moved): at the address it has in b and with b's place, so every
// entry keeps its pscale and stays reachable by BSP there. In b a leaf with
// its compression takes its place, naming the new block.
//
// A full node that was never compressed (the light tier kept failing) moves
// when no compressed one can: its entries are kept whole, and its leaf says
// they were not compressed.
func moveOut(b *pscale.Block, name, moved string, limit int) (*pscale.Block, error) {
	path, ok := oldestClosed(b, limit*9/10, true)
	if !ok {
		path, ok = oldestClosed(b, limit*9/10, false)
	}
	if !ok {
		return nil, fmt.Errorf("block %q is over the size limit and has no full node that could move out", name)
	}
	archive := &pscale.Block{Place: b.Place, Tree: &pscale.Node{}}
	at, err := pscale.PlacedAddress(b.Place, digitsOf(path))
	if err != nil {
		return nil, err
	}
	archive.Tree.Children[0] = &pscale.Node{Text: fmt.Sprintf("Entries moved out of block %q to keep it under the size limit: its node %s, at the address it had then (place %d).", name, at, b.Place), HasText: true}
	src, dst := b.Tree.Children[0], archive.Tree.Children[0]
	for i, n := range path {
		if i == len(path)-1 {
			dst.Children[n] = src.Children[n]
			note := fmt.Sprintf(" [its entries moved to block %s]", moved)
			if src.Children[n].Text == "" {
				note = fmt.Sprintf("[nine entries, not compressed, moved to block %s]", moved)
			}
			// BSP reads the block's name back from the note (movedMark).
			src.Children[n] = &pscale.Node{Leaf: true, Text: strings.TrimSpace(src.Children[n].Text + note)}
			break
		}
		src = src.Children[n]
		dst.Children[n] = &pscale.Node{Text: src.Text, HasText: src.Text != ""}
		dst = dst.Children[n]
	}
	return archive, nil
}

// oldestClosed finds, below a block's top, the oldest full node (its digits
// 1–9 taken: nothing is added to it again), compressed (its text written)
// when compressed is set, whose JSON is at most max bytes: depth first in
// digit order, so a node too big to move is looked into before anything
// newer. It returns the digits from the top.
func oldestClosed(b *pscale.Block, max int, compressed bool) ([]int, bool) {
	if b.Tree == nil || b.Tree.Leaf || b.Tree.Children[0] == nil {
		return nil, false
	}
	var visit func(n *pscale.Node, path []int) ([]int, bool)
	visit = func(n *pscale.Node, path []int) ([]int, bool) {
		for d := 1; d <= 9; d++ {
			c := n.Children[d]
			if c == nil || c.Leaf {
				continue
			}
			at := append(slices.Clone(path), d)
			if (c.Text != "" || !compressed) && full(c) {
				if data, err := c.MarshalJSON(); err == nil && len(data) <= max {
					return at, true
				}
			}
			if found, ok := visit(c, at); ok {
				return found, true
			}
		}
		return nil, false
	}
	return visit(b.Tree.Children[0], nil)
}

// digitsOf writes a path below the top as address digits, "0" first.
func digitsOf(path []int) string {
	var sb strings.Builder
	sb.WriteString(pscale.TopAddress)
	for _, d := range path {
		sb.WriteByte(byte('0' + d))
	}
	return sb.String()
}

// full tells whether digits 1–9 of n are all taken.
func full(n *pscale.Node) bool {
	for d := 1; d <= 9; d++ {
		if n.Children[d] == nil {
			return false
		}
	}
	return true
}
