package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/llmkernels/kernels/llm"
)

// maxDescription is the most characters of a tool's description offered
// to the model: a description goes out with every request, and a server
// must not be able to spend the caller's budget on it.
const maxDescription = 2048

// propertyKey is the API's rule for the keys of an input schema's
// top-level "properties".
var propertyKey = regexp.MustCompile(`^[a-zA-Z0-9_.-]{1,64}$`)

// CheckSchema says what the Anthropic API would refuse in a tool's
// input_schema, or nil: llm.CheckInputSchema's rules (a JSON object whose
// type is "object"), and three more the API enforces that a server's
// schema often breaks: no oneOf, allOf or anyOf at its top level,
// top-level property names of at most 64 letters, digits, _, . and -, and
// a valid JSON Schema (draft 2020-12).
func CheckSchema(schema json.RawMessage) error {
	if err := llm.CheckInputSchema(schema); err != nil {
		// Its text reads after "input_schema", as the API's does.
		return fmt.Errorf("input_schema%s", err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(schema, &top); err != nil {
		return fmt.Errorf("input_schema: %v", err)
	}
	for _, k := range []string{"oneOf", "allOf", "anyOf"} {
		if _, ok := top[k]; ok {
			return fmt.Errorf("input_schema does not support oneOf, allOf, or anyOf at the top level (it has %s)", k)
		}
	}
	if raw, ok := top["properties"]; ok {
		var props map[string]json.RawMessage
		if json.Unmarshal(raw, &props) == nil {
			for k := range props {
				if !propertyKey.MatchString(k) {
					return fmt.Errorf("input_schema.properties: property name %q should match %s", inert(k, false), propertyKey)
				}
			}
		}
	}
	meta, err := metaSchema()
	if err != nil {
		return err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return fmt.Errorf("input_schema: %v", err)
	}
	if err := meta.Validate(doc); err != nil {
		return fmt.Errorf("input_schema: JSON schema is invalid; it must match JSON Schema draft 2020-12: %s", firstCause(err))
	}
	return nil
}

// metaSchema is JSON Schema draft 2020-12's own schema, compiled once from
// the copy the validator embeds (no network).
var metaSchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	s, err := jsonschema.NewCompiler().Compile("https://json-schema.org/draft/2020-12/schema")
	if err != nil {
		return nil, fmt.Errorf("compile the JSON Schema meta-schema: %w", err)
	}
	return s, nil
})

// firstCause is the innermost, most specific reason a validation failed,
// on one line.
func firstCause(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return inert(err.Error(), false)
	}
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	where := "/" + strings.Join(ve.InstanceLocation, "/")
	return inert(fmt.Sprintf("at %s: %s", where, ve.ErrorKind.LocalizedString(message.NewPrinter(language.English))), false)
}

// offerName is the name a server's tool is offered under, NAME__tool, with
// every character of tool the API does not take in a name (MCP allows
// ".", and servers send "/") written as "_".
func offerName(server, tool string) string {
	return server + "__" + strings.Map(func(r rune) rune {
		if r < 0x80 && (r == '_' || r == '-' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9') {
			return r
		}
		return '_'
	}, tool)
}
