// Package shell is hermitcrab's default shell: the nine seed blocks a new
// instance wakes into (constitution, touchstone, capabilities, cook, wake,
// purpose, relationships, history, stash), written for this kernel from the
// G1 specs and embedded as default.json, {"blocks": {NAME: BLOCK, …}}, each
// block canonical ({"place": 1, "tree": {"0": …}}).
//
// The blocks are lean: each pscale 0 says in a sentence or two what its block
// is and what to do with it, and the detail sits deeper, where the LLM
// navigates with block_read and bsp. The wake block carries the prompt recipe
// of each tier at 0.9.1–0.9.3 and its invocation parameters at 0.9.4–0.9.6.
// The package's tests hold the compiled system prompts to their budgets
// (deep ≤ 1,700 estimated tokens, present ≤ 480, light ≤ 300).
//
// The kernel seeds these blocks into an empty store only. The touchstone, the
// clean-build spec's keystone that teaches how to read every block, the
// kernel also persists from here, and the LLM may edit the persisted copy,
// even to evolve the format: a persisted copy updated after
// TouchstoneUpdated wins over the embedded one, an older one gives way to it.
// Whoever changes the touchstone in default.json sets TouchstoneUpdated to
// the time of that change.
package shell

import (
	_ "embed"
	"encoding/json"
	"fmt"

	"github.com/llmkernels/kernels/pscale"
)

// TouchstoneUpdated is when the embedded touchstone last changed (RFC 3339).
// A persisted touchstone updated after this time is newer and wins.
const TouchstoneUpdated = "2026-11-28T20:42:00Z"

//go:embed default.json
var defaultJSON []byte

// file is the shape of default.json.
type file struct {
	Blocks map[string]json.RawMessage `json:"blocks"`
}

// Default returns the default blocks by name, freshly parsed on every call,
// so a caller may change them without touching anyone else's copy.
func Default() (map[string]*pscale.Block, error) {
	f, err := load()
	if err != nil {
		return nil, err
	}
	blocks := make(map[string]*pscale.Block, len(f.Blocks))
	for name, raw := range f.Blocks {
		b, err := parseBlock(name, raw)
		if err != nil {
			return nil, err
		}
		blocks[name] = b
	}
	return blocks, nil
}

// Touchstone returns the embedded touchstone block, freshly parsed: the same
// block Default holds under "touchstone".
func Touchstone() (*pscale.Block, error) {
	f, err := load()
	if err != nil {
		return nil, err
	}
	raw, ok := f.Blocks["touchstone"]
	if !ok {
		return nil, fmt.Errorf("default shell has no touchstone block; add it to hermitcrab/shell/default.json")
	}
	return parseBlock("touchstone", raw)
}

func load() (file, error) {
	var f file
	if err := json.Unmarshal(defaultJSON, &f); err != nil {
		return file{}, fmt.Errorf("default shell: %w; fix hermitcrab/shell/default.json", err)
	}
	if len(f.Blocks) == 0 {
		return file{}, fmt.Errorf(`default shell holds no blocks; hermitcrab/shell/default.json must be {"blocks": {NAME: BLOCK, …}}`)
	}
	return f, nil
}

func parseBlock(name string, raw json.RawMessage) (*pscale.Block, error) {
	b, _, err := pscale.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("default shell block %q: %w; fix hermitcrab/shell/default.json", name, err)
	}
	return b, nil
}
