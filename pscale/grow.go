package pscale

import (
	"errors"
	"fmt"
	"strings"
)

// A block that accumulates (history, stash) takes its entries one after
// another at pscale −1 and grows by compression (clean-build spec, the
// Memory block): when a node's digits 1–9 are full, its nine children are
// compressed into its own text and the next node opens beside it; when the
// top node itself is full, the block grows upward.
//
// The top node, tree["0"], keeps the block's description at every size.
// Growing makes a new top node that carries that description, moves the old
// top node under it as digit 1 with the compression of its nine children
// as its text, and raises the place by one. Every node keeps its pscale, so
// an old address gains a 1 after its first digit (history 0.3 becomes
// history 01.3). At place P the block holds 9^P entries, the newest at the
// end of the chain of highest digits from the top (the live edge).

// TopAddress is the address of a block's top node, tree["0"].
const TopAddress = "0"

// FullError is AppendEntry's answer when a full node stands in the way: its
// digits 1–9 are all taken and it has no text yet (it was never
// compressed), or it is the top node, which only compressing can make room
// in (by growing the block). It wraps ErrFull.
type FullError struct {
	Path Address // the full node
	Top  bool    // the node is the block's top: compressing it grows the block
}

func (e *FullError) Error() string {
	if e.Top {
		return fmt.Sprintf("node %s, the block's top, has digits 1-9 full: compress it (the block then grows by one level and writing goes on)", e.Path)
	}
	return fmt.Sprintf("node %s has digits 1-9 full and is not compressed yet: compress it, then the next node opens", e.Path)
}

func (e *FullError) Unwrap() error { return ErrFull }

// PassFunc gives the text of a full node that AppendEntry moves past without
// a compression (a label, or "" to leave it without text).
type PassFunc func(addr Address, n *Node) string

// AppendEntry adds text as the newest entry of a block, at pscale −1 on the
// live edge (see above), and returns its address, written with the point
// after the block's place digits ("0.3", "01.3"). It opens the next node,
// and grows the block, as fullness requires. A full node that has no text,
// and a full top node, are compressed first: with pass nil AppendEntry
// returns a *FullError naming the node and changes nothing; with pass set,
// that node gets pass's text and the append goes on (the top is grown with
// it). A leaf met on the edge is a closed node: the next one opens beside it.
func AppendEntry(b *Block, text string, pass PassFunc) (Address, error) {
	for grown := 0; ; grown++ {
		addr, full, err := appendEntry(b, text, pass)
		if err != nil || full == nil {
			return addr, err
		}
		// Only the top can be full here: growing makes room at its digit 2.
		if grown > 0 {
			return Address{}, fmt.Errorf("block did not make room after growing: %w", full)
		}
		if err := Grow(b, pass(full.Path, b.Tree.Children[0])); err != nil {
			return Address{}, err
		}
	}
}

// appendEntry makes one attempt: it returns the entry's address, or a full
// top node (with pass set) for AppendEntry to grow.
func appendEntry(b *Block, text string, pass PassFunc) (Address, *FullError, error) {
	if b == nil {
		return Address{}, nil, errors.New("no block given")
	}
	if b.Place < 1 {
		return Address{}, nil, fmt.Errorf("place %d: a block's place must be at least 1", b.Place)
	}
	if b.Tree == nil {
		b.Tree = &Node{}
	}
	toBranch(b.Tree)
	if b.Tree.Children[0] == nil {
		b.Tree.Children[0] = &Node{}
	}
	// The edge: from the top, the newest (highest-digit) child at each
	// level down to the node whose children are entries, or to a leaf or
	// an empty node on the way.
	levels := b.Place - 1
	path := []*Node{b.Tree.Children[0]}
	digits := TopAddress
	for len(path) <= levels {
		n := path[len(path)-1]
		d := newest(n)
		if d == 0 {
			break
		}
		path = append(path, n.Children[d])
		digits += digitKey(d)
	}
	for i := len(path) - 1; i >= 0; i-- {
		n := path[i]
		if n.Leaf && i > 0 {
			continue // a closed node: open the next one beside it
		}
		toBranch(n)
		slot := freeDigit(n)
		if slot == 0 {
			at := placed(b.Place, digits[:i+1])
			switch {
			case i == 0 && pass == nil:
				return Address{}, nil, &FullError{Path: at, Top: true}
			case i == 0:
				return Address{}, &FullError{Path: at, Top: true}, nil
			case n.Text != "":
			case pass == nil:
				return Address{}, nil, &FullError{Path: at}
			default:
				n.Text = pass(at, n)
				n.HasText = n.Text != ""
			}
			continue
		}
		// Open the slot; below the entry level, a chain of new nodes leads
		// down to the entry at digit 1 of the newest.
		at := digits[:i+1] + digitKey(slot)
		cur := n
		for level := i; level < levels; level++ {
			next := &Node{}
			cur.Children[slot] = next
			cur, slot = next, 1
			if level > i {
				at += "1"
			}
		}
		cur.Children[slot] = &Node{Leaf: true, Text: text}
		if levels > i {
			at += "1"
		}
		return placed(b.Place, at), nil, nil
	}
	return Address{}, nil, errors.New("no node on the edge can take an entry") // not reached: the top always decides
}

// Grow raises the block by one level: a new top node keeps the old top's
// text (the block's description) and its other keys, and the old top node
// becomes its digit 1 with text as its own text (the compression of its
// children). The place rises by one, so every node keeps its pscale. A
// block with nodes beside its top (tree digits other than 0) cannot grow:
// they would have no place in the grown tree.
func Grow(b *Block, text string) error {
	if b == nil || b.Tree == nil || b.Tree.Leaf || b.Tree.Children[0] == nil {
		return errors.New(`the block has no top node (tree["0"]) to grow from`)
	}
	if ds := b.Tree.digits(); len(ds) > 1 {
		return fmt.Errorf("the block has nodes beside its top (tree digits %s): it cannot grow; compress a node below the top instead", joinInts(ds))
	}
	old := b.Tree.Children[0]
	top := &Node{Text: old.Text, HasText: old.HasText || old.Leaf || old.Text != "", Extra: old.Extra}
	if old.Leaf {
		old = &Node{}
	}
	old.Leaf, old.Text, old.HasText, old.Extra = false, text, text != "", nil
	top.Children[1] = old
	b.Tree.Children[0] = top
	b.Place++
	return nil
}

// Uncompressed lists the nodes below the top whose digits 1–9 are full and
// that have no text (an append moved past them without a compression),
// oldest first.
func Uncompressed(b *Block) []Address {
	if b == nil || b.Tree == nil || b.Tree.Leaf || b.Tree.Children[0] == nil {
		return nil
	}
	var out []Address
	var visit func(n *Node, digits string)
	visit = func(n *Node, digits string) {
		for _, d := range n.digits() {
			c := n.Children[d]
			if c.Leaf {
				continue
			}
			visit(c, digits+digitKey(d))
			if freeDigit(c) == 0 && c.Text == "" {
				out = append(out, placed(b.Place, digits+digitKey(d)))
			}
		}
	}
	visit(b.Tree.Children[0], TopAddress)
	return out
}

// newest is the highest of digits 1–9 on n, 0 when it has none.
func newest(n *Node) int {
	if n == nil || n.Leaf {
		return 0
	}
	for d := 9; d >= 1; d-- {
		if n.Children[d] != nil {
			return d
		}
	}
	return 0
}

// freeDigit is the first of digits 1–9 not taken on n, 0 when all are.
func freeDigit(n *Node) int {
	for d := 1; d <= 9; d++ {
		if n.Children[d] == nil {
			return d
		}
	}
	return 0
}

// placed makes an address of digits, written with the point after the
// block's place digits: "0.3" at place 1, "01.3" at place 2, "01" for a
// node above the point.
func placed(place int, digits string) Address {
	text := digits
	if len(digits) > place {
		text = digits[:place] + "." + digits[place:]
	}
	return Address{text: text, digits: digits}
}

// PlacedAddress writes digits as an address of a block with this place:
// the point after the place digits ("0123" at place 2 is "01.23").
func PlacedAddress(place int, digits string) (Address, error) {
	if strings.Trim(digits, "0123456789") != "" || digits == "" {
		return Address{}, fmt.Errorf("address digits %q: want one or more digits", digits)
	}
	return placed(place, digits), nil
}
