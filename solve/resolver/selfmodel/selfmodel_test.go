package selfmodel

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/llmkernels/kernels/solve/loop"
	"github.com/llmkernels/kernels/solve/record"
	"github.com/llmkernels/kernels/solve/store"
)

func TestCandidatesAreTheBootResolversAndThoseProvidingACapability(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "kernel.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := loop.Boot(ctx, st); err != nil {
		t.Fatal(err)
	}
	if err := st.UpsertResolver(ctx, record.Resolver{ID: "tool-csv-1", Label: "csv", Type: "digital", Capabilities: []string{"csv_to_json"}, BuiltBy: "system"}); err != nil {
		t.Fatal(err)
	}
	if err := st.UpsertResolver(ctx, record.Resolver{ID: "tool-pdf-2", Label: "pdf", Type: "digital", Capabilities: []string{"pdf"}, BuiltBy: "system"}); err != nil {
		t.Fatal(err)
	}
	r := New(st)
	out, err := r.Resolve(ctx, &loop.Call{Op: loop.OpSelfModel, Params: map[string]any{"capabilities": []string{"csv_to_json"}}})
	if err != nil {
		t.Fatal(err)
	}
	var cands []loop.ResolverView
	if err := json.Unmarshal(out.Answer, &cands); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range cands {
		ids = append(ids, c.ID)
	}
	if len(ids) != 3 || ids[0] != loop.ClaudeCodeID || ids[1] != loop.CodexToolsID || ids[2] != "tool-csv-1" {
		t.Errorf("candidates %v: the boot resolvers (not self-model-0) and the csv tool", ids)
	}
	if _, err := r.Resolve(ctx, &loop.Call{Op: loop.OpResolve}); err == nil {
		t.Error("self-model-0 accepted another operation")
	}
}
