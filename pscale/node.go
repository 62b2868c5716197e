package pscale

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/llmkernels/kernels/internal/plainjson"
)

// Node is one node of a block's tree. In JSON a node is either a string (a
// leaf) or an object whose "_" holds the node's text and whose keys "0".."9"
// hold its children. Any other key of an object node is kept verbatim in Extra
// so that a round trip loses nothing.
type Node struct {
	// Leaf is true when the node is a plain JSON string; Text is then the
	// whole node.
	Leaf bool
	// Text is the leaf string, or the "_" text of a branch.
	Text string
	// HasText says whether a branch carries "_" at all, so that {"1": …} and
	// {"_": "", "1": …} both survive a round trip. A non-empty Text is
	// written whatever HasText says.
	HasText bool
	// Children holds the digit keys: Children[3] is key "3"; nil is absent.
	Children [10]*Node
	// Extra holds every other key of a branch, verbatim.
	Extra map[string]json.RawMessage
}

// MarshalJSON writes the node with "_" first, then the digit keys in numeric
// order, then any other keys sorted, so that output is deterministic (Go maps
// and JavaScript objects both order keys in ways a reader should not depend on).
func (n *Node) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	appendNode(&buf, n)
	return buf.Bytes(), nil
}

// UnmarshalJSON reads a leaf string or a branch object.
func (n *Node) UnmarshalJSON(data []byte) error {
	v, err := decodeValue(data)
	if err != nil {
		return err
	}
	m, err := decodeNode(v, "")
	if err != nil {
		return err
	}
	*n = *m
	return nil
}

func appendNode(buf *bytes.Buffer, n *Node) {
	if n == nil {
		buf.WriteString("{}")
		return
	}
	if n.Leaf {
		appendString(buf, n.Text)
		return
	}
	buf.WriteByte('{')
	first := true
	key := func(k string) {
		if !first {
			buf.WriteByte(',')
		}
		first = false
		appendString(buf, k)
		buf.WriteByte(':')
	}
	if n.HasText || n.Text != "" {
		key("_")
		appendString(buf, n.Text)
	}
	for d, c := range n.Children {
		if c != nil {
			key(digitKey(d))
			appendNode(buf, c)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(n.Extra)) {
		key(k)
		buf.Write(n.Extra[k])
	}
	buf.WriteByte('}')
}

func appendString(buf *bytes.Buffer, s string) {
	// Without HTML escaping: blocks hold JSX and prose, and a spindle
	// showing a branch as JSON should show "<div>", not "\u003cdiv\u003e".
	// (json.Marshal of a whole Block still escapes; plainjson does not.)
	b, _ := plainjson.Marshal(s) // a Go string always marshals
	buf.Write(b)
}

// decodeValue reads one JSON value, keeping numbers as json.Number so that
// nothing preserved in Extra is rounded through float64.
func decodeValue(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	if rest := bytes.TrimSpace(data[dec.InputOffset():]); len(rest) > 0 {
		return nil, fmt.Errorf("not valid JSON: more data after the first value (at byte %d)", dec.InputOffset())
	}
	return v, nil
}

// decodeNode converts a decoded JSON value into a Node. path is the dotted
// key path from where decoding started, for error messages.
func decodeNode(v any, path string) (*Node, error) {
	switch x := v.(type) {
	case string:
		return &Node{Leaf: true, Text: x}, nil
	case map[string]any:
		n := &Node{}
		// Sorted so that, of several faults, the same one is always reported.
		for _, k := range slices.Sorted(maps.Keys(x)) {
			cv := x[k]
			switch {
			case k == "_":
				s, ok := cv.(string)
				if !ok {
					return nil, fmt.Errorf("%s: \"_\" is %s; it must be a string (the node's text)", where(path), kind(cv))
				}
				n.Text, n.HasText = s, true
			case isDigitKey(k):
				child, err := decodeNode(cv, joinPath(path, k))
				if err != nil {
					return nil, err
				}
				n.Children[k[0]-'0'] = child
			default:
				raw, err := plainjson.Marshal(cv)
				if err != nil {
					return nil, fmt.Errorf("%s: key %q: %w", where(path), k, err)
				}
				if n.Extra == nil {
					n.Extra = map[string]json.RawMessage{}
				}
				n.Extra[k] = raw
			}
		}
		return n, nil
	default:
		return nil, fmt.Errorf("%s is %s; a node must be a string (leaf) or an object with \"_\" and digit keys", where(path), kind(v))
	}
}

// nodeText is what a spindle shows for a node: the leaf string, the "_" text
// of a branch, or — for a branch with no "_" at all — the branch as JSON, as
// the original kernel did, so the reader still sees what is there.
func nodeText(n *Node) string {
	if n.Leaf || n.HasText || n.Text != "" {
		return n.Text
	}
	b, _ := n.MarshalJSON()
	return string(b)
}

// digits lists the digit keys present on a branch, in numeric order.
func (n *Node) digits() []int {
	var ds []int
	if n == nil || n.Leaf {
		return ds
	}
	for d, c := range n.Children {
		if c != nil {
			ds = append(ds, d)
		}
	}
	return ds
}

func isDigitKey(k string) bool { return len(k) == 1 && k[0] >= '0' && k[0] <= '9' }

func digitKey(d int) string { return string(rune('0' + d)) }

func joinPath(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func where(path string) string {
	if path == "" {
		return "tree"
	}
	return "tree node " + path
}

func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number, float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("a %T", v)
}

func joinInts(ds []int) string {
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = fmt.Sprint(d)
	}
	return strings.Join(s, ",")
}
