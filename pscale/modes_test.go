package pscale

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// bspLines runs one query (as the tool receives it) on a block and writes
// the answer as vectorLines does.
func bspLines(t *testing.T, b *Block, mode, spindle string, point any) ([]string, error) {
	t.Helper()
	q, err := ParseQuery(mode, spindle, point)
	if err != nil {
		return nil, err
	}
	r, err := BSP(b, q)
	if err != nil {
		return nil, err
	}
	return vectorLines(r), nil
}

func TestRingListsTheSiblingsOfTheSpindlesEnd(t *testing.T) {
	town, purpose := mustParse(t, fixtureTown), mustParse(t, purposeJSON)
	tests := []struct {
		b             *Block
		spindle, want string
	}{
		{purpose, "0.2", "0.1 -1 First entry|0.3 -1 Third"},
		{purpose, "0.23", "0.21 -2 Grandchild"},
		{purpose, "0", "note: 0 has no siblings"},
		{town, "123.4", "123.5 -1 stove"},
		{town, "1", "0 2  +|3 2 the point +"}, // digit 0 is a sibling like any other
		{town, "000", "008 0 beside the ground"},
	}
	for _, tt := range tests {
		got, err := bspLines(t, tt.b, "ring", tt.spindle, nil)
		if err != nil || strings.Join(got, "|") != tt.want {
			t.Errorf("ring %s = %q, %v; want %q", tt.spindle, got, err, tt.want)
		}
	}
	// A walk off the tree is an error, as in every mode.
	var pe *PathError
	if _, err := bspLines(t, town, "ring", "19", nil); !errors.As(err, &pe) || pe.Digit != 9 {
		t.Errorf("ring off the tree: %v", err)
	}
}

func TestDirListsTheNodeAndEverythingBelowLayerByLayer(t *testing.T) {
	purpose := mustParse(t, purposeJSON)
	all := []string{"0.2 -1 Second is a branch +", "0.21 -2 Grandchild", "0.23 -2 Deep +", "0.234 -3 Deeper"}
	tests := []struct {
		spindle string
		point   any
		want    []string
	}{
		{"0.2", nil, all},
		{"0.2", "-3", all},
		{"0.2", -99, all},
		{"0.2", "-2", all[:3]},
		{"0.2", -1, all[:1]},
		{"0.1", nil, []string{"0.1 -1 First entry"}},
		{"0", -1, []string{"0 0 Purpose root +", "0.1 -1 First entry", "0.2 -1 Second is a branch +", "0.3 -1 Third"}},
	}
	for _, tt := range tests {
		got, err := bspLines(t, purpose, "dir", tt.spindle, tt.point)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("dir %s %v = %q, %v; want %q", tt.spindle, tt.point, got, err, tt.want)
		}
	}
	_, err := bspLines(t, purpose, "dir", "0.2", 0)
	if want := "path 0.2 is at pscale -1: dir lists it and what is below it, so the point must be -1 or lower, not 0"; err == nil || err.Error() != want {
		t.Errorf("dir above the node: %v, want %q", err, want)
	}
}

func TestDiscListsEveryNodeAtOnePscaleInAddressOrder(t *testing.T) {
	purpose := mustParse(t, purposeJSON)
	tests := []struct {
		point any
		want  string
	}{
		{0, "0 0 Purpose root +"},
		{"-1", "0.1 -1 First entry|0.2 -1 Second is a branch +|0.3 -1 Third"},
		{-2, "0.21 -2 Grandchild|0.23 -2 Deep +"},
		{-3, "0.234 -3 Deeper"},
		{-4, "note: no nodes at pscale -4: the deepest are at -3"},
		{-1 << 62, "note: no nodes at pscale -4611686018427387904: the deepest are at -3"},
	}
	for _, tt := range tests {
		got, err := bspLines(t, purpose, "", "", tt.point)
		if err != nil || strings.Join(got, "|") != tt.want {
			t.Errorf("disc %v = %q, %v; want %q", tt.point, got, err, tt.want)
		}
	}
	for _, p := range []int{1, 1 << 62} {
		if _, err := bspLines(t, purpose, "disc", "", p); err == nil || !strings.Contains(err.Error(), "above this block's top") {
			t.Errorf("disc %d: %v", p, err)
		}
	}
	empty := mustParse(t, `{"place":2,"tree":{}}`)
	if got, err := bspLines(t, empty, "disc", "", 0); err != nil || strings.Join(got, "|") != "note: the block has no nodes" {
		t.Errorf("empty block: %q, %v", got, err)
	}
}

func TestStarListsTheReferencesAtDigitZero(t *testing.T) {
	sun := mustParse(t, fixtureSun)
	tests := []struct{ spindle, want string }{
		{"6", "0 as commons|6.01 -2 town:1 -> town:1|6.02 -2 nowhere:1 -> nowhere:1|6.03 -2 8.7 -> 8.7"},
		{"8", "0 as voice|8.01 -2 9 -> 9|8.02 -2 not a reference"},
		{"7.1", "-1 whoever reads this is the reader it describes|note: 7.1 keeps no references: it has no hidden directory (a branch at its digit 0)"},
		{"0", "0 a block that teaches reading blocks|note: 0 keeps no references: it has no hidden directory (a branch at its digit 0)"},
	}
	for _, tt := range tests {
		got, err := bspLines(t, sun, "star", tt.spindle, nil)
		if err != nil || strings.Join(got, "|") != tt.want {
			t.Errorf("star %s = %q, %v; want %q", tt.spindle, got, err, tt.want)
		}
	}
	odd := mustParse(t, `{"place":1,"tree":{"0":{"_":"r","1":{"_":"a","0":"a leaf"},"2":{"_":"b","0":{"_":"dir","0":"own"}}}}}`)
	for spindle, want := range map[string]string{
		"0.1": "note: 0.1 keeps no references: its digit 0 is a leaf, not a directory",
		"0.2": "note: 0.2 keeps no references: its hidden directory has no entries at digits 1-9",
	} {
		got, err := bspLines(t, odd, "star", spindle, nil)
		if err != nil || got[len(got)-1] != want {
			t.Errorf("star %s = %q, %v; want the note %q", spindle, got, err, want)
		}
	}
}

func TestParseRefReadsAnAddressOrBlockColonAddress(t *testing.T) {
	tests := []struct {
		in   string
		want Ref
		ok   bool
	}{
		{"1.1", Ref{Address: "1.1"}, true},
		{" 0.12 ", Ref{Address: "0.12"}, true},
		{"history:0.3", Ref{Block: "history", Address: "0.3"}, true},
		{"history: 0.3", Ref{Block: "history", Address: "0.3"}, true},
		{"my block:0.3", Ref{}, false},
		{":0.3", Ref{}, false},
		{"history:", Ref{}, false},
		{"history", Ref{}, false},
		{"see 0.3", Ref{}, false},
		{"a:b:0.1", Ref{}, false},
		{"", Ref{}, false},
	}
	for _, tt := range tests {
		got, ok := ParseRef(tt.in)
		if ok != tt.ok || got != tt.want {
			t.Errorf("ParseRef(%q) = %+v, %v; want %+v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestResolveRefsReadsEachNodeNamedHereOrInAnotherBlock(t *testing.T) {
	sun, town := mustParse(t, fixtureSun), mustParse(t, fixtureTown)
	q, err := ParseQuery("", "6*", nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := BSP(sun, q)
	if err != nil {
		t.Fatal(err)
	}
	var asked []string
	ResolveRefs(&r, func(name string) (*Block, error) {
		asked = append(asked, name)
		switch name {
		case "":
			return sun, nil
		case "town":
			return town, nil
		}
		return nil, fmt.Errorf("block %q not found", name)
	})
	want := []Ref{
		{Block: "town", Address: "1", Text: "Ashby"},
		{Block: "nowhere", Address: "1", Error: `block "nowhere" not found`},
		{Address: "8.7", Error: "path 8.7: digit 7 not present (children: 0,1)"},
	}
	for i, e := range r.Entries {
		if e.Ref == nil || *e.Ref != want[i] {
			t.Errorf("entry %s ref = %+v, want %+v", e.Address, e.Ref, want[i])
		}
	}
	if !slices.Equal(asked, []string{"town", "nowhere", ""}) {
		t.Errorf("blocks loaded: %q", asked)
	}
	// What the tool answers: the reference and what it names, in JSON.
	js, err := json.Marshal(r.Entries[0])
	if err != nil || string(js) != `{"address":"6.01","pscale":-2,"text":"town:1","ref":{"block":"town","address":"1","text":"Ashby"}}` {
		t.Errorf("entry JSON: %s, %v", js, err)
	}
}
