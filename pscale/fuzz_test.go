package pscale

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

var fuzzBlocks = []string{
	purposeJSON,
	`{"place":2,"tree":{"2":{"_":"a","3":{"_":"b","4":{"_":"c","1":"d"}},"0":{"1":"z"}}}}`,
	`{"decimal":0,"tree":{"_":"caps","2":{"_":"blocks","1":"block_read"}}}`,
	`{"tuning":"88","tree":{"_":"h","1":"a","2":{"_":"b","x":[1]}}}`,
	`{"_":"bare","1":"one"}`,
	`{"place":1,"fork":"74.45","sign":-1,"tree":{"0":{"1":{"2":{"3":"deep"}}}}}`,
	`{"place":1,"tree":{"0":"leaf"}}`,
	`{"place":1,"tree":{}}`,
}

// FuzzParseAddress: every digit is a step, dots change nothing, anything
// else is an error that names the character; numbers never walk differently
// from the number they are.
func FuzzParseAddress(f *testing.F) {
	for _, s := range []string{"0.12", "0.1.2", "012", "23.41", "0.9.4", ".", "", " 0.1 ", "-3", "1e-5", "0.1a", "0.١", "\xff"} {
		f.Add(s, 0.12)
	}
	f.Add("0.10", 0.10)
	f.Add("9", 1e21)
	f.Add("9", 1e-7)
	f.Add("9", math.Inf(1))
	f.Fuzz(func(t *testing.T, s string, num float64) {
		a, err := ParseAddress(s)
		trimmed := strings.TrimSpace(s)
		var digits []byte
		bad := rune(-1)
		for _, r := range trimmed {
			if r >= '0' && r <= '9' {
				digits = append(digits, byte(r))
			} else if r != '.' && bad < 0 {
				bad = r
			}
		}
		switch {
		case bad >= 0:
			if err == nil || !strings.Contains(err.Error(), strconv.QuoteRune(bad)) {
				t.Fatalf("ParseAddress(%q) = %v, %v; want an error naming %q", s, a.Digits(), err, bad)
			}
		case len(digits) == 0:
			if err == nil {
				t.Fatalf("ParseAddress(%q) = %q, want a no-digits error", s, a.Digits())
			}
		default:
			if err != nil || a.Digits() != string(digits) || a.String() != trimmed {
				t.Fatalf("ParseAddress(%q) = %q/%q, %v; want %q/%q", s, a.Digits(), a.String(), err, digits, trimmed)
			}
			var back Address
			js, _ := json.Marshal(a)
			if err := json.Unmarshal(js, &back); err != nil || back != a {
				t.Fatalf("JSON round trip of %q: %v, %v", s, back, err)
			}
		}

		// A number must read back as the same number from its address text.
		na, err := ParseAddress(num)
		if math.IsNaN(num) || math.IsInf(num, 0) || num < 0 || math.Signbit(num) {
			if err == nil {
				t.Fatalf("ParseAddress(%v) = %q, want an error", num, na.Digits())
			}
			return
		}
		if err != nil {
			t.Fatalf("ParseAddress(%v): %v", num, err)
		}
		if back, err := strconv.ParseFloat(na.String(), 64); err != nil || back != num || strings.ContainsAny(na.String(), "eE") {
			t.Fatalf("ParseAddress(%v) text %q reads back as %v (%v)", num, na.String(), back, err)
		}
	})
}

// oracleStep is what an independent walk over the generic JSON finds.
type oracleStep struct {
	text string
	raw  any
}

// oracleWalk walks decoded canonical JSON by digits; on failure it returns
// the step index, the digits present there and whether it was a leaf.
func oracleWalk(tree any, digits string) (steps []oracleStep, fail int, children []int, leaf bool) {
	cur := tree
	for i := 0; i < len(digits); i++ {
		m, ok := cur.(map[string]any)
		if !ok {
			return steps, i, nil, true
		}
		next, ok := m[digits[i:i+1]]
		if !ok {
			for k := range m {
				if isDigitKey(k) {
					children = append(children, int(k[0]-'0'))
				}
			}
			sort.Ints(children)
			return steps, i, children, false
		}
		s := oracleStep{raw: next}
		switch x := next.(type) {
		case string:
			s.text = x
		case map[string]any:
			if t, ok := x["_"].(string); ok {
				s.text = t
			} else {
				s.text = "\x00json"
			}
		}
		steps = append(steps, s)
		cur = next
	}
	return steps, -1, nil, false
}

func genericTree(t *testing.T, b *Block) any {
	t.Helper()
	out, err := json.Marshal(b)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	var v map[string]any
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	return v["tree"]
}

func sameJSON(t *testing.T, text string, raw any) bool {
	var v any
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return false
	}
	return reflect.DeepEqual(v, raw)
}

// FuzzBSP: a spindle either walks exactly the nodes an independent walk
// finds, or fails with a PathError naming the digit and children where that
// walk stopped; a point is the node at that pscale or an error — no silent
// wrong walk, no fallback.
func FuzzBSP(f *testing.F) {
	for _, b := range fuzzBlocks {
		for _, a := range []string{"0", "0.2", "0.21", "0.234", "23.41", "20.1", "0.12", "9"} {
			f.Add(b, a, -1)
		}
	}
	f.Add(purposeJSON, "0.234", 0)
	f.Add(purposeJSON, "0.234", 5)
	f.Fuzz(func(t *testing.T, blockJSON, addr string, point int) {
		b, _, err := Parse([]byte(blockJSON))
		if err != nil {
			return
		}
		a, err := ParseAddress(addr)
		if err != nil {
			return
		}
		tree := genericTree(t, b)
		want, fail, children, leaf := oracleWalk(tree, a.Digits())

		r, err := BSP(b, Query{Address: &a})
		if fail >= 0 {
			var pe *PathError
			if !errors.As(err, &pe) {
				t.Fatalf("BSP %s = %+v, %v; oracle stops at step %d", addr, r, err, fail)
			}
			wantPE := PathError{Path: a.String(), At: dotted(a.Digits()[:fail]), Digit: int(a.Digits()[fail] - '0'), Children: children, Leaf: leaf}
			if !reflect.DeepEqual(*pe, wantPE) {
				t.Fatalf("BSP %s PathError = %+v, want %+v", addr, *pe, wantPE)
			}
			if _, perr := BSP(b, Query{Address: &a, Pscale: &point}); perr == nil || perr.Error() != err.Error() {
				t.Fatalf("point on a broken path: %v, want %v", perr, err)
			}
			return
		}
		if err != nil || r.Mode != ModeSpindle || len(r.Nodes) != len(want) {
			t.Fatalf("BSP %s = %+v, %v; oracle walked %d nodes", addr, r, err, len(want))
		}
		for i, n := range r.Nodes {
			ok := n.Digit == a.Digits()[i:i+1] && n.Pscale == (b.Place-1)-i
			if want[i].text == "\x00json" {
				ok = ok && sameJSON(t, n.Text, want[i].raw)
			} else {
				ok = ok && n.Text == want[i].text
			}
			if !ok {
				t.Fatalf("BSP %s node %d = %+v, oracle %q (place %d)", addr, i, n, want[i].text, b.Place)
			}
		}

		p, err := BSP(b, Query{Address: &a, Pscale: &point})
		for i, n := range r.Nodes {
			if n.Pscale == point {
				if err != nil || p.Point == nil || *p.Point != r.Nodes[i] {
					t.Fatalf("point %d = %+v, %v; want %+v", point, p.Point, err, r.Nodes[i])
				}
				return
			}
		}
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("no pscale %d", point)) {
			t.Fatalf("point %d not on spindle: got %+v, %v", point, p.Point, err)
		}
	})
}

// FuzzParseRoundTrip: output is canonical and stable, and a canonical input
// loses nothing.
func FuzzParseRoundTrip(f *testing.F) {
	for _, b := range fuzzBlocks {
		f.Add(b)
	}
	f.Add(`{"place":"1","tree":{"0":{"_":"<&>","1":"\u00e9","z":{"b":1e400,"a":1.50}}}}`)
	f.Fuzz(func(t *testing.T, in string) {
		b, conv, err := Parse([]byte(in))
		if err != nil {
			return
		}
		out1, err := json.Marshal(b)
		if err != nil {
			t.Fatalf("Marshal after Parse(%s): %v", in, err)
		}
		b2, conv2, err := Parse(out1)
		if err != nil || conv2 != "" {
			t.Fatalf("reparse of %s: conversion %q, %v", out1, conv2, err)
		}
		out2, _ := json.Marshal(b2)
		if !bytes.Equal(out1, out2) {
			t.Fatalf("unstable:\n%s\n%s", out1, out2)
		}
		if conv != "" {
			return
		}
		var before, after map[string]any
		for _, x := range []struct {
			data []byte
			dst  *map[string]any
		}{{[]byte(in), &before}, {out1, &after}} {
			dec := json.NewDecoder(bytes.NewReader(x.data))
			dec.UseNumber()
			if err := dec.Decode(x.dst); err != nil {
				t.Fatal(err)
			}
		}
		// place may have been written "1" or 1.0; its value is checked apart.
		if p, ok := wholeNumber(before["place"]); !ok || p != b.Place {
			t.Fatalf("place %v read as %d", before["place"], b.Place)
		}
		delete(before, "place")
		delete(after, "place")
		if !reflect.DeepEqual(before, after) {
			t.Fatalf("canonical input changed:\n in %s\nout %s", in, out1)
		}
	})
}

// FuzzWrite: after a write the spindle reaches the new text, the text of
// every node on the way is kept, and nothing off the path changes.
func FuzzWrite(f *testing.F) {
	for _, b := range fuzzBlocks {
		for _, a := range []string{"0", "0.1.2", "0.5.3", "23.41", "9"} {
			f.Add(b, a, "new")
		}
	}
	f.Fuzz(func(t *testing.T, blockJSON, addr, text string) {
		b, _, err := Parse([]byte(blockJSON))
		if err != nil {
			return
		}
		a, err := ParseAddress(addr)
		if err != nil {
			return
		}
		before := genericTree(t, b)
		if err := Write(b, a, text); err != nil {
			t.Fatalf("Write: %v", err)
		}
		after := genericTree(t, b)
		r, err := BSP(b, Query{Address: &a})
		if err != nil {
			t.Fatalf("BSP after Write %s: %v", addr, err)
		}
		if got := r.Nodes[len(r.Nodes)-1].Text; got != text {
			t.Fatalf("text at %s = %q, want %q", addr, got, text)
		}
		d := a.Digits()
		bcur, acur := before, after
		for i := 0; i < len(d); i++ {
			bm, _ := bcur.(map[string]any)
			am, ok := acur.(map[string]any)
			if !ok {
				t.Fatalf("node %s is not a branch after Write", dotted(d[:i]))
			}
			for k, v := range bm {
				if k != d[i:i+1] && !reflect.DeepEqual(am[k], v) {
					t.Fatalf("Write %s changed %q under %s", addr, k, dotted(d[:i]))
				}
			}
			if s, ok := bcur.(string); ok && i > 0 && am["_"] != s {
				t.Fatalf("leaf %s lost its text %q", dotted(d[:i]), s)
			}
			if bm != nil {
				bcur = bm[d[i:i+1]]
			} else {
				bcur = nil
			}
			acur = am[d[i:i+1]]
		}
	})
}

// FuzzParseQuery: a query parses into what its text says (a trailing *
// asks for star, the address is the digits before it, the point is the
// whole number written) or fails naming the field at fault.
func FuzzParseQuery(f *testing.F) {
	for _, s := range [][3]string{
		{"", "0.12", ""}, {"ring", "0.1", ""}, {"DIR", "0.2", "-3"}, {"", "", "0"}, {"star", "0.7*", ""},
		{"", "0.7*1", ""}, {"", "*", ""}, {"disc", "", " -1 "}, {"spin", "0", "x"}, {"", "0.1", "1e3"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, mode, spindle, point string) {
		q, err := ParseQuery(mode, spindle, point)
		if err != nil {
			msg := err.Error()
			if !strings.HasPrefix(msg, `mode "`) && !strings.HasPrefix(msg, "spindle") && !strings.HasPrefix(msg, "point: ") && !strings.Contains(msg, " mode ") {
				t.Fatalf("ParseQuery(%q, %q, %q): error names no field: %v", mode, spindle, point, err)
			}
			return
		}
		if _, merr := ParseMode(mode); merr != nil {
			t.Fatalf("ParseQuery took mode %q that ParseMode refuses", mode)
		}
		pre, _, star := strings.Cut(spindle, "*")
		if star {
			if q.Mode != ModeStar || strings.Count(spindle, "*") != 1 || strings.TrimSpace(spindle)[len(strings.TrimSpace(spindle))-1] != '*' {
				t.Fatalf("ParseQuery(%q, %q): mode %q", mode, spindle, q.Mode)
			}
		} else if m, _ := ParseMode(mode); m != "" && q.Mode != m {
			t.Fatalf("ParseQuery(%q): mode %q", mode, q.Mode)
		}
		if _, err := q.resolve(); err != nil || q.Mode == "" {
			t.Fatalf("ParseQuery(%q, %q, %q) = %+v, which BSP refuses: %v", mode, spindle, point, q, err)
		}
		var digits []byte
		for _, r := range pre {
			if r >= '0' && r <= '9' {
				digits = append(digits, byte(r))
			}
		}
		switch {
		case strings.TrimSpace(pre) == "" && q.Address != nil:
			t.Fatalf("blank spindle %q read as %q", spindle, q.Address.Digits())
		case strings.TrimSpace(pre) != "" && (q.Address == nil || q.Address.Digits() != string(digits)):
			t.Fatalf("spindle %q read as %+v, want digits %q", spindle, q.Address, digits)
		}
		if strings.TrimSpace(point) == "" {
			if q.Pscale != nil {
				t.Fatalf("blank point %q read as %d", point, *q.Pscale)
			}
		} else if n, err := strconv.Atoi(strings.TrimSpace(point)); err == nil && (q.Pscale == nil || *q.Pscale != n) {
			t.Fatalf("point %q read as %v, want %d", point, q.Pscale, n)
		}
	})
}

// oracleNode is a node as an independent walk over the generic JSON sees it.
type oracleNode struct {
	digits, text string
	branch       bool // it has digit children
}

// oracleNodes lists every node of a decoded canonical tree (the root
// excluded) in address order.
func oracleNodes(tree any) []oracleNode {
	var out []oracleNode
	var visit func(v any, digits string)
	visit = func(v any, digits string) {
		n := oracleNode{digits: digits}
		m, isMap := v.(map[string]any)
		if s, ok := v.(string); ok {
			n.text = s
		}
		if isMap {
			n.text, _ = m["_"].(string)
		}
		for d := 0; d <= 9 && isMap; d++ {
			_, has := m[strconv.Itoa(d)]
			n.branch = n.branch || has
		}
		if digits != "" {
			out = append(out, n)
		}
		for d := 0; d <= 9 && isMap; d++ {
			if c, ok := m[strconv.Itoa(d)]; ok {
				visit(c, digits+strconv.Itoa(d))
			}
		}
	}
	visit(tree, "")
	return out
}

// FuzzBSPModes: ring, dir, disc and star list exactly the nodes an
// independent walk over the block's JSON finds, each with the address,
// pscale, text and branch mark it has there; every mode refuses exactly
// the queries it cannot answer (a missing or surplus part, a walk off the
// tree, a pscale above what it reaches) and answers all others.
func FuzzBSPModes(f *testing.F) {
	blocks := append(slices.Clone(fuzzBlocks), fixtureTown, fixtureSun)
	for _, b := range blocks {
		for _, m := range Modes {
			for _, a := range []string{"", "0", "0.2", "0.23", "1", "123", "5", "7", "000"} {
				f.Add(b, string(m), a, -1, true)
				f.Add(b, string(m), a, 0, false)
			}
		}
	}
	f.Add(fixtureTown, "disc", "", 2, true)
	f.Add(fixtureTown, "dir", "1", -3, true)
	f.Fuzz(func(t *testing.T, blockJSON, mode, addr string, point int, hasPoint bool) {
		b, _, err := Parse([]byte(blockJSON))
		if err != nil {
			return
		}
		var pt any
		if hasPoint {
			pt = point
		}
		q, err := ParseQuery(mode, addr, pt)
		if err != nil {
			return
		}
		r, err := BSP(b, q)
		all := oracleNodes(genericTree(t, b))

		// What the query should be refused for, found independently.
		m := q.Mode
		if m == "" {
			m = map[[2]bool]Mode{{false, false}: ModeBlock, {true, false}: ModeSpindle, {false, true}: ModeDisc, {true, true}: ModePoint}[[2]bool{q.Address != nil, q.Pscale != nil}]
		}
		wantAddr := m != ModeBlock && m != ModeDisc
		pscaleNeeded, pscaleAllowed := m == ModePoint || m == ModeDisc, m == ModePoint || m == ModeDisc || m == ModeDir
		refused := ""
		switch {
		case wantAddr != (q.Address != nil), pscaleNeeded && q.Pscale == nil, !pscaleAllowed && q.Pscale != nil:
			refused = "parts"
		}
		var d string
		var end *oracleNode
		if refused == "" && q.Address != nil {
			d = q.Address.Digits()
			for i := range all {
				if all[i].digits == d {
					end = &all[i]
				}
			}
			// The walk fails where the address leaves the tree: a missing
			// node, or any step below a leaf.
			if end == nil {
				refused = "walk"
			}
		}
		if refused == "" && q.Pscale != nil {
			ps := *q.Pscale
			switch {
			case m == ModeDisc && ps > b.Place-1:
				refused = "above"
			case m == ModeDir && ps > b.Place-len(d):
				refused = "above"
			case m == ModePoint && (ps > b.Place-1 || ps < b.Place-len(d)):
				refused = "off the spindle"
			}
		}
		if refused != "" {
			if err == nil {
				t.Fatalf("%+v on %s: answered %+v, want a refusal (%s)", q, blockJSON, r, refused)
			}
			var pe *PathError
			if (refused == "walk") != errors.As(err, &pe) {
				t.Fatalf("%+v: refused with %v, want a %s refusal", q, err, refused)
			}
			return
		}
		if err != nil {
			t.Fatalf("%+v on %s: %v", q, blockJSON, err)
		}
		if r.Mode != m {
			t.Fatalf("%+v: mode %q, want %q", q, r.Mode, m)
		}

		var want []oracleNode
		switch m {
		case ModeBlock:
			if r.Tree != b.Tree {
				t.Fatal("block mode did not answer the block's tree")
			}
			return
		case ModeSpindle, ModePoint:
			return // FuzzBSP checks these against the same walk
		case ModeRing:
			for _, n := range all {
				if len(n.digits) == len(d) && n.digits[:len(d)-1] == d[:len(d)-1] && n.digits != d {
					want = append(want, n)
				}
			}
		case ModeDir:
			for _, n := range all {
				if strings.HasPrefix(n.digits, d) && (q.Pscale == nil || b.Place-len(n.digits) >= *q.Pscale) {
					want = append(want, n)
				}
			}
			slices.SortStableFunc(want, func(x, y oracleNode) int { return len(x.digits) - len(y.digits) })
		case ModeDisc:
			for _, n := range all {
				if b.Place-len(n.digits) == *q.Pscale {
					want = append(want, n)
				}
			}
		case ModeStar:
			hidden := false
			for _, n := range all {
				hidden = hidden || (n.digits == d+"0" && !isLeafJSON(t, b, n.digits))
			}
			for _, n := range all {
				if hidden && len(n.digits) == len(d)+2 && strings.HasPrefix(n.digits, d+"0") && n.digits[len(n.digits)-1] != '0' {
					want = append(want, n)
				}
			}
			if r.Point == nil || r.Point.Text != end.text || r.Point.Pscale != b.Place-len(d) {
				t.Fatalf("star %s: node %+v, want text %q", d, r.Point, end.text)
			}
		}
		if len(r.Entries) != len(want) {
			t.Fatalf("%s %+v on %s: %d entries %+v, want %d %+v", m, q, blockJSON, len(r.Entries), r.Entries, len(want), want)
		}
		if (len(want) == 0) != (r.Note != "") {
			t.Fatalf("%s %+v: %d entries and note %q", m, q, len(want), r.Note)
		}
		for i, e := range r.Entries {
			w := want[i]
			digits := strings.ReplaceAll(e.Address, ".", "")
			dot := strings.IndexByte(e.Address, '.')
			if digits != w.digits || e.Pscale != b.Place-len(w.digits) || e.Text != w.text || e.Branch != w.branch ||
				(len(w.digits) > b.Place) != (dot == b.Place) || strings.Count(e.Address, ".") > 1 {
				t.Fatalf("%s %+v entry %d = %+v, want %+v (place %d)", m, q, i, e, w, b.Place)
			}
			if _, isRef := ParseRef(e.Text); m == ModeStar && isRef != (e.Ref != nil) {
				t.Fatalf("star entry %+v: reference %v", e, isRef)
			}
		}
	})
}

// isLeafJSON says whether the node at digits is a string in the block's JSON.
func isLeafJSON(t *testing.T, b *Block, digits string) bool {
	var cur any = genericTree(t, b)
	for i := 0; i < len(digits); i++ {
		cur = cur.(map[string]any)[digits[i:i+1]]
	}
	_, leaf := cur.(string)
	return leaf
}
