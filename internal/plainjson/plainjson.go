// Package plainjson encodes JSON as encoding/json does, except that <, > and
// & are written as they are instead of as \u003c, \u003e and \u0026. The
// kernels' JSON carries JSX, prose and raw API blocks that must keep their
// exact bytes, and is read by programs and people, never pasted into HTML.
package plainjson

import (
	"bytes"
	"encoding/json"
)

// Marshal is json.Marshal without HTML escaping.
func Marshal(v any) ([]byte, error) {
	return MarshalIndent(v, "", "")
}

// MarshalIndent is json.MarshalIndent without HTML escaping; with prefix
// and indent both empty the output is compact, as Marshal's.
func MarshalIndent(v any, prefix, indent string) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent(prefix, indent)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// List is s, or an empty list for nil, so that a list with nothing in it
// is written [] and never null.
func List[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
