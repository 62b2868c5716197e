package pscale

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
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
