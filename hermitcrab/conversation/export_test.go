package conversation

import (
	"context"

	"github.com/llmkernels/kernels/hermitcrab/store"
	"github.com/llmkernels/kernels/llm"
	"github.com/llmkernels/kernels/pscale"
)

// What the package's tests reach inside a Caller.

// Store is the caller's store.
func (c *Caller) Store() *store.Store { return c.store }

// Catalogue is every client tool the caller can run, by name.
func (c *Caller) Catalogue() map[string]llm.ToolHandler { return c.catalogue(&callState{}) }

// CompressAuto is the compression auto-save asks for: a node another
// writer compressed meanwhile is left alone.
func (c *Caller) CompressAuto(ctx context.Context, name string, addr pscale.Address) (Compression, error) {
	return c.compress(ctx, name, addr, true)
}

// Continuable makes a conversation one the API takes (continuable).
var Continuable = continuable

// ServerTools are the server tools' declarations.
var ServerTools = serverTools

// ReadOnlyTools may be called by code execution.
var ReadOnlyTools = readOnlyTools
