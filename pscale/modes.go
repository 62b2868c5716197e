package pscale

import (
	"fmt"
	"strings"
	"unicode"
)

// The four modes the reference walker (pscale-commons/bsp-mcp-server) added
// to block, spindle and point. They answer lists of Entry. The reference's
// blocks keep a node's text and its digit 0 in one key, "_"; here a node's
// text is "_" and digit 0 is the key "0", a node like any other, so the
// reference's hidden directory (an object at "_") is the branch at "0".

// entryOf describes the node at digits (a walk from the tree root).
func entryOf(place int, digits string, n *Node) Entry {
	return Entry{
		Address: placed(place, digits).text,
		Pscale:  place - len(digits),
		Text:    n.Text,
		Branch:  len(n.digits()) > 0,
	}
}

// ring lists the other children of the addressed node's parent, in digit
// order; the node itself is not among them.
func ring(b *Block, addr Address, nodes []*Node) Result {
	parent := b.Tree
	if len(nodes) > 1 {
		parent = nodes[len(nodes)-2]
	}
	prefix, own := addr.digits[:len(addr.digits)-1], int(addr.digits[len(addr.digits)-1]-'0')
	r := Result{Mode: ModeRing, Address: addr.text}
	for _, d := range parent.digits() {
		if d != own {
			r.Entries = append(r.Entries, entryOf(b.Place, prefix+digitKey(d), parent.Children[d]))
		}
	}
	if len(r.Entries) == 0 {
		r.Note = fmt.Sprintf("%s has no siblings", addr.text)
	}
	return r
}

// dir lists the node at addr and every node below it, one layer after
// another (each in digit order), down to pscale bound when there is one.
func dir(b *Block, addr Address, end *Node, bound *int) (Result, error) {
	top := b.Place - len(addr.digits)
	if bound != nil && *bound > top {
		return Result{}, fmt.Errorf("path %s is at pscale %d: dir lists it and what is below it, so the point must be %d or lower, not %d", addr.text, top, top, *bound)
	}
	type item struct {
		n      *Node
		digits string
	}
	r := Result{Mode: ModeDir, Address: addr.text, Pscale: bound}
	layer := []item{{end, addr.digits}}
	for ps := top; len(layer) > 0 && (bound == nil || ps >= *bound); ps-- {
		var next []item
		for _, it := range layer {
			r.Entries = append(r.Entries, entryOf(b.Place, it.digits, it.n))
			for _, d := range it.n.digits() {
				next = append(next, item{it.n.Children[d], it.digits + digitKey(d)})
			}
		}
		layer = next
	}
	return r, nil
}

// disc lists every node of the block at pscale ps, in address order.
func disc(b *Block, ps int) (Result, error) {
	top := b.Place - 1
	if ps > top {
		return Result{}, fmt.Errorf("pscale %d is above this block's top: at place %d its nodes run from pscale %d down", ps, b.Place, top)
	}
	r := Result{Mode: ModeDisc, Pscale: &ps}
	deepest, seen := top, false
	var visit func(n *Node, digits string)
	visit = func(n *Node, digits string) {
		p := b.Place - len(digits)
		seen, deepest = true, min(deepest, p)
		if p == ps {
			r.Entries = append(r.Entries, entryOf(b.Place, digits, n))
			return
		}
		for _, d := range n.digits() {
			visit(n.Children[d], digits+digitKey(d))
		}
	}
	for _, d := range b.Tree.digits() {
		visit(b.Tree.Children[d], digitKey(d))
	}
	switch {
	case !seen:
		r.Note = "the block has no nodes"
	case len(r.Entries) == 0:
		r.Note = fmt.Sprintf("no nodes at pscale %d: the deepest are at %d", ps, deepest)
	}
	return r, nil
}

// star shows the node at addr (as Point) and lists the entries of its
// hidden directory, the branch at its digit 0: each entry at digits 1–9,
// with Ref set where its text names a node (see ParseRef).
func star(b *Block, addr Address, end *Node) Result {
	r := Result{Mode: ModeStar, Address: addr.text, Point: &Step{
		Pscale: b.Place - len(addr.digits),
		Digit:  addr.digits[len(addr.digits)-1:],
		Text:   end.Text,
	}}
	var hidden *Node
	if !end.Leaf {
		hidden = end.Children[0]
	}
	switch {
	case hidden == nil:
		r.Note = fmt.Sprintf("%s keeps no references: it has no hidden directory (a branch at its digit 0)", addr.text)
		return r
	case hidden.Leaf:
		r.Note = fmt.Sprintf("%s keeps no references: its digit 0 is a leaf, not a directory", addr.text)
		return r
	}
	base := addr.digits + "0"
	for _, d := range hidden.digits() {
		if d == 0 {
			continue
		}
		e := entryOf(b.Place, base+digitKey(d), hidden.Children[d])
		if ref, ok := ParseRef(e.Text); ok {
			e.Ref = &ref
		}
		r.Entries = append(r.Entries, e)
	}
	if len(r.Entries) == 0 {
		r.Note = fmt.Sprintf("%s keeps no references: its hidden directory has no entries at digits 1-9", addr.text)
	}
	return r
}

// Ref is a node named by another: "ADDRESS" names one of the same block,
// "BLOCK:ADDRESS" one of another block. Text and Error are filled in by
// ResolveRefs.
type Ref struct {
	Block   string `json:"block,omitempty"` // "" is the block the reference sits in
	Address string `json:"address"`
	Text    string `json:"text,omitempty"`  // the text of the node named
	Error   string `json:"error,omitempty"` // why that node cannot be read
}

// ParseRef reads a reference: an address (digits and dots) or a block name
// (no space, no colon) and an address joined by a colon, space around it
// trimmed. Any other text is not a reference.
func ParseRef(s string) (Ref, bool) {
	s = strings.TrimSpace(s)
	name, text, found := strings.Cut(s, ":")
	if !found {
		name, text = "", s
	} else if name == "" || strings.ContainsFunc(name, unicode.IsSpace) {
		return Ref{}, false
	}
	a, err := parseAddressText(text)
	if err != nil {
		return Ref{}, false
	}
	return Ref{Block: name, Address: a.text}, true
}

// ResolveRefs reads the node each reference of a star result names and
// puts its text, or why it cannot be read, on the reference. load returns
// a block by name; "" asks for the block the star read.
func ResolveRefs(r *Result, load func(name string) (*Block, error)) {
	for i := range r.Entries {
		ref := r.Entries[i].Ref
		if ref == nil {
			continue
		}
		b, err := load(ref.Block)
		if err == nil {
			var a Address
			var nodes []*Node
			if a, err = parseAddressText(ref.Address); err == nil {
				nodes, err = walk(b, a)
			}
			if err == nil {
				ref.Text = nodes[len(nodes)-1].Text
			}
		}
		if err != nil {
			ref.Error = err.Error()
		}
	}
}
