package conversation_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/llmkernels/kernels/hermitcrab/internal/kerneltest"
	"github.com/llmkernels/kernels/hermitcrab/kernel"
	"github.com/llmkernels/kernels/pscale"
)

// bspQuery is the query of a spindle, or with a point of a point.
func bspQuery(t testing.TB, spindle string, point ...int) pscale.Query {
	t.Helper()
	var p any
	if len(point) > 0 {
		p = point[0]
	}
	q, err := pscale.ParseQuery("", spindle, p)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// bspTool runs the bsp tool and decodes its answer; an error answer is
// returned as the error.
func bspTool(t *testing.T, k *kernel.Kernel, input string) (pscale.Result, error) {
	t.Helper()
	out := runTool(t, k, "bsp", input)
	if out.IsError {
		return pscale.Result{}, errors.New(out.Content.Text)
	}
	var r pscale.Result
	if err := json.Unmarshal([]byte(out.Content.Text), &r); err != nil {
		t.Fatalf("bsp %s answered %q: %v", input, out.Content.Text, err)
	}
	return r, nil
}

func addresses(es []pscale.Entry) string {
	var s []string
	for _, e := range es {
		s = append(s, e.Address)
	}
	return strings.Join(s, ",")
}

func TestTheBSPToolTakesEveryMode(t *testing.T) {
	k, _ := kerneltest.New(t, `{"responses":[]}`)
	tests := []struct{ input, mode, want string }{
		{`{"name":"wake","spindle":"0.9.2","mode":"ring"}`, "ring", "0.91,0.93,0.94,0.95,0.96"},
		{`{"name":"wake","spindle":"0.9.4","mode":"Dir"}`, "dir", "0.94,0.941,0.942,0.943,0.944"},
		{`{"name":"wake","spindle":"0.9","mode":"dir","point":"-1"}`, "dir", "0.9"},
		{`{"name":"wake","point":-1}`, "disc", "0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9"},
		{`{"name":"wake","mode":"disc","point":"-1"}`, "disc", "0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9"},
		{`{"name":"wake","spindle":"0.9.6"}`, "spindle", ""},
	}
	for _, tt := range tests {
		r, err := bspTool(t, k, tt.input)
		if err != nil || string(r.Mode) != tt.mode || addresses(r.Entries) != tt.want {
			t.Errorf("bsp %s = %s %q, %v; want %s %q", tt.input, r.Mode, addresses(r.Entries), err, tt.mode, tt.want)
		}
	}
	for input, want := range map[string]string{
		`{"name":"wake","spindle":"0.9","mode":"tree"}`:          `mode "tree": want one of block, spindle, point, ring, dir, disc, star`,
		`{"name":"wake","mode":"ring"}`:                          "ring mode needs a spindle",
		`{"name":"wake","spindle":"0.9","mode":"disc"}`:          "disc mode needs a point",
		`{"name":"wake","spindle":"0.9","point":1,"mode":"dir"}`: "dir lists it and what is below it",
		`{"name":"wake","spindle":"0.7*1"}`:                      "spindle 0.7.0.1",
		`{"name":"nosuch","point":0}`:                            "nosuch",
	} {
		if _, err := bspTool(t, k, input); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("bsp %s: %v, want an error containing %q", input, err, want)
		}
	}
	var def struct {
		Properties map[string]struct {
			Enum []string `json:"enum"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(k.Conversation().Catalogue()["bsp"].Tool.InputSchema, &def); err != nil || strings.Join(def.Properties["mode"].Enum, ",") != "block,spindle,point,ring,dir,disc,star" {
		t.Errorf("bsp schema's modes: %+v, %v", def.Properties["mode"], err)
	}
}

// Star reads the references at a node's digit 0 and what each names, in
// the same block or another; one that names nothing says why.
func TestTheBSPToolsStarReadsTheNodesItsReferencesName(t *testing.T) {
	k, _ := kerneltest.New(t, `{"responses":[]}`)
	ctx := context.Background()
	for path, text := range map[string]string{
		"0.1": "a thread to follow", "0.1.0.1": "purpose:0", "0.1.0.2": "0", "0.1.0.3": "nosuch:0", "0.1.0.4": "0.7", "0.1.0.5": "a plain note",
	} {
		if _, err := k.Blocks().WriteAt(ctx, "stash", kerneltest.At(t, path), text); err != nil {
			t.Fatal(err)
		}
	}
	purpose, err := k.Blocks().ReadNode(ctx, "purpose", kerneltest.At(t, "0"))
	if err != nil {
		t.Fatal(err)
	}
	stash, err := k.Blocks().ReadNode(ctx, "stash", kerneltest.At(t, "0"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := bspTool(t, k, `{"name":"stash","spindle":"0.1*"}`)
	if err != nil {
		t.Fatal(err)
	}
	if r.Mode != pscale.ModeStar || r.Point == nil || r.Point.Text != "a thread to follow" || addresses(r.Entries) != "0.101,0.102,0.103,0.104,0.105" {
		t.Fatalf("star: %+v", r)
	}
	want := []*pscale.Ref{
		{Block: "purpose", Address: "0", Text: purpose.Content},
		{Address: "0", Text: stash.Content},
		{Block: "nosuch", Address: "0", Error: `block "nosuch"`},
		{Address: "0.7", Error: "path 0.7: digit 7 not present (children: 1)"},
		nil,
	}
	for i, e := range r.Entries {
		got, w := e.Ref, want[i]
		switch {
		case (got == nil) != (w == nil):
			t.Errorf("entry %s: ref %+v, want %+v", e.Address, got, w)
		case got == nil:
		case got.Block != w.Block || got.Address != w.Address || got.Text != w.Text || !strings.Contains(got.Error, w.Error) || (w.Error == "") != (got.Error == ""):
			t.Errorf("entry %s: ref %+v, want %+v", e.Address, *got, *w)
		}
	}
}
