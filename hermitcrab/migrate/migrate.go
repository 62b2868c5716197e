// Package migrate reads the files `hermitcrab blocks import` takes and
// turns them into named pscale blocks, saying in notes every conversion it
// made and every key it skipped. It is pure: it reads the bytes it is
// given, writes nothing, and never changes the defaults it is passed.
//
// File recognises, in this order: a shell file, {"blocks": {NAME: BLOCK,
// …}}; a single block (an object with "tree", "place", "decimal" or
// "tuning"), named after the file; a browser localStorage dump (every value
// a string: hc:NAME keys hold G1 blocks, hcmem:PATH keys G0's memory
// files); a block map, {NAME: BLOCK, …}. Every block goes through
// pscale.Parse, so every shape a hermitcrab block has had is converted, and
// every name must pass store.ValidName (a bad name is an error, never a
// silent rename).
//
// G0 memory is migrated as the clean-build spec's "Migration from G0" says
// (g0.go): M-numbered files become history entries in numeric order,
// S-numbered ones and other notes stash entries, identity and naming files
// entries under constitution 0.5, each appended as its block's newest so a
// dump of any size imports whole. A key whose value cannot be read is
// skipped and named (Result.Unreadable); keys naming an API key are never
// imported. See docs/hermitcrab.md#import-and-migration.
package migrate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/llmkernels/kernels/hermitcrab/store"
	"github.com/llmkernels/kernels/pscale"
)

// Result is what a file holds, ready to store: blocks by name, and one note
// per conversion made or key skipped, in the order they happened.
type Result struct {
	Blocks map[string]*pscale.Block `json:"blocks"`
	Notes  []string                 `json:"notes"`
	// Unreadable lists the localStorage keys skipped because their value
	// is not what their prefix promises (a damaged block, a value that is
	// not a string); the notes say what was wrong with each.
	Unreadable []string `json:"unreadable,omitempty"`
}

func (r *Result) note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

// File reads one import file. filename is used for the single-block name
// and in messages; defaults are the embedded default blocks, used only when
// migrating G0 data.
func File(filename string, data []byte, defaults map[string]*pscale.Block) (*Result, error) {
	r, err := file(filename, data, defaults)
	if err != nil {
		return nil, fmt.Errorf("file %s: %w", filename, err)
	}
	return r, nil
}

func file(filename string, data []byte, defaults map[string]*pscale.Block) (*Result, error) {
	top, err := topObject(data)
	if err != nil {
		return nil, err
	}
	r := &Result{Blocks: map[string]*pscale.Block{}}
	switch {
	case isShellFile(top):
		err = r.shellFile(top)
	case isBlockShape(top):
		err = r.singleBlock(filename, data)
	case isLocalStorage(top):
		err = r.localStorage(top, defaults)
	case allOfKind(top, '{'):
		r.note("file kind: block map ({NAME: BLOCK, …}) with %d blocks", len(top))
		err = r.blockMap(top, "block %q")
	default:
		err = unknownShape(top)
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

const shapes = `want a shell file {"blocks": {NAME: BLOCK, …}}, a block map {NAME: BLOCK, …}, a single block with "tree", or a browser localStorage dump (JSON.stringify(localStorage): every value a string)`

func topObject(data []byte) (map[string]json.RawMessage, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, errors.New("file is empty: " + shapes)
	}
	if trimmed[0] != '{' {
		var v any
		if err := json.Unmarshal(trimmed, &v); err != nil {
			return nil, fmt.Errorf("not valid JSON (%v): %s", err, shapes)
		}
		return nil, fmt.Errorf("top level is %s, not an object: %s", kind(trimmed), shapes)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &top); err != nil {
		return nil, fmt.Errorf("not valid JSON (%v): %s", err, shapes)
	}
	if len(top) == 0 {
		return nil, errors.New("file is an empty object: nothing to import")
	}
	return top, nil
}

// isBlockShape says whether an object is one block rather than a map of
// blocks: it has one of the fields only a block has at its top.
func isBlockShape(obj map[string]json.RawMessage) bool {
	for _, k := range []string{"tree", "place", "decimal", "tuning"} {
		if _, ok := obj[k]; ok {
			return true
		}
	}
	return false
}

// isShellFile says whether obj is {"blocks": {NAME: BLOCK, …}, …}. A block
// map holding a block named "blocks" is not one: that value is a block.
func isShellFile(obj map[string]json.RawMessage) bool {
	raw, ok := obj["blocks"]
	if !ok || kind(raw) != "an object" || isBlockShape(obj) {
		return false
	}
	var inner map[string]json.RawMessage
	if err := json.Unmarshal(raw, &inner); err != nil {
		return false
	}
	return !isBlockShape(inner)
}

// isLocalStorage says whether obj is a localStorage dump: every value a
// string, or keys of the hermitcrabs (hc:, hcmem:), which no block name can
// be, with a damaged value among them.
func isLocalStorage(obj map[string]json.RawMessage) bool {
	if allOfKind(obj, '"') {
		return true
	}
	for k := range obj {
		if strings.HasPrefix(k, "hc:") || strings.HasPrefix(k, "hcmem:") {
			return true
		}
	}
	return false
}

func allOfKind(obj map[string]json.RawMessage, first byte) bool {
	for _, v := range obj {
		if v = bytes.TrimSpace(v); len(v) == 0 || v[0] != first {
			return false
		}
	}
	return true
}

func unknownShape(top map[string]json.RawMessage) error {
	var str, obj string
	for _, k := range slices.Sorted(maps.Keys(top)) {
		switch kd := kind(top[k]); kd {
		case "a string":
			str = k
		case "an object":
			obj = k
		default:
			return fmt.Errorf("key %q is %s: %s", k, kd, shapes)
		}
	}
	return fmt.Errorf("values mix strings (key %q) and objects (key %q): %s", str, obj, shapes)
}

func (r *Result) shellFile(top map[string]json.RawMessage) error {
	var blocks map[string]json.RawMessage
	if err := json.Unmarshal(top["blocks"], &blocks); err != nil {
		return fmt.Errorf(`"blocks": %w`, err)
	}
	r.note(`file kind: shell file ({"blocks": …}) with %d blocks`, len(blocks))
	for _, k := range slices.Sorted(maps.Keys(top)) {
		if k != "blocks" {
			r.note(`top-level field %q ignored: a shell file's blocks are under "blocks"`, k)
		}
	}
	return r.blockMap(blocks, `block %q under "blocks"`)
}

// blockMap adds every NAME: BLOCK of m; where formats the name for messages.
func (r *Result) blockMap(m map[string]json.RawMessage, where string) error {
	for _, name := range slices.Sorted(maps.Keys(m)) {
		if err := r.addBlock(name, m[name], fmt.Sprintf(where, name)); err != nil {
			return err
		}
	}
	return nil
}

func (r *Result) addBlock(name string, data []byte, where string) error {
	if err := store.ValidName(name); err != nil {
		return fmt.Errorf("%s: %w (rename it in the file)", where, err)
	}
	b, conv, err := pscale.Parse(data)
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	if conv != "" {
		r.note("block %q: %s", name, conv)
	}
	r.Blocks[name] = b
	return nil
}

func (r *Result) singleBlock(filename string, data []byte) error {
	base := filepath.Base(filename)
	name := strings.TrimSuffix(base, filepath.Ext(base))
	if err := store.ValidName(name); err != nil {
		return fmt.Errorf("a single block is named after its file, and %w: rename the file to NAME.json with NAME following that rule", err)
	}
	r.note("file kind: single block, named %q after the file", name)
	return r.addBlock(name, data, fmt.Sprintf("block %q", name))
}

// isSecretKey says whether a localStorage key names an API key.
func isSecretKey(key string) bool {
	k := strings.ToLower(key)
	return strings.Contains(k, "api_key") || strings.Contains(k, "api-key") || strings.Contains(k, "apikey")
}

func (r *Result) localStorage(top map[string]json.RawMessage, defaults map[string]*pscale.Block) error {
	r.note("file kind: browser localStorage dump with %d keys", len(top))
	var (
		g0 []memFile
		hc int
	)
	for _, key := range slices.Sorted(maps.Keys(top)) {
		if isSecretKey(key) {
			r.note("key %q skipped: it holds an API key, which is never imported (give hermitcrab the key through its provider settings instead)", key)
			continue
		}
		var val string
		if err := json.Unmarshal(top[key], &val); err != nil {
			r.unreadable(key, fmt.Errorf("its value is %s, not a string", kind(top[key])))
			continue
		}
		switch {
		case strings.HasPrefix(key, "hc:"):
			// One damaged block must not cost the others: it is skipped
			// and named, and the rest imports.
			if err := r.addBlock(strings.TrimPrefix(key, "hc:"), []byte(val), fmt.Sprintf("key %q", key)); err != nil {
				r.unreadable(key, err)
				continue
			}
			hc++
		case strings.HasPrefix(key, "hcmem:"):
			g0 = append(g0, memFile{key: key, path: strings.TrimPrefix(key, "hcmem:"), content: val})
		default:
			r.note("key %q skipped: neither a G1 block (hc:NAME) nor a G0 memory file (hcmem:PATH)", key)
		}
	}
	switch {
	case hc == 0 && len(g0) == 0 && len(r.Unreadable) > 0:
		return fmt.Errorf("no key of the localStorage dump could be read: %s", strings.Join(r.Unreadable, ", "))
	case hc > 0:
		for _, f := range g0 {
			r.note("key %q (G0 file %s) not migrated: this dump has G1 blocks (hc:*), so G1 already ran here and its blocks win", f.key, f.path)
		}
		return nil
	case len(g0) > 0:
		return r.migrateG0(g0, defaults)
	}
	return fmt.Errorf("the localStorage dump has no hc:NAME blocks and no hcmem: G0 memory files (keys: %s): nothing to import", strings.Join(slices.Sorted(maps.Keys(top)), ", "))
}

// unreadable skips a localStorage key whose value cannot be imported.
func (r *Result) unreadable(key string, err error) {
	r.Unreadable = append(r.Unreadable, key)
	r.note("key %q skipped: %v", key, err)
}

// kind names the JSON type of a raw value for messages.
func kind(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "empty"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}
