package conversation_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/llmkernels/kernels/hermitcrab/internal/kerneltest"
	"github.com/llmkernels/kernels/hermitcrab/kernel"
)

// blockTools are the tools that read and write blocks without the LLM.
var blockTools = []string{"block_read", "block_write", "block_create", "write_entry", "bsp", "resolve"}

// The tools' edge: any input the LLM sends the block tools is answered,
// with the block or with an error saying what is wrong, without
// panicking, and leaves a store whose every block still parses.
func FuzzBlockTools(f *testing.F) {
	for _, in := range []string{
		`{"name":"purpose","path":"0.1"}`, `{"name":"stash","path":0.12,"content":"x"}`, `{"name":"stash","path":"0..9.","content":"x"}`,
		`{"name":"stash","content":"an entry"}`, `{"name":"wake","spindle":"0.9.6","point":-2}`, `{"name":"wake","spindle":"0.7*"}`,
		`{"name":"wake","mode":"disc","point":"-1"}`, `{"name":"history","depth":"9"}`, `{"name":"new-one","pscale0":"A new block.","place":2}`,
		`{"name":"../etc","pscale0":"x"}`, `{"name":"stash","path":1.5e300}`, `not json`, `{"name":null}`,
	} {
		for i := range blockTools {
			f.Add(i, in)
		}
	}
	k := kerneltest.OpenIn(f, f.TempDir(), kernel.Options{MaxBlockBytes: 16 << 10})
	tools := k.Conversation().Catalogue()
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, which int, input string) {
		name := blockTools[(which%len(blockTools)+len(blockTools))%len(blockTools)]
		out, err := tools[name].Run(ctx, json.RawMessage(input))
		if err == nil && !out.IsError && strings.HasPrefix(name, "block_write") && !json.Valid([]byte(out.Content.Text)) {
			t.Fatalf("%s %s answered %q, not JSON", name, input, out.Content.Text)
		}
		list, err := k.Blocks().List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range list {
			if _, err := k.Blocks().Block(ctx, b.Name); err != nil {
				t.Fatalf("after %s %s, block %q: %v", name, input, b.Name, err)
			}
		}
	})
}
