package pscale

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/llmkernels/kernels/internal/clip"
)

// RenderSection formats a BSP result as one system-prompt section, in the
// forms the original kernel's prompt compiler produced (spec §5.3; sections
// are joined with a blank line by the caller):
//
//	block:   "[name]\n" then the tree as indented text
//	spindle: "[name 0.12]\n  [0] text\n  [-1] text\n  [-2] text"
//	point:   "[name 0.12 -1] text"
//
// The address is shown as written, so "wake 0.9.4" is headed [wake 0.9.4].
func RenderSection(name string, r Result) string {
	switch r.Mode {
	case ModeBlock:
		return "[" + name + "]\n" + renderTree(r.Tree)
	case ModeSpindle:
		lines := make([]string, len(r.Nodes))
		for i, n := range r.Nodes {
			lines[i] = "  [" + strconv.Itoa(n.Pscale) + "] " + n.Text
		}
		return "[" + name + " " + r.Address + "]\n" + strings.Join(lines, "\n")
	case ModePoint:
		if r.Point == nil {
			return ""
		}
		return "[" + name + " " + r.Address + " " + strconv.Itoa(r.Point.Pscale) + "] " + r.Point.Text
	}
	return ""
}

// RenderAperture formats the prompt's fallback line for a block, used when
// there are no tier instructions: "[name] " and the text of tree["0"], the
// block's pscale-0 root (for place > 1 it is the root all the same).
func RenderAperture(name string, b *Block) string {
	text := ""
	if b != nil && b.Tree != nil && !b.Tree.Leaf {
		if root := b.Tree.Children[0]; root != nil {
			text = root.Text
		}
	}
	return "[" + name + "] " + text
}

// renderTree writes a tree as indented text, two spaces per level: a
// branch's "_" text on its own line, each leaf child as "d: text", each branch
// child as "d:" followed by the child one level deeper. Digit keys come in
// numeric order; other keys follow, sorted, as "key: value". An empty "_" is
// not written, as the original kernel skipped it.
func renderTree(n *Node) string {
	var lines []string
	var render func(n *Node, depth int)
	render = func(n *Node, depth int) {
		indent := strings.Repeat("  ", depth)
		if n.Leaf {
			lines = append(lines, indent+n.Text)
			return
		}
		if n.Text != "" {
			lines = append(lines, indent+n.Text)
		}
		for _, d := range n.digits() {
			c := n.Children[d]
			if c.Leaf {
				lines = append(lines, indent+digitKey(d)+": "+c.Text)
				continue
			}
			lines = append(lines, indent+digitKey(d)+":")
			render(c, depth+1)
		}
		for _, k := range slices.Sorted(maps.Keys(n.Extra)) {
			lines = append(lines, indent+k+": "+extraText(n.Extra[k]))
		}
	}
	if n != nil {
		render(n, 0)
	}
	return strings.Join(lines, "\n")
}

// extraText shows a preserved value: a string as itself, anything else as JSON.
func extraText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// Sizes of the narrative view: how many of the newest entries it shows, and
// where it cuts a line (the whole text stays in the block, for BSP).
const (
	NarrativeEntries   = 3
	narrativeEntryClip = 500
	narrativeLineClip  = 300
)

// RenderNarrative formats a block that grows by compression (see
// AppendEntry) as one system-prompt section whose size does not grow with
// the number of entries: "[name]", the top node's text, then along the live
// edge each level's older nodes as their compressed text, and at the end
// the newest NarrativeEntries entries, with a line saying where the earlier
// ones are. Long lines are cut with "…"; BSP reads every node in full.
func RenderNarrative(name string, b *Block) string {
	if b == nil || b.Tree == nil || b.Tree.Leaf || b.Tree.Children[0] == nil {
		return "[" + name + "]"
	}
	top := b.Tree.Children[0]
	lines := []string{"[" + name + "]"}
	if top.Text != "" {
		lines = append(lines, clip.Line(top.Text, narrativeEntryClip))
	}
	n, digits := top, TopAddress
	for level := 0; !n.Leaf; level++ {
		d := newest(n)
		if d == 0 {
			break
		}
		indent := strings.Repeat("  ", level)
		ds := n.digits()
		if level >= b.Place-1 || n.Children[d].Leaf {
			// The node whose children are entries: the newest few.
			var entries []int
			for _, c := range ds {
				if c != 0 {
					entries = append(entries, c)
				}
			}
			if skip := len(entries) - NarrativeEntries; skip > 0 {
				what := "entries"
				if skip == 1 {
					what = "entry"
				}
				lines = append(lines, fmt.Sprintf("%s(%d earlier %s: bsp %s %s)", indent, skip, what, name, placed(b.Place, digits)))
				entries = entries[skip:]
			}
			for _, c := range entries {
				lines = append(lines, indent+digitKey(c)+": "+clip.Line(nodeText(n.Children[c]), narrativeEntryClip))
			}
			break
		}
		for _, c := range ds {
			if c == 0 || c == d {
				continue
			}
			text := n.Children[c].Text
			if text == "" {
				text = fmt.Sprintf("(not compressed yet: bsp %s %s)", name, placed(b.Place, digits+digitKey(c)))
			}
			lines = append(lines, indent+digitKey(c)+": "+clip.Line(text, narrativeLineClip))
		}
		lines = append(lines, indent+digitKey(d)+":")
		n, digits = n.Children[d], digits+digitKey(d)
		if n.Text != "" {
			lines = append(lines, indent+"  "+clip.Line(n.Text, narrativeLineClip))
		}
	}
	return strings.Join(lines, "\n")
}
