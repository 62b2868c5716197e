package pscale

import (
	"errors"
	"fmt"
	"strings"
)

// Step is one node of a spindle.
type Step struct {
	Pscale int    `json:"pscale"`
	Digit  string `json:"digit"`
	Text   string `json:"text"`
}

// Entry is one node of a list that ring, dir, disc and star answer: its
// address (written with the dot after the block's place digits, as
// AppendEntry writes them), its pscale and its text. A branch's text is its
// own "_" ("" when it has none); Branch says there is more below it.
type Entry struct {
	Address string `json:"address"`
	Pscale  int    `json:"pscale"`
	Text    string `json:"text"`
	Branch  bool   `json:"branch,omitempty"`
	Ref     *Ref   `json:"ref,omitempty"` // star: the node the entry names
}

// Result is BSP's answer. Tree is set in block mode (the block's own tree,
// not a copy), Nodes in spindle mode (highest pscale first), Point in point
// mode and, in star mode, for the node whose references Entries lists.
// Entries holds ring's siblings, dir's nodes (layer by layer), disc's nodes
// (in address order) and star's references; Note says why a list is empty.
// Address is the address as written, for rendering; Pscale is the point
// a disc or dir was asked for.
type Result struct {
	Mode    Mode    `json:"mode"`
	Address string  `json:"address,omitempty"`
	Pscale  *int    `json:"pscale,omitempty"`
	Tree    *Node   `json:"tree,omitempty"`
	Nodes   []Step  `json:"nodes,omitempty"`
	Point   *Step   `json:"point,omitempty"`
	Entries []Entry `json:"entries,omitempty"`
	Note    string  `json:"note,omitempty"`
}

// PathError says where a walk left the tree: which digit was missing and
// which children the last node reached does have.
type PathError struct {
	Path     string // the address as written
	At       string // the node reached before the missing digit, dotted ("" is the tree root)
	Digit    int    // the digit that is not there
	Children []int  // digit keys present at At
	Leaf     bool   // At is a leaf string, so it has no children at all
}

func (e *PathError) Error() string {
	switch {
	case e.Leaf:
		at := e.At
		if at == "" {
			at = "the tree root"
		}
		return fmt.Sprintf("path %s: digit %d not present (%s is a leaf with no children)", e.Path, e.Digit, at)
	case len(e.Children) == 0:
		return fmt.Sprintf("path %s: digit %d not present (no children)", e.Path, e.Digit)
	}
	return fmt.Sprintf("path %s: digit %d not present (children: %s)", e.Path, e.Digit, joinInts(e.Children))
}

// ErrFull is wrapped by NextDigit when digits 1–9 of a node are all taken.
var ErrFull = errors.New("digits 1-9 all occupied: compress this node before adding to it")

// BSP is Block·Spindle·Point navigation (architecture spec §4.1), with the
// four further modes of the reference walker (ring, dir, disc, star).
//
//   - block: the full tree.
//   - spindle: every node from the tree root to the address, each with its
//     pscale, (Place−1)−index.
//   - point: the one node of that chain whose pscale is the query's.
//   - ring: the other children of the addressed node's parent.
//   - dir: the addressed node and every node below it, layer by layer,
//     down to the query's pscale when it has one.
//   - disc: every node of the block at the query's pscale.
//   - star: the addressed node, and the entries of its hidden directory
//     (the branch at its digit 0), each read as a reference where it is one.
//
// A walk that leaves the tree is a *PathError; a point that is not on the
// chain, a pscale above what the mode can reach, and a query that gives a
// mode more or less than it reads are errors that say so — never a silent
// fallback.
func BSP(b *Block, q Query) (Result, error) {
	if b == nil {
		return Result{}, errors.New("no block given")
	}
	mode, err := q.resolve()
	if err != nil {
		return Result{}, err
	}
	if mode == ModeBlock {
		return Result{Mode: ModeBlock, Tree: b.Tree}, nil
	}
	if b.Place < 1 {
		return Result{}, fmt.Errorf("place %d: a block's place must be at least 1; read blocks with Parse, which converts rendition blocks", b.Place)
	}
	if mode == ModeDisc {
		return disc(b, *q.Pscale)
	}
	addr := *q.Address
	nodes, err := walk(b, addr)
	if err != nil {
		return Result{}, err
	}
	switch mode {
	case ModeRing:
		return ring(b, addr, nodes), nil
	case ModeDir:
		return dir(b, addr, nodes[len(nodes)-1], q.Pscale)
	case ModeStar:
		return star(b, addr, nodes[len(nodes)-1]), nil
	}
	steps := make([]Step, len(nodes))
	for i, n := range nodes {
		steps[i] = Step{Pscale: (b.Place - 1) - i, Digit: addr.digits[i : i+1], Text: nodeText(n)}
	}
	if mode == ModeSpindle {
		return Result{Mode: ModeSpindle, Address: addr.text, Nodes: steps}, nil
	}
	point := *q.Pscale
	for i := range steps {
		if steps[i].Pscale == point {
			return Result{Mode: ModePoint, Address: addr.text, Point: &steps[i]}, nil
		}
	}
	hint := ""
	if last := steps[len(steps)-1].Pscale; point < last {
		hint = fmt.Sprintf("; for the nodes below it down to pscale %d, use dir", point)
	}
	return Result{}, fmt.Errorf("path %s: no pscale %d on this spindle (pscales: %s)%s", addr.text, point, pscalesOf(steps), hint)
}

func pscalesOf(steps []Step) string {
	ps := make([]int, len(steps))
	for i, s := range steps {
		ps[i] = s.Pscale
	}
	return joinInts(ps)
}

// walk returns the node reached by each digit of a, or a *PathError.
func walk(b *Block, a Address) ([]*Node, error) {
	if b == nil {
		return nil, errors.New("no block given")
	}
	if a.digits == "" {
		return nil, errEmptyAddress
	}
	nodes := make([]*Node, 0, len(a.digits))
	cur := b.Tree
	for i := 0; i < len(a.digits); i++ {
		d := int(a.digits[i] - '0')
		var next *Node
		if cur != nil && !cur.Leaf {
			next = cur.Children[d]
		}
		if next == nil {
			return nil, &PathError{
				Path:     a.text,
				At:       dotted(a.digits[:i]),
				Digit:    d,
				Children: cur.digits(),
				Leaf:     cur != nil && cur.Leaf,
			}
		}
		nodes = append(nodes, next)
		cur = next
	}
	return nodes, nil
}

// dotted writes digits with a dot between each, the form used for paths this
// package generates: it reads the same whatever the block's place.
func dotted(digits string) string {
	if digits == "" {
		return ""
	}
	var sb strings.Builder
	for i := 0; i < len(digits); i++ {
		if i > 0 {
			sb.WriteByte('.')
		}
		sb.WriteByte(digits[i])
	}
	return sb.String()
}

// NodeView is a node with one level of lookahead: its own text and the text
// of each child. A child branch with no text shows as "(branch)".
type NodeView struct {
	Path     string            `json:"path"`
	Content  string            `json:"content"`
	Children map[string]string `json:"children,omitempty"`
}

// Read returns the node at addr with its children's texts.
func Read(b *Block, addr Address) (NodeView, error) {
	nodes, err := walk(b, addr)
	if err != nil {
		return NodeView{}, err
	}
	n := nodes[len(nodes)-1]
	v := NodeView{Path: addr.text, Content: n.Text}
	for _, d := range n.digits() {
		if v.Children == nil {
			v.Children = map[string]string{}
		}
		c := n.Children[d]
		text := c.Text
		if !c.Leaf && text == "" {
			text = "(branch)"
		}
		v.Children[digitKey(d)] = text
	}
	return v, nil
}

// Write puts text at addr, creating the nodes on the way. A leaf on the way
// becomes a branch keeping its text as "_"; an existing branch at addr gets
// its "_" set and keeps its children; anything else at addr becomes a leaf.
// Write changes b in place.
func Write(b *Block, addr Address, text string) error {
	if b == nil {
		return errors.New("no block given")
	}
	if addr.digits == "" {
		return errEmptyAddress
	}
	if b.Tree == nil {
		b.Tree = &Node{}
	}
	toBranch(b.Tree)
	cur := b.Tree
	last := len(addr.digits) - 1
	for i := 0; i < last; i++ {
		d := addr.digits[i] - '0'
		if cur.Children[d] == nil {
			cur.Children[d] = &Node{}
		}
		cur = cur.Children[d]
		toBranch(cur)
	}
	d := addr.digits[last] - '0'
	if n := cur.Children[d]; n != nil && !n.Leaf {
		n.Text, n.HasText = text, true
		return nil
	}
	cur.Children[d] = &Node{Leaf: true, Text: text}
	return nil
}

func toBranch(n *Node) {
	if n.Leaf {
		n.Leaf, n.HasText = false, true
	}
}

// NextDigit returns the first of digits 1–9 not yet used under addr, where a
// new entry can go. A leaf answers 1 (Write turns it into a branch). A node
// with all nine taken returns an error wrapping ErrFull. Digit 0 is never
// offered: it is not an entry slot.
func NextDigit(b *Block, addr Address) (int, error) {
	nodes, err := walk(b, addr)
	if err != nil {
		return 0, err
	}
	n := nodes[len(nodes)-1]
	if n.Leaf {
		return 1, nil
	}
	for d := 1; d <= 9; d++ {
		if n.Children[d] == nil {
			return d, nil
		}
	}
	return 0, fmt.Errorf("path %s: %w", addr.text, ErrFull)
}

// NeedsCompression reports whether digits 1–9 under addr are all occupied.
func NeedsCompression(b *Block, addr Address) (bool, error) {
	nodes, err := walk(b, addr)
	if err != nil {
		return false, err
	}
	n := nodes[len(nodes)-1]
	if n.Leaf {
		return false, nil
	}
	for d := 1; d <= 9; d++ {
		if n.Children[d] == nil {
			return false, nil
		}
	}
	return true, nil
}

// Phrase is one node of Resolve's phrase-level view.
type Phrase struct {
	Path     string   `json:"path"`
	Text     string   `json:"text"`
	Children []Phrase `json:"children,omitempty"`
}

// DefaultResolveDepth is the depth Resolve uses when given 0 or less, as the
// original kernel did.
const DefaultResolveDepth = 3

// Resolve is the phrase-level view of a block: the text of every node down to
// depth levels below the tree root (the root is level 0, tree["0"] level 1),
// children in digit order. Paths are dotted per digit ("0.1.2").
func Resolve(b *Block, depth int) Phrase {
	if depth <= 0 {
		depth = DefaultResolveDepth
	}
	if b == nil || b.Tree == nil {
		return Phrase{}
	}
	return resolve(b.Tree, "", 0, depth)
}

func resolve(n *Node, path string, level, depth int) Phrase {
	p := Phrase{Path: path, Text: n.Text}
	if level == depth {
		return p
	}
	for _, d := range n.digits() {
		p.Children = append(p.Children, resolve(n.Children[d], joinPath(path, digitKey(d)), level+1, depth))
	}
	return p
}
