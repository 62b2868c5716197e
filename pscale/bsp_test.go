package pscale

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

const purposeJSON = `{"place":1,"tree":{"0":{"_":"Purpose root","1":"First entry",` +
	`"2":{"_":"Second is a branch","1":"Grandchild","3":{"_":"Deep","4":"Deeper"}},"3":"Third"}}}`

func equalSteps(a, b []Step) bool { return reflect.DeepEqual(a, b) }

func intp(i int) *int { return &i }

func TestBSPBlockModeReturnsWholeTree(t *testing.T) {
	b := mustParse(t, purposeJSON)
	r, err := BSP(b, Query{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Mode != ModeBlock || r.Tree != b.Tree {
		t.Errorf("got mode %q tree %p, want block mode with the block's tree", r.Mode, r.Tree)
	}
}

func TestBSPSpindleWalksEveryDigitWithPscaleFromPlace(t *testing.T) {
	tests := []struct {
		name, block, addr string
		want              []Step
	}{
		{"place 1: 0.234 walks 0,2,3,4", purposeJSON, "0.234", []Step{
			{0, "0", "Purpose root"}, {-1, "2", "Second is a branch"}, {-2, "3", "Deep"}, {-3, "4", "Deeper"}}},
		{"dots do not change the walk", purposeJSON, "0.2.3.4", []Step{
			{0, "0", "Purpose root"}, {-1, "2", "Second is a branch"}, {-2, "3", "Deep"}, {-3, "4", "Deeper"}}},
		{"place 2: 23.41 walks 2,3,4,1", `{"place":2,"tree":{"2":{"_":"a","3":{"_":"b","4":{"_":"c","1":"d"}}}}}`, "23.41", []Step{
			{1, "2", "a"}, {0, "3", "b"}, {-1, "4", "c"}, {-2, "1", "d"}}},
		{"place 4: 2341 is all above the point", `{"place":4,"tree":{"2":{"_":"a","3":{"_":"b","4":{"_":"c","1":"d"}}}}}`, "2341", []Step{
			{3, "2", "a"}, {2, "3", "b"}, {1, "4", "c"}, {0, "1", "d"}}},
		{"digit 0 is a real key below the root", `{"place":2,"tree":{"2":{"_":"a","0":{"_":"z","1":"y"}}}}`, "20.1", []Step{
			{1, "2", "a"}, {0, "0", "z"}, {-1, "1", "y"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := mustAddr(t, tt.addr)
			r, err := BSP(mustParse(t, tt.block), Query{Address: &a})
			if err != nil {
				t.Fatal(err)
			}
			if r.Mode != ModeSpindle || r.Address != tt.addr || !equalSteps(r.Nodes, tt.want) {
				t.Errorf("got %+v\nwant nodes %+v", r, tt.want)
			}
		})
	}
}

func TestBSPSpindleShowsBranchWithoutTextAsUnescapedJSON(t *testing.T) {
	b := mustParse(t, `{"place":1,"tree":{"0":{"1":"<div>","2":{"_":"b"}}}}`)
	a := mustAddr(t, "0")
	r, err := BSP(b, Query{Address: &a})
	if err != nil {
		t.Fatal(err)
	}
	// Not HTML-escaped: the reader sees <div>, not \u003cdiv\u003e.
	if want := `{"1":"<div>","2":{"_":"b"}}`; r.Nodes[0].Text != want {
		t.Errorf("text = %q, want %q", r.Nodes[0].Text, want)
	}
}

// Pitfall: a wrong path silently returned nothing.
func TestBSPPathOffTheTreeSaysWhichDigitAndWhichChildren(t *testing.T) {
	b := mustParse(t, purposeJSON)
	tests := []struct {
		addr, want string
		perr       PathError
	}{
		{"0.4", "path 0.4: digit 4 not present (children: 1,2,3)",
			PathError{Path: "0.4", At: "0", Digit: 4, Children: []int{1, 2, 3}}},
		{"0.12", "path 0.12: digit 2 not present (0.1 is a leaf with no children)",
			PathError{Path: "0.12", At: "0.1", Digit: 2, Leaf: true}},
		{"0.2345", "path 0.2345: digit 5 not present (0.2.3.4 is a leaf with no children)",
			PathError{Path: "0.2345", At: "0.2.3.4", Digit: 5, Leaf: true}},
		{"1.2", "path 1.2: digit 1 not present (children: 0)", // no stripping of the leading 0
			PathError{Path: "1.2", At: "", Digit: 1, Children: []int{0}}},
	}
	for _, tt := range tests {
		a := mustAddr(t, tt.addr)
		_, err := BSP(b, Query{Address: &a})
		if err == nil || err.Error() != tt.want {
			t.Errorf("BSP %s error = %v, want %q", tt.addr, err, tt.want)
			continue
		}
		var pe *PathError
		if !errors.As(err, &pe) || !reflect.DeepEqual(*pe, tt.perr) {
			t.Errorf("BSP %s PathError = %+v, want %+v", tt.addr, pe, tt.perr)
		}
	}
	empty := mustParse(t, `{"place":1,"tree":{"0":{"_":"r"}}}`)
	a := mustAddr(t, "0.1")
	if _, err := BSP(empty, Query{Address: &a}); err == nil || err.Error() != "path 0.1: digit 1 not present (no children)" {
		t.Errorf("childless node: %v", err)
	}
}

func TestBSPPointReturnsTheNodeAtThatPscale(t *testing.T) {
	b := mustParse(t, purposeJSON)
	a := mustAddr(t, "0.234")
	for _, tt := range []struct {
		point int
		want  Step
	}{{0, Step{0, "0", "Purpose root"}}, {-2, Step{-2, "3", "Deep"}}, {-3, Step{-3, "4", "Deeper"}}} {
		r, err := BSP(b, Query{Address: &a, Pscale: intp(tt.point)})
		if err != nil {
			t.Fatal(err)
		}
		if r.Mode != ModePoint || r.Point == nil || *r.Point != tt.want {
			t.Errorf("point %d = %+v, want %+v", tt.point, r.Point, tt.want)
		}
	}
}

// Pitfall: a missing point silently fell back to the last node.
func TestBSPPointNotOnTheSpindleIsAnErrorListingPscales(t *testing.T) {
	b := mustParse(t, purposeJSON)
	a := mustAddr(t, "0.2")
	for _, tt := range []struct {
		point int
		hint  string
	}{{1, ""}, {-2, "; for the nodes below it down to pscale -2, use dir"}, {-99, "; for the nodes below it down to pscale -99, use dir"}} {
		_, err := BSP(b, Query{Address: &a, Pscale: intp(tt.point)})
		want := fmt.Sprintf("path 0.2: no pscale %d on this spindle (pscales: 0,-1)%s", tt.point, tt.hint)
		if err == nil || err.Error() != want {
			t.Errorf("point %d: error = %v, want %q", tt.point, err, want)
		}
	}
}

func TestBSPPointGivenAsStringIsCoerced(t *testing.T) {
	b := mustParse(t, purposeJSON)
	a := mustAddr(t, "0.2")
	p, err := ParsePscale("-1")
	if err != nil {
		t.Fatal(err)
	}
	r, err := BSP(b, Query{Address: &a, Pscale: &p})
	if err != nil || r.Point.Text != "Second is a branch" {
		t.Errorf("got %+v, %v", r.Point, err)
	}
}

func TestBSPRefusesPlaceBelowOneAndEmptyAddresses(t *testing.T) {
	b := mustParse(t, purposeJSON)
	a := mustAddr(t, "0")
	for _, q := range []Query{{Address: &a}, {Pscale: intp(0)}, {Mode: ModeRing, Address: &a}} {
		if _, err := BSP(&Block{Tree: b.Tree}, q); err == nil || !strings.Contains(err.Error(), "place 0") {
			t.Errorf("place 0, %+v: %v", q, err)
		}
	}
	if _, err := BSP(nil, Query{Address: &a}); err == nil {
		t.Error("nil block: no error")
	}
	if _, err := BSP(b, Query{Address: &Address{}}); err == nil || !strings.Contains(err.Error(), "empty address") {
		t.Errorf("zero address: %v", err)
	}
}

func TestReadGivesContentAndOneLevelOfChildren(t *testing.T) {
	b := mustParse(t, `{"place":1,"tree":{"0":{"_":"root","1":"leaf","2":{"_":"branch","1":"deep"},"3":{"1":"x"},"note":"extra"}}}`)
	v, err := Read(b, mustAddr(t, "0"))
	if err != nil {
		t.Fatal(err)
	}
	want := NodeView{Path: "0", Content: "root", Children: map[string]string{"1": "leaf", "2": "branch", "3": "(branch)"}}
	if !reflect.DeepEqual(v, want) {
		t.Errorf("got %+v\nwant %+v", v, want)
	}
	v, err = Read(b, mustAddr(t, "0.1"))
	if err != nil || !reflect.DeepEqual(v, NodeView{Path: "0.1", Content: "leaf"}) {
		t.Errorf("leaf: %+v, %v", v, err)
	}
	if _, err := Read(b, mustAddr(t, "0.4")); err == nil {
		t.Error("missing path: no error")
	}
}

func TestWriteCreatesIntermediatesAndTurnsLeavesIntoBranches(t *testing.T) {
	tests := []struct{ name, in, addr, want string }{
		{"leaf on the way keeps its text as _",
			`{"place":1,"tree":{"0":{"_":"r","1":"old"}}}`, "0.1.2",
			`{"place":1,"tree":{"0":{"_":"r","1":{"_":"old","2":"new"}}}}`},
		{"empty leaf on the way still becomes {\"_\": old}",
			`{"place":1,"tree":{"0":""}}`, "0.2",
			`{"place":1,"tree":{"0":{"_":"","2":"new"}}}`},
		{"missing nodes are created",
			`{"place":1,"tree":{"0":{"_":"r"}}}`, "0.5.3",
			`{"place":1,"tree":{"0":{"_":"r","5":{"3":"new"}}}}`},
		{"existing leaf is replaced",
			`{"place":1,"tree":{"0":{"_":"r","1":"old"}}}`, "0.1",
			`{"place":1,"tree":{"0":{"_":"r","1":"new"}}}`},
		{"empty tree grows a root",
			`{"place":1,"tree":{}}`, "0",
			`{"place":1,"tree":{"0":"new"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := mustParse(t, tt.in)
			if err := Write(b, mustAddr(t, tt.addr), "new"); err != nil {
				t.Fatal(err)
			}
			if got := mustMarshal(t, b); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
	if err := Write(&Block{Place: 1}, Address{}, "x"); err == nil {
		t.Error("zero address: no error")
	}
}

// Pitfall: compress wrote its summary to the parent instead of the node
// whose nine children it summed.
func TestWriteOnBranchSetsItsOwnTextAndKeepsChildren(t *testing.T) {
	b := mustParse(t, `{"place":1,"tree":{"0":{"_":"root","2":{"_":"old summary","1":"a","2":"b"}}}}`)
	if err := Write(b, mustAddr(t, "0.2"), "new summary"); err != nil {
		t.Fatal(err)
	}
	want := `{"place":1,"tree":{"0":{"_":"root","2":{"_":"new summary","1":"a","2":"b"}}}}`
	if got := mustMarshal(t, b); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func fullNode(extra string) string {
	var parts []string
	for d := 1; d <= 9; d++ {
		parts = append(parts, fmt.Sprintf(`"%d":"e%d"`, d, d))
	}
	return `{"place":1,"tree":{"0":{"_":"r",` + strings.Join(parts, ",") + extra + `}}}`
}

func TestNextDigitFindsFirstFreeSlot(t *testing.T) {
	tests := []struct {
		name, in string
		want     int
	}{
		{"empty branch", `{"place":1,"tree":{"0":{"_":"r"}}}`, 1},
		{"after 1 and 2", `{"place":1,"tree":{"0":{"_":"r","1":"a","2":"b"}}}`, 3},
		{"fills a gap", `{"place":1,"tree":{"0":{"_":"r","1":"a","3":"c"}}}`, 2},
		{"leaf becomes a branch at 1", `{"place":1,"tree":{"0":"r"}}`, 1},
		{"digit 0 is not a slot", `{"place":1,"tree":{"0":{"_":"r","0":"compressed"}}}`, 1},
		{"empty text still occupies", `{"place":1,"tree":{"0":{"_":"r","1":""}}}`, 2},
	}
	for _, tt := range tests {
		got, err := NextDigit(mustParse(t, tt.in), mustAddr(t, "0"))
		if err != nil || got != tt.want {
			t.Errorf("%s: NextDigit = %d, %v; want %d", tt.name, got, err, tt.want)
		}
	}
}

func TestNextDigitOnFullNodeWrapsErrFull(t *testing.T) {
	_, err := NextDigit(mustParse(t, fullNode("")), mustAddr(t, "0"))
	if !errors.Is(err, ErrFull) || !strings.HasPrefix(err.Error(), "path 0: ") {
		t.Errorf("err = %v, want path 0 wrapping ErrFull", err)
	}
}

func TestNextDigitAndNeedsCompressionRefuseMissingPaths(t *testing.T) {
	b := mustParse(t, purposeJSON)
	var pe *PathError
	if _, err := NextDigit(b, mustAddr(t, "0.7")); !errors.As(err, &pe) {
		t.Errorf("NextDigit on missing path: %v, want a PathError", err)
	}
	if _, err := NeedsCompression(b, mustAddr(t, "0.7")); !errors.As(err, &pe) {
		t.Errorf("NeedsCompression on missing path: %v, want a PathError", err)
	}
}

func TestNeedsCompressionWhenDigitsOneToNineAreAllOccupied(t *testing.T) {
	eight := strings.Replace(fullNode(""), `,"9":"e9"`, "", 1)
	tests := []struct {
		name, in string
		want     bool
	}{
		{"nine children", fullNode(""), true},
		{"nine children plus 0 and extras", fullNode(`,"0":"z","x":1`), true},
		{"eight children", eight, false},
		{"eight plus digit 0 is not full", strings.Replace(eight, `"_":"r",`, `"_":"r","0":"z",`, 1), false},
		{"leaf", `{"place":1,"tree":{"0":"r"}}`, false},
	}
	for _, tt := range tests {
		got, err := NeedsCompression(mustParse(t, tt.in), mustAddr(t, "0"))
		if err != nil || got != tt.want {
			t.Errorf("%s: %v, %v; want %v", tt.name, got, err, tt.want)
		}
	}
}

func TestResolveShowsTextDownToDepth(t *testing.T) {
	b := mustParse(t, purposeJSON)
	got := Resolve(b, 2)
	want := Phrase{Path: "", Children: []Phrase{{Path: "0", Text: "Purpose root", Children: []Phrase{
		{Path: "0.1", Text: "First entry"},
		{Path: "0.2", Text: "Second is a branch"},
		{Path: "0.3", Text: "Third"},
	}}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("depth 2:\n got %+v\nwant %+v", got, want)
	}
	// Depth 0 means the default, 3: grandchildren appear, great-grandchildren do not.
	d3 := Resolve(b, 0)
	second := d3.Children[0].Children[1]
	if len(second.Children) != 2 || second.Children[1].Path != "0.2.3" || second.Children[1].Children != nil {
		t.Errorf("default depth: 0.2 = %+v", second)
	}
}

// A deep chain: at every level digits 1–9 exist and 5 leads on.
func deepBlock(depth int) (*Block, Address) {
	b := &Block{Place: 1, Tree: &Node{}}
	cur := &Node{Text: "root", HasText: true}
	b.Tree.Children[0] = cur
	digits := []byte{'0'}
	for i := 0; i < depth; i++ {
		for d := 1; d <= 9; d++ {
			cur.Children[d] = &Node{Leaf: true, Text: fmt.Sprintf("level %d digit %d", i, d)}
		}
		next := &Node{Text: fmt.Sprintf("level %d", i), HasText: true}
		cur.Children[5] = next
		cur = next
		digits = append(digits, '5')
	}
	a, _ := ParseAddress(string(digits))
	return b, a
}

func BenchmarkBSPSpindleDeep(b *testing.B) {
	blk, a := deepBlock(200)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := BSP(blk, Query{Address: &a}); err != nil {
			b.Fatal(err)
		}
	}
}
