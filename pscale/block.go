package pscale

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/llmkernels/kernels/internal/plainjson"
)

// Block is a pscale block in its canonical shape, {"place": N, "tree": {"0": …}}.
//
// Place counts the digits before the decimal point of the block's addresses:
// the digit at index i of an address has pscale (Place−1)−i. Tree is the
// root object; for a place-1 block all content nests under Tree.Children[0].
// Extra holds every other top-level field (fork, sign, tuning, anything
// unknown) verbatim; it never holds place, decimal or tree.
//
// Block marshals itself (see MarshalJSON); the tags say which names it uses.
type Block struct {
	Place int                        `json:"place"`
	Tree  *Node                      `json:"tree"`
	Extra map[string]json.RawMessage `json:"-"`
}

// Parse reads a block in any of the shapes hermitcrab blocks have had and
// returns it in the canonical shape, with a sentence saying what conversion
// was made ("" when the input was already canonical):
//
//   - {"place": N, "tree": {"0": …}}: canonical.
//   - {"decimal": N, "tree": …}: decimal is a synonym of place.
//   - place or decimal 0 (a rendition block, root text at tree._): the tree
//     moves under "0" and place becomes 1; addresses (0.x) are unchanged.
//   - {"tuning": "88", "tree": {"_": …}} with no place: the tree moves under
//     "0" and place becomes (digits before the tuning's point)+1, so pscales
//     are unchanged and old addresses gain a leading 0 (1.2 becomes 0.1.2).
//   - no place, decimal or tuning: a tree holding "0" is a place-1 tree;
//     any other tree is a root node and moves under "0" of a place-1 block.
//   - a bare tree (an object with "_" or digit keys and no "tree" field) is
//     read as the tree of a block with no place, by the rule above.
func Parse(data []byte) (*Block, string, error) {
	v, err := decodeValue(data)
	if err != nil {
		return nil, "", fmt.Errorf("block is %w", err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, "", fmt.Errorf(`block is %s; want an object like {"place": 1, "tree": {"0": {"_": "…"}}}`, kind(v))
	}
	return fromObject(obj)
}

// UnmarshalJSON reads any shape Parse accepts and drops the conversion note.
func (b *Block) UnmarshalJSON(data []byte) error {
	nb, _, err := Parse(data)
	if err != nil {
		return err
	}
	*b = *nb
	return nil
}

// MarshalJSON writes {"place": N, …Extra sorted…, "tree": …}: the small
// fields first so a reader sees them before a long tree.
func (b *Block) MarshalJSON() ([]byte, error) {
	if b.Place < 1 {
		return nil, fmt.Errorf(`place %d: a block's place must be at least 1 (a rendition block is place 1 with its root at tree["0"])`, b.Place)
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, `{"place":%d`, b.Place)
	for _, k := range slices.Sorted(maps.Keys(b.Extra)) {
		if k == "place" || k == "decimal" || k == "tree" {
			continue
		}
		buf.WriteByte(',')
		appendString(&buf, k)
		buf.WriteByte(':')
		buf.Write(b.Extra[k])
	}
	buf.WriteString(`,"tree":`)
	appendNode(&buf, b.Tree)
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

func fromObject(obj map[string]any) (*Block, string, error) {
	treeV, hasTree := obj["tree"]
	placeV, hasPlace := obj["place"]
	decV, hasDecimal := obj["decimal"]
	tuningV, hasTuning := obj["tuning"]

	if !hasTree {
		if hasPlace || hasDecimal || hasTuning {
			return nil, "", errors.New(`block has no "tree" field: put the nodes under "tree", e.g. {"place": 1, "tree": {"0": {"_": "…"}}}`)
		}
		if !hasTreeKeys(obj) {
			return nil, "", fmt.Errorf(`not a pscale block: no "tree" field and no "_" or digit keys (keys: %s)`, strings.Join(slices.Sorted(maps.Keys(obj)), ", "))
		}
		b, note, err := noPlace(obj, nil)
		if err != nil {
			return nil, "", err
		}
		return b, "bare tree: " + note, nil
	}

	extra, err := extraFields(obj)
	if err != nil {
		return nil, "", err
	}

	switch {
	case hasPlace || hasDecimal:
		place, note, err := placeOf(placeV, hasPlace, decV, hasDecimal)
		if err != nil {
			return nil, "", err
		}
		if place == 0 {
			root, err := decodeNode(treeV, "")
			if err != nil {
				return nil, "", err
			}
			return wrapped(root, 1, extra), note + `rendition: root moved from tree._ to tree["0"], place 1; addresses (0.x) walk as before`, nil
		}
		tree, err := decodeNode(treeV, "")
		if err != nil {
			return nil, "", err
		}
		if tree.Leaf {
			return nil, "", fmt.Errorf(`tree is a string; a place-%d block's tree must be an object holding its root at "0"`, place)
		}
		return &Block{Place: place, Tree: tree, Extra: extra}, strings.TrimSuffix(note, "; "), nil
	case hasTuning:
		d, err := tuningDigits(tuningV)
		if err != nil {
			return nil, "", err
		}
		root, err := decodeNode(treeV, "")
		if err != nil {
			return nil, "", err
		}
		return wrapped(root, d+1, extra), fmt.Sprintf(`tuning %s: root moved from tree._ to tree["0"], place %d; pscales are unchanged and old addresses gain a leading 0 (1.2 is now 0.1.2)`, show(tuningV), d+1), nil
	default:
		return noPlace(treeV, extra)
	}
}

// noPlace reads a tree given with no place, decimal or tuning. A tree holding
// "0" is the v2 shape with its place left out (the original kernel read a
// missing place as 1). Any other tree is rooted at its own "_", as the later
// upstream blocks were, and is wrapped under "0".
func noPlace(treeV any, extra map[string]json.RawMessage) (*Block, string, error) {
	tree, err := decodeNode(treeV, "")
	if err != nil {
		return nil, "", err
	}
	if !tree.Leaf && tree.Children[0] != nil {
		return &Block{Place: 1, Tree: tree, Extra: extra}, `no place given: tree holds "0", read as place 1`, nil
	}
	return wrapped(tree, 1, extra), `no place given and no "0" key: root moved from tree._ to tree["0"], place 1; address 0.x reaches its digit x`, nil
}

func wrapped(root *Node, place int, extra map[string]json.RawMessage) *Block {
	t := &Node{}
	t.Children[0] = root
	return &Block{Place: place, Tree: t, Extra: extra}
}

// placeOf reconciles place and decimal. The note ends in "; " so that a
// rendition note can follow it.
func placeOf(placeV any, hasPlace bool, decV any, hasDecimal bool) (int, string, error) {
	var place, dec int
	if hasPlace {
		p, ok := wholeNumber(placeV)
		if !ok || p < 0 {
			return 0, "", fmt.Errorf("place %s: want a whole number, 0 or more (the digits before the decimal point)", show(placeV))
		}
		place = p
	}
	if hasDecimal {
		d, ok := wholeNumber(decV)
		if !ok || d < 0 {
			return 0, "", fmt.Errorf("decimal %s: want a whole number, 0 or more (the digits before the decimal point)", show(decV))
		}
		dec = d
	}
	switch {
	case hasPlace && hasDecimal && place != dec:
		return 0, "", fmt.Errorf("block has place %d and decimal %d: they name the same thing; keep one", place, dec)
	case hasPlace && hasDecimal:
		return place, fmt.Sprintf("decimal %d dropped (same as place); ", dec), nil
	case hasDecimal:
		return dec, fmt.Sprintf("decimal %d read as place; ", dec), nil
	}
	return place, "", nil
}

// tuningDigits is how many digits a tuning fork has before its point: "88"
// and "74.45" have 2, "8" has 1, "0.5" has 0 — the depth of pscale 0 below
// the root in the upstream kernel that introduced tuning.
func tuningDigits(v any) (int, error) {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case json.Number:
		s = string(x)
	default:
		return 0, fmt.Errorf(`tuning is %s; want a number or a string such as "88" or "0.5"`, kind(v))
	}
	intPart, _, _ := strings.Cut(strings.TrimSpace(s), ".")
	for _, r := range intPart {
		if r < '0' || r > '9' {
			return 0, fmt.Errorf(`tuning %q: %q is not a digit; want a number such as "88" or "0.5"`, s, r)
		}
	}
	if intPart == "" || intPart == "0" {
		return 0, nil
	}
	return len(intPart), nil
}

func hasTreeKeys(obj map[string]any) bool {
	for k := range obj {
		if k == "_" || isDigitKey(k) {
			return true
		}
	}
	return false
}

func extraFields(obj map[string]any) (map[string]json.RawMessage, error) {
	var extra map[string]json.RawMessage
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		if k == "place" || k == "decimal" || k == "tree" {
			continue
		}
		raw, err := plainjson.Marshal(obj[k])
		if err != nil {
			return nil, fmt.Errorf("block field %q: %w", k, err)
		}
		if extra == nil {
			extra = map[string]json.RawMessage{}
		}
		extra[k] = raw
	}
	return extra, nil
}
