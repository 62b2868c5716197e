package pscale

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

const historyJSON = `{"place":1,"tree":{"0":{"_":"What happened, oldest first."}}}`

// label passes a full node with a text naming it, as a migration does.
func label(a Address, _ *Node) string { return "compressed " + a.String() }

// entryDigits is where entry n (from 1) of a block grown to place p sits:
// "0", then the base-9 digits of n−1 (each plus one), p of them.
func entryDigits(n, p int) string {
	ds := make([]byte, p)
	for i, v := p-1, n-1; i >= 0; i, v = i-1, v/9 {
		ds[i] = byte('1' + v%9)
	}
	return "0" + string(ds)
}

func TestAppendEntryGrowsUpwardAndKeepsEveryEntryAtPscaleMinusOne(t *testing.T) {
	b := mustParse(t, historyJSON)
	for n := 1; n <= 100; n++ {
		at, err := AppendEntry(b, fmt.Sprintf("entry %d", n), label)
		if err != nil {
			t.Fatalf("entry %d: %v", n, err)
		}
		if want := placed(b.Place, entryDigits(n, b.Place)); at != want {
			t.Fatalf("entry %d at %s, want %s", n, at, want)
		}
	}
	if b.Place != 3 {
		t.Fatalf("100 entries: place %d, want 3 (9, then 81, then more)", b.Place)
	}
	for n := 1; n <= 100; n++ {
		a := mustAddr(t, entryDigits(n, 3))
		r, err := BSP(b, Query{Address: &a, Pscale: intp(-1)})
		if err != nil || r.Point.Text != fmt.Sprintf("entry %d", n) {
			t.Fatalf("entry %d by BSP at %s pscale -1: %+v %v", n, a, r.Point, err)
		}
	}
	if got := b.Tree.Children[0].Text; got != "What happened, oldest first." {
		t.Fatalf("the top lost the block's description: %q", got)
	}
	// The first nine were compressed when the top first filled, the first
	// 81 when it filled again.
	for addr, want := range map[string]string{"01": "compressed 0", "011": "compressed 0", "012": "compressed 02", "02": ""} {
		v, err := Read(b, mustAddr(t, addr))
		if err != nil || v.Content != want {
			t.Errorf("node %s: %q %v, want %q", addr, v.Content, err, want)
		}
	}
}

func TestAppendEntryWithoutPassAsksForEachCompressionInTurn(t *testing.T) {
	b := mustParse(t, historyJSON)
	for n := 1; n <= 9; n++ {
		if _, err := AppendEntry(b, "e", nil); err != nil {
			t.Fatal(err)
		}
	}
	before, _ := b.MarshalJSON()
	_, err := AppendEntry(b, "tenth", nil)
	var full *FullError
	if !errors.As(err, &full) || !full.Top || full.Path.String() != "0" || !errors.Is(err, ErrFull) {
		t.Fatalf("a full top: %v", err)
	}
	if after, _ := b.MarshalJSON(); string(after) != string(before) {
		t.Fatalf("a refused append changed the block:\n%s\n%s", before, after)
	}
	if err := Grow(b, "nine things happened"); err != nil {
		t.Fatal(err)
	}
	at, err := AppendEntry(b, "tenth", nil)
	if err != nil || at.String() != "02.1" {
		t.Fatalf("after growing: %s %v", at, err)
	}
	for n := 11; n <= 18; n++ {
		AppendEntry(b, "e", nil)
	}
	_, err = AppendEntry(b, "nineteenth", nil)
	if !errors.As(err, &full) || full.Top || full.Path.String() != "02" {
		t.Fatalf("a full node below the top: %v", err)
	}
	if err := Write(b, full.Path, "the second nine"); err != nil {
		t.Fatal(err)
	}
	if at, err := AppendEntry(b, "nineteenth", nil); err != nil || at.String() != "03.1" {
		t.Fatalf("once compressed, the next node opens: %s %v", at, err)
	}
}

func TestAppendEntryPassesLeavesAndFillsAnEmptyNode(t *testing.T) {
	// At place 2 the newest node at the group level is a leaf someone
	// wrote: it is closed, so the next group opens beside it.
	b := mustParse(t, `{"place":2,"tree":{"0":{"_":"top","1":{"_":"s","1":"a"},"2":"a note"}}}`)
	if at, err := AppendEntry(b, "x", nil); err != nil || at.String() != "03.1" {
		t.Fatalf("after a leaf: %s %v", at, err)
	}
	b = mustParse(t, `{"place":2,"tree":{"0":{"_":"top","1":{}}}}`)
	if at, err := AppendEntry(b, "x", nil); err != nil || at.String() != "01.1" {
		t.Fatalf("an empty node: %s %v", at, err)
	}
	b = mustParse(t, `{"place":1,"tree":{"0":"just text"}}`)
	if at, err := AppendEntry(b, "x", nil); err != nil || at.String() != "0.1" || b.Tree.Children[0].Text != "just text" {
		t.Fatalf("a leaf top: %s %v", at, err)
	}
}

func TestGrowKeepsTheDescriptionOnTopAndRefusesSiblings(t *testing.T) {
	b := mustParse(t, `{"place":1,"tree":{"0":{"_":"desc","x":"kept","1":"a"}}}`)
	if err := Grow(b, "sum"); err != nil {
		t.Fatal(err)
	}
	got, _ := b.MarshalJSON()
	if want := `{"place":2,"tree":{"0":{"_":"desc","1":{"_":"sum","1":"a"},"x":"kept"}}}`; string(got) != want {
		t.Fatalf("grown:\n%s\nwant\n%s", got, want)
	}
	b = mustParse(t, `{"place":1,"tree":{"0":{"_":"desc"},"1":"beside"}}`)
	if err := Grow(b, "sum"); err == nil || !strings.Contains(err.Error(), "beside its top") {
		t.Fatalf("siblings of the top: %v", err)
	}
}

func TestUncompressedListsNodesPassedWithoutText(t *testing.T) {
	b := mustParse(t, historyJSON)
	blank := func(Address, *Node) string { return "" }
	for n := 1; n <= 30; n++ {
		if _, err := AppendEntry(b, "e", blank); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, a := range Uncompressed(b) {
		got = append(got, a.String())
	}
	if strings.Join(got, " ") != "01 02 03" {
		t.Fatalf("uncompressed: %v", got)
	}
}

func TestRenderNarrativeStaysBoundedAsEntriesGrow(t *testing.T) {
	b := mustParse(t, historyJSON)
	long := strings.Repeat("word ", 100)
	sizes := map[int]int{}
	for n := 1; n <= 700; n++ {
		if _, err := AppendEntry(b, fmt.Sprintf("entry %d %s", n, long), label); err != nil {
			t.Fatal(err)
		}
		if n == 100 || n == 700 {
			sizes[n] = len(RenderNarrative("history", b))
		}
	}
	out := RenderNarrative("history", b)
	for _, want := range []string{"[history]\nWhat happened, oldest first.\n1: compressed 0\n", "entry 700 ", "entry 698 ", "(4 earlier entries: bsp history 096)"} {
		if !strings.Contains(out, want) {
			t.Errorf("narrative lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "entry 697 ") || strings.Contains(out, "entry 1 ") {
		t.Errorf("narrative shows old entries:\n%s", out)
	}
	if sizes[700] > 6000 || sizes[100] > 6000 {
		t.Fatalf("narrative sizes %v: want under 6000 characters however many entries", sizes)
	}
}
