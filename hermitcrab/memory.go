package hermitcrab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/llmkernels/kernels/hermitcrab/budget"
	"github.com/llmkernels/kernels/hermitcrab/prompt"
	"github.com/llmkernels/kernels/hermitcrab/store"
	"github.com/llmkernels/kernels/internal/clip"
	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/pscale"
)

// historyBlock is where the kernel auto-saves each exchange (§8.4).
const historyBlock = "history"

// historySummaryChars is how much of a reply auto-save keeps (§8.4).
const historySummaryChars = 500

// maxCompressions bounds the compressions one append may need: one per
// level of a block, and the top's growth.
const maxCompressions = 16

// errUnchanged aborts an edit that turned out to have nothing to do.
var errUnchanged = errors.New("nothing to change")

// isTop tells whether addr is a block's top node, tree["0"].
func isTop(addr pscale.Address) bool { return addr.Digits() == pscale.TopAddress }

// WriteEntry adds text as a new entry of a block and returns its address.
// With path "" or the top ("0") the entry is the block's newest
// (pscale.AppendEntry): when the newest node is full and compressed the next
// one opens, and a full node that is not compressed, or a full top, is a
// *pscale.FullError saying to compress it (compressing the top grows the
// block). With another path the entry goes at the next free digit 1–9
// under that node, and a full node is an error wrapping pscale.ErrFull.
func (k *Kernel) WriteEntry(ctx context.Context, name string, path any, text string) (string, error) {
	var addr pscale.Address
	if path != nil && path != "" {
		a, err := address(path, "path")
		if err != nil {
			return "", err
		}
		addr = a
	}
	var at pscale.Address
	_, err := k.EditBlock(ctx, name, func(b *pscale.Block) error {
		if addr.Digits() == "" || isTop(addr) {
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
	return at.String(), err
}

// Compression is what Compress did.
type Compression struct {
	Block string `json:"block"`
	Path  string `json:"path"` // the compressed node, where it is now
	Mode  string `json:"mode"` // summary or emergence
	Text  string `json:"text"`
	// Grew is set when the node was the block's top: the block grew by one
	// level, and the compressed node moved to digit 1 under a new top that
	// keeps the block's description.
	Grew bool `json:"grew,omitempty"`
}

// compression is the light tier's judgment on nine entries.
type compression struct {
	Mode string `json:"mode" jsonschema:"enum=summary,enum=emergence"`
	Text string `json:"text" jsonschema:"minLength=1"`
}

// Compress asks the light tier whether the nine entries under path form a
// summary or an emergence, and writes its text as that node's own text.
// The nine entries stay. When the node is the block's top, whose text is
// the block's description, the block grows instead (pscale.Grow): the
// description stays on a new top and the compression goes on the old top,
// now its digit 1, so writing can go on.
func (k *Kernel) Compress(ctx context.Context, name string, path any) (Compression, error) {
	addr, err := address(path, "path")
	if err != nil {
		return Compression{}, err
	}
	return k.compress(ctx, name, addr, false)
}

// compress is Compress; auto (the kernel's own, for auto-save) leaves a
// node alone that someone compressed in the meantime, where the LLM's own
// compress writes its text anyway.
func (k *Kernel) compress(ctx context.Context, name string, addr pscale.Address, auto bool) (Compression, error) {
	client := budget.Meter(ctx, k.Client())
	if client == nil {
		return Compression{}, errNoClient
	}
	b, err := k.Block(ctx, name)
	if err != nil {
		return Compression{}, err
	}
	full, err := pscale.NeedsCompression(b, addr)
	var moved *pscale.PathError
	if auto && (errors.As(err, &moved) || err == nil && !full) {
		// Another writer compressed the node or grew the block since the
		// append that asked for this: nothing to do, the append goes on.
		return Compression{Block: name, Path: addr.String()}, nil
	}
	if err != nil {
		return Compression{}, fmt.Errorf("block %q: %w", name, err)
	}
	if !full {
		return Compression{}, fmt.Errorf("block %q path %s: digits 1-9 are not all taken yet; add entries with write_entry until they are", name, addr)
	}
	view, err := pscale.Read(b, addr)
	if err != nil {
		return Compression{}, err
	}
	var entries strings.Builder
	if isTop(addr) {
		fmt.Fprintf(&entries, "Block %q, its top node (the block's description: %s). Compress its nine entries; the description stays.\n", name, view.Content)
	} else {
		fmt.Fprintf(&entries, "Block %q, node %s: %s\n", name, addr, view.Content)
	}
	for d := 1; d <= 9; d++ {
		fmt.Fprintf(&entries, "%d: %s\n", d, view.Children[fmt.Sprint(d)])
	}
	params, err := k.tierParams(k.Source(ctx), prompt.Light)
	if err != nil {
		return Compression{}, err
	}
	req := &llm.Request{Model: params.Model, MaxTokens: params.MaxTokens,
		System:   []llm.SystemBlock{{Type: llm.BlockText, Text: promptText("compress_system.md")}},
		Messages: []llm.Message{llm.UserText(entries.String())}}
	got, _, err := llm.AskJSON[compression](ctx, client, req, llm.JSONOptions{})
	if err != nil {
		return Compression{}, fmt.Errorf("compress %s %s: %w", name, addr, err)
	}
	out := Compression{Block: name, Path: addr.String(), Mode: got.Mode, Text: got.Text}
	_, err = k.EditBlock(ctx, name, func(b *pscale.Block) error {
		// Checked again under the write lock: another writer may have
		// compressed or grown the block while the light tier thought.
		full, err := pscale.NeedsCompression(b, addr)
		switch {
		case err != nil:
			return err
		case !full && auto:
			return errUnchanged
		case !full:
			return fmt.Errorf("path %s: digits 1-9 are no longer all taken (another writer changed the block); nothing was written", addr)
		case isTop(addr):
			out.Grew = true
			at, _ := pscale.PlacedAddress(b.Place+1, addr.Digits()+"1")
			out.Path = at.String()
			return pscale.Grow(b, got.Text)
		}
		if view, err := pscale.Read(b, addr); err == nil && view.Content != "" && auto {
			return errUnchanged
		}
		return pscale.Write(b, addr, got.Text)
	})
	if errors.Is(err, errUnchanged) {
		err = nil
	}
	return out, err
}

// autoSave writes a summary of the reply as the newest entry of the history
// block (§8.4), compressing full nodes and growing the block as the entry
// needs (the clean-build spec's Memory block), so auto-save never stops. A
// compression that fails (the light tier unreachable) does not lose the
// entry: it is saved past the uncompressed node, which a later exchange
// compresses. It returns notes for the call's result.
func (k *Kernel) autoSave(ctx context.Context, text string) []string {
	text = strings.TrimSpace(text)
	if text == "" {
		return nil
	}
	text = clip.Text(text, historySummaryChars)
	notes := k.makeRoom(ctx, historyBlock)
	for range maxCompressions {
		_, err := k.WriteEntry(ctx, historyBlock, nil, text)
		var full *pscale.FullError
		switch {
		case err == nil:
			return append(notes, k.compressPending(ctx)...)
		case errors.As(err, &full):
			if _, cerr := k.compress(ctx, historyBlock, full.Path, true); cerr != nil {
				notes = append(notes, fmt.Sprintf("history %s is full and could not be compressed (%v): this exchange is saved after it; a later exchange compresses it", full.Path, cerr))
				return append(notes, k.savePast(ctx, text)...)
			}
		case errors.Is(err, store.ErrTooLarge):
			moved, aerr := k.archive(ctx, historyBlock)
			if aerr != nil {
				return append(notes, "auto-save to history failed: "+err.Error()+"; and moving old entries out failed: "+aerr.Error())
			}
			notes = append(notes, fmt.Sprintf("history reached the block size limit: its oldest entries moved to block %s, at the same addresses", moved))
		case errors.Is(err, store.ErrNotFound):
			return append(notes, "no history block, so this exchange was not auto-saved")
		default:
			return append(notes, "auto-save to history failed: "+err.Error())
		}
	}
	return append(notes, "auto-save to history gave up: the block kept needing compression")
}

// savePast appends an entry past full nodes without compressing them.
func (k *Kernel) savePast(ctx context.Context, text string) []string {
	_, err := k.EditBlock(ctx, historyBlock, func(b *pscale.Block) error {
		_, err := pscale.AppendEntry(b, text, func(pscale.Address, *pscale.Node) string { return "" })
		return err
	})
	if err != nil {
		return []string{"auto-save to history failed: " + err.Error()}
	}
	return nil
}

// compressPending compresses the oldest history node an earlier auto-save
// had to leave uncompressed, one per exchange.
func (k *Kernel) compressPending(ctx context.Context) []string {
	b, err := k.Block(ctx, historyBlock)
	if err != nil {
		return nil
	}
	pending := pscale.Uncompressed(b)
	if len(pending) == 0 {
		return nil
	}
	if _, err := k.compress(ctx, historyBlock, pending[0], true); err != nil {
		return []string{fmt.Sprintf("history %s is still not compressed: %v", pending[0], err)}
	}
	return nil
}

// roomMargin is the room makeRoom keeps free in a growing block: enough for
// an entry, a compression and a growth.
const roomMargin = 4 << 10

// makeRoom moves a growing block's oldest compressed entries out (archive)
// while it is within roomMargin of the size limit, so the writes of an
// auto-save fit. It returns a note for each move.
func (k *Kernel) makeRoom(ctx context.Context, name string) []string {
	limit := k.maxBlockBytes()
	margin := min(roomMargin, limit/2)
	var notes []string
	for range maxCompressions {
		b, err := k.RawBlock(ctx, name)
		if err != nil || len(b.Data) <= limit-margin {
			return notes
		}
		moved, err := k.archive(ctx, name)
		if err != nil {
			return append(notes, fmt.Sprintf("%s is near the block size limit and nothing could move out: %v", name, err))
		}
		notes = append(notes, fmt.Sprintf("%s reached the block size limit: its oldest entries moved to block %s, at the same addresses", name, moved))
	}
	return notes
}

func (k *Kernel) maxBlockBytes() int {
	if k.opts.MaxBlockBytes > 0 {
		return k.opts.MaxBlockBytes
	}
	return store.DefaultMaxBlockBytes
}

// archive keeps a growing block under the size limit: it moves the oldest
// compressed node out into a new block of its own (moveOut), NAME-N, and
// returns the new block's name.
func (k *Kernel) archive(ctx context.Context, name string) (string, error) {
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
