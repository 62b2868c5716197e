package pscale

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
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

		r, err := BSP(b, &a, nil)
		if fail >= 0 {
			var pe *PathError
			if !errors.As(err, &pe) {
				t.Fatalf("BSP %s = %+v, %v; oracle stops at step %d", addr, r, err, fail)
			}
			wantPE := PathError{Path: a.String(), At: dotted(a.Digits()[:fail]), Digit: int(a.Digits()[fail] - '0'), Children: children, Leaf: leaf}
			if !reflect.DeepEqual(*pe, wantPE) {
				t.Fatalf("BSP %s PathError = %+v, want %+v", addr, *pe, wantPE)
			}
			if _, perr := BSP(b, &a, &point); perr == nil || perr.Error() != err.Error() {
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

		p, err := BSP(b, &a, &point)
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
		r, err := BSP(b, &a, nil)
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
