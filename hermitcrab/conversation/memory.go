package conversation

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/llmkernels/kernels/hermitcrab/blocks"
	"github.com/llmkernels/kernels/hermitcrab/prompt"
	"github.com/llmkernels/kernels/hermitcrab/store"
	"github.com/llmkernels/kernels/internal/clip"
	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/pscale"
)

// historyBlock is where the kernel auto-saves each exchange (§8.4).
const historyBlock = "history"

// SummaryChars is how much of a reply auto-save keeps (§8.4), and a
// wake's record of its reply.
const SummaryChars = 500

// maxCompressions bounds the compressions one append may need: one per
// level of a block, and the top's growth.
const maxCompressions = 16

// errUnchanged aborts an edit that turned out to have nothing to do.
var errUnchanged = errors.New("nothing to change")

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

// Compress asks the light tier whether the nine entries under addr form a
// summary or an emergence, and writes its text as that node's own text.
// The nine entries stay. When the node is the block's top, whose text is
// the block's description, the block grows instead (pscale.Grow): the
// description stays on a new top and the compression goes on the old top,
// now its digit 1, so writing can go on.
func (c *Caller) Compress(ctx context.Context, name string, addr pscale.Address) (Compression, error) {
	return c.compress(ctx, name, addr, false)
}

// compress is Compress; auto (the kernel's own, for auto-save) leaves a
// node alone that someone compressed in the meantime, where the LLM's own
// compress writes its text anyway.
func (c *Caller) compress(ctx context.Context, name string, addr pscale.Address, auto bool) (Compression, error) {
	client := c.llmClient(ctx, prompt.Light)
	if client == nil {
		return Compression{}, ErrNoClient
	}
	b, err := c.blocks.Block(ctx, name)
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
	if blocks.IsTop(addr) {
		fmt.Fprintf(&entries, "Block %q, its top node (the block's description: %s). Compress its nine entries; the description stays.\n", name, view.Content)
	} else {
		fmt.Fprintf(&entries, "Block %q, node %s: %s\n", name, addr, view.Content)
	}
	for d := 1; d <= 9; d++ {
		fmt.Fprintf(&entries, "%d: %s\n", d, view.Children[fmt.Sprint(d)])
	}
	params, err := c.tierParams(c.blocks.Source(ctx), prompt.Light)
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
	_, err = c.blocks.Edit(ctx, name, func(b *pscale.Block) error {
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
		case blocks.IsTop(addr):
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
func (c *Caller) autoSave(ctx context.Context, text string) []string {
	text = strings.TrimSpace(text)
	if text == "" {
		return nil
	}
	text = clip.Text(text, SummaryChars)
	notes := c.blocks.MakeRoom(ctx, historyBlock)
	for range maxCompressions {
		_, err := c.blocks.WriteEntry(ctx, historyBlock, pscale.Address{}, text)
		var full *pscale.FullError
		switch {
		case err == nil:
			return append(notes, c.compressPending(ctx)...)
		case errors.As(err, &full):
			if _, cerr := c.compress(ctx, historyBlock, full.Path, true); cerr != nil {
				notes = append(notes, fmt.Sprintf("history %s is full and could not be compressed (%v): this exchange is saved after it; a later exchange compresses it", full.Path, cerr))
				return append(notes, c.savePast(ctx, text)...)
			}
		case errors.Is(err, store.ErrTooLarge):
			moved, aerr := c.blocks.Archive(ctx, historyBlock)
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
func (c *Caller) savePast(ctx context.Context, text string) []string {
	_, err := c.blocks.Edit(ctx, historyBlock, func(b *pscale.Block) error {
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
func (c *Caller) compressPending(ctx context.Context) []string {
	b, err := c.blocks.Block(ctx, historyBlock)
	if err != nil {
		return nil
	}
	pending := pscale.Uncompressed(b)
	if len(pending) == 0 {
		return nil
	}
	if _, err := c.compress(ctx, historyBlock, pending[0], true); err != nil {
		return []string{fmt.Sprintf("history %s is still not compressed: %v", pending[0], err)}
	}
	return nil
}
