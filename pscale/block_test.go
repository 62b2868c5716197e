package pscale

import (
	"encoding/json"
	"strings"
	"testing"
)

func mustParse(t testing.TB, js string) *Block {
	t.Helper()
	b, _, err := Parse([]byte(js))
	if err != nil {
		t.Fatalf("Parse(%s): %v", js, err)
	}
	return b
}

func mustMarshal(t testing.TB, b *Block) string {
	t.Helper()
	out, err := json.Marshal(b)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	return string(out)
}

func TestParseCanonicalBlockNeedsNoConversion(t *testing.T) {
	in := `{"place":1,"tree":{"0":{"_":"root","1":"a","2":{"_":"b","1":"c"}}}}`
	b, conv, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if conv != "" {
		t.Errorf("conversion = %q, want none", conv)
	}
	if got := mustMarshal(t, b); got != in {
		t.Errorf("round trip:\n got %s\nwant %s", got, in)
	}
}

func TestParseConvertsOtherShapesAndSaysHow(t *testing.T) {
	tests := []struct {
		name, in, want, conv string
	}{
		{"decimal is place",
			`{"decimal":2,"tree":{"2":"x"}}`,
			`{"place":2,"tree":{"2":"x"}}`, "decimal 2 read as place"},
		{"decimal agreeing with place is dropped",
			`{"place":1,"decimal":1,"tree":{"0":"x"}}`,
			`{"place":1,"tree":{"0":"x"}}`, "decimal 1 dropped"},
		{"decimal 0 rendition moves root under 0",
			`{"decimal":0,"tree":{"_":"caps","1":"llm","0":"older"}}`,
			`{"place":1,"tree":{"0":{"_":"caps","0":"older","1":"llm"}}}`, "rendition"},
		{"place 0 is a rendition too",
			`{"place":0,"tree":"just a root"}`,
			`{"place":1,"tree":{"0":"just a root"}}`, "rendition"},
		{"tuning 88 gives place 3 and keeps the tuning",
			`{"tuning":"88","tree":{"_":"history","1":"a"}}`,
			`{"place":3,"tuning":"88","tree":{"0":{"_":"history","1":"a"}}}`, "place 3"},
		{"tuning 0.5 gives place 1",
			`{"tuning":0.5,"tree":{"_":"r"}}`,
			`{"place":1,"tuning":0.5,"tree":{"0":{"_":"r"}}}`, "place 1"},
		{"no place with a 0 key is place 1",
			`{"tree":{"0":{"_":"r"}}}`,
			`{"place":1,"tree":{"0":{"_":"r"}}}`, `tree holds "0"`},
		{"no place rooted at _ is wrapped",
			`{"tree":{"_":"r","1":"a"}}`,
			`{"place":1,"tree":{"0":{"_":"r","1":"a"}}}`, "root moved"},
		{"bare tree rooted at _",
			`{"_":"r","2":"b","note":"kept"}`,
			`{"place":1,"tree":{"0":{"_":"r","2":"b","note":"kept"}}}`, "bare tree"},
		{"bare tree holding 0",
			`{"0":{"_":"r"}}`,
			`{"place":1,"tree":{"0":{"_":"r"}}}`, "bare tree"},
		{"place given as a string",
			`{"place":"2","tree":{"1":"x"}}`,
			`{"place":2,"tree":{"1":"x"}}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, conv, err := Parse([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if got := mustMarshal(t, b); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			if tt.conv == "" && conv != "" || !strings.Contains(conv, tt.conv) {
				t.Errorf("conversion = %q, want it to mention %q", conv, tt.conv)
			}
			// Converted output is canonical: parsing it again converts nothing.
			if _, again, err := Parse([]byte(mustMarshal(t, b))); err != nil || again != "" {
				t.Errorf("reparse: conversion %q, err %v", again, err)
			}
		})
	}
}

func TestRenditionAddressesWalkTheSameAfterConversion(t *testing.T) {
	b := mustParse(t, `{"decimal":0,"tree":{"_":"caps","2":{"_":"blocks","1":"block_read"}}}`)
	a := mustAddr(t, "0.21")
	r, err := BSP(b, Query{Address: &a})
	if err != nil {
		t.Fatal(err)
	}
	want := []Step{{0, "0", "caps"}, {-1, "2", "blocks"}, {-2, "1", "block_read"}}
	if !equalSteps(r.Nodes, want) {
		t.Errorf("got %+v, want %+v", r.Nodes, want)
	}
}

func TestTuningConversionKeepsPscales(t *testing.T) {
	// Upstream: tuning "8" puts the root at pscale 1 and its children at 0.
	b := mustParse(t, `{"tuning":"8","tree":{"_":"nine entries","3":"third entry"}}`)
	a := mustAddr(t, "0.3") // upstream address 3
	r, err := BSP(b, Query{Address: &a})
	if err != nil {
		t.Fatal(err)
	}
	want := []Step{{1, "0", "nine entries"}, {0, "3", "third entry"}}
	if !equalSteps(r.Nodes, want) {
		t.Errorf("got %+v, want %+v", r.Nodes, want)
	}
}

func TestParsePreservesForkSignAndUnknownFieldsOnRoundTrip(t *testing.T) {
	in := `{"place":2,"fork":"74.45","sign":-1,"tree":{"1":"x"},"zz":{"b":[1,2.50],"a":null}}`
	b := mustParse(t, in)
	want := `{"place":2,"fork":"74.45","sign":-1,"zz":{"a":null,"b":[1,2.50]},"tree":{"1":"x"}}`
	if got := mustMarshal(t, b); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if string(b.Extra["sign"]) != "-1" {
		t.Errorf("Extra[sign] = %s", b.Extra["sign"])
	}
}

func TestParsePreservesUnknownKeysInsideTreeNodes(t *testing.T) {
	in := `{"place":1,"tree":{"0":{"_":"concerns","1":{"_":"user","last":1700000000,"stimulus":"user"},"10":"not a digit key"}}}`
	b := mustParse(t, in)
	want := `{"place":1,"tree":{"0":{"_":"concerns","1":{"_":"user","last":1700000000,"stimulus":"user"},"10":"not a digit key"}}}`
	if got := mustMarshal(t, b); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestParseKeepsUnderscoreAbsentOrEmptyAsGiven(t *testing.T) {
	for _, in := range []string{
		`{"place":1,"tree":{"0":{"1":"a"}}}`,
		`{"place":1,"tree":{"0":{"_":"","1":"a"}}}`,
	} {
		if got := mustMarshal(t, mustParse(t, in)); got != in {
			t.Errorf("got  %s\nwant %s", got, in)
		}
	}
}

// Pitfall: JSON object key order; digit keys go in numeric order, "_" first.
func TestMarshalWritesUnderscoreFirstThenDigitsInOrder(t *testing.T) {
	in := `{"tree":{"0":{"x":1,"9":"nine","3":"three","_":"root","1":{"2":"b","_":"one","0":"zero"}}},"place":1}`
	want := `{"place":1,"tree":{"0":{"_":"root","1":{"_":"one","0":"zero","2":"b"},"3":"three","9":"nine","x":1}}}`
	if got := mustMarshal(t, mustParse(t, in)); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestMarshalRejectsPlaceBelowOne(t *testing.T) {
	_, err := json.Marshal(&Block{Place: 0, Tree: &Node{}})
	if err == nil || !strings.Contains(err.Error(), "place 0") {
		t.Errorf("err = %v, want a place error", err)
	}
}

func TestParseRejectsMalformedBlocks(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"place":1,"tree":`, "not valid JSON"},
		{`{"place":1,"tree":{}} {}`, "more data"},
		{`[1,2]`, "an array"},
		{`"text"`, "a string"},
		{`{"place":1,"decimal":2,"tree":{}}`, "place 1 and decimal 2"},
		{`{"place":-1,"tree":{}}`, "place -1"},
		{`{"place":1.5,"tree":{}}`, "place 1.5"},
		{`{"decimal":"two","tree":{}}`, `decimal "two"`},
		{`{"place":1,"tree":"text"}`, "tree is a string"},
		{`{"place":1,"tree":null}`, "tree is null"},
		{`{"place":1,"tree":{"0":{"_":5}}}`, `tree node 0: "_" is a number`},
		{`{"place":1,"tree":{"0":{"2":[1]}}}`, "tree node 0.2 is an array"},
		{`{"place":1}`, `no "tree" field`},
		{`{"name":"x","text":"y"}`, "keys: name, text"},
		{`{"tuning":true,"tree":{}}`, "tuning is a boolean"},
		{`{"tuning":"8x.1","tree":{}}`, `'x'`},
	}
	for _, tt := range tests {
		_, _, err := Parse([]byte(tt.in))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%s) error = %v, want it to contain %q", tt.in, err, tt.want)
		}
	}
}

func TestBlockUnmarshalJSONConvertsLikeParse(t *testing.T) {
	var seed map[string]*Block
	if err := json.Unmarshal([]byte(`{"caps":{"decimal":0,"tree":{"_":"c"}}}`), &seed); err != nil {
		t.Fatal(err)
	}
	if got := mustMarshal(t, seed["caps"]); got != `{"place":1,"tree":{"0":{"_":"c"}}}` {
		t.Errorf("got %s", got)
	}
}
