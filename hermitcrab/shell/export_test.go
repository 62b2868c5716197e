package shell

import (
	"bytes"
	"maps"
	"slices"
)

// Raw returns a copy of default.json as embedded.
func Raw() []byte { return bytes.Clone(defaultJSON) }

// Names returns the names of the default blocks in sorted order, or nil if
// default.json cannot be read (Default then says why).
func Names() []string {
	f, err := load()
	if err != nil {
		return nil
	}
	return slices.Sorted(maps.Keys(f.Blocks))
}
